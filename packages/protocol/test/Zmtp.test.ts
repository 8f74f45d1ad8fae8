/**
 * The ZMTP codec on its own: what it writes is what RFC 23/37 say, any chunking of a valid byte
 * stream gives the same greeting, commands and messages, and bad input is one refusal by reason,
 * never a throw or a hang. (Against libzmq itself: the client's `Zmtp.interop.test.ts`.)
 */
import { describe, expect, it } from "@effect/vitest"
import * as fc from "fast-check"
import { Zmtp } from "../src/index.ts"

interface Seen {
  readonly greetings: Array<Zmtp.PeerGreeting>
  readonly commands: Array<{ readonly name: string; readonly data: Array<number> }>
  readonly messages: Array<Array<Array<number>>>
  readonly refusals: Array<Zmtp.Refusal>
}

const parser = (maxFrameBytes = 1 << 20) => {
  const seen: Seen = { greetings: [], commands: [], messages: [], refusals: [] }
  const parser = new Zmtp.Parser({
    maxFrameBytes,
    greeting: (peer) => seen.greetings.push(peer),
    command: (command) => seen.commands.push({ name: command.name, data: [...command.data] }),
    message: (frames) => seen.messages.push(frames.map((frame) => [...frame])),
    refused: (refusal) => seen.refusals.push(refusal)
  })
  return { parser, seen }
}

const concat = (parts: ReadonlyArray<Uint8Array>): Uint8Array => {
  const out = new Uint8Array(parts.reduce((n, part) => n + part.length, 0))
  let at = 0
  for (const part of parts) {
    out.set(part, at)
    at += part.length
  }
  return out
}

/** `bytes` cut at `cuts` (positions, any order, duplicates allowed). */
const chunked = (bytes: Uint8Array, cuts: ReadonlyArray<number>): Array<Uint8Array> => {
  const points = [...new Set(cuts.map((cut) => cut % (bytes.length + 1)))].sort((a, b) => a - b)
  const out: Array<Uint8Array> = []
  let from = 0
  for (const point of [...points, bytes.length]) {
    out.push(bytes.subarray(from, point))
    from = point
  }
  return out
}

const frame = fc.oneof(
  { weight: 4, arbitrary: fc.uint8Array({ maxLength: 40 }) },
  { weight: 1, arbitrary: fc.uint8Array({ minLength: 250, maxLength: 700 }) }
)
const item = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant("message" as const), frames: fc.array(frame, { minLength: 1, maxLength: 4 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("ping" as const), data: fc.uint8Array({ maxLength: 18 }) }) }
)

describe("Zmtp", () => {
  it("writes the greeting RFC 23 and RFC 37 give: signature, version 3.1, NULL, as-server, filler", () => {
    const bytes = Zmtp.greeting(true)
    expect(bytes.length).toBe(64)
    expect([bytes[0], bytes[9], bytes[10], bytes[11]]).toEqual([0xff, 0x7f, 3, 1])
    expect(new TextDecoder().decode(bytes.subarray(12, 16))).toBe("NULL")
    expect([...bytes.subarray(16, 32)].every((b) => b === 0)).toBe(true)
    expect(bytes[32]).toBe(1)
    expect(Zmtp.greeting(false)[32]).toBe(0)
    expect([...bytes.subarray(33)].every((b) => b === 0)).toBe(true)
  })

  it("writes short and long frames, MORE on all but the last, and READY's properties", () => {
    expect([...Zmtp.message([Uint8Array.of(7), new Uint8Array(0)])]).toEqual([0x01, 1, 7, 0x00, 0])
    const long = Zmtp.message([new Uint8Array(256)])
    expect([...long.subarray(0, 9)]).toEqual([0x02, 0, 0, 0, 0, 0, 0, 1, 0])
    expect(long.length).toBe(9 + 256)
    const ready = Zmtp.ready({ "Socket-Type": "DEALER", Identity: "" })
    expect([...ready.subarray(0, 2)]).toEqual([0x04, ready.length - 2])
    const { parser: p, seen } = parser()
    p.push(Zmtp.greeting(false))
    p.push(ready)
    expect(seen.commands.map((c) => c.name)).toEqual(["READY"])
    const properties = Zmtp.readyProperties(Uint8Array.from(seen.commands[0]!.data))
    expect(properties === undefined ? undefined : Object.fromEntries([...properties].map(([k, v]) => [k, new TextDecoder().decode(v)])))
      .toEqual({ "Socket-Type": "DEALER", Identity: "" })
    expect(Zmtp.readyProperties(Uint8Array.of(11, 0x41))).toBeUndefined()
  })

  it("reads addresses, a READY's socket type, and answers a PING with its context", () => {
    expect(Zmtp.endpointOf("tcp://127.0.0.1:5555")).toEqual({ host: "127.0.0.1", port: 5555 })
    expect(Zmtp.endpointOf("tcp://[::1]:5555")).toEqual({ host: "::1", port: 5555 })
    expect(Zmtp.endpointOf("ipc:///tmp/c.sock")).toEqual({ path: "/tmp/c.sock" })
    expect(Zmtp.endpointOf("ipc://@abstract")).toEqual({ path: "\0abstract" })
    expect(Zmtp.endpointOf("inproc://x")).toBeUndefined()
    expect(Zmtp.endpointOf("tcp://nohost")).toBeUndefined()
    const { parser: p, seen } = parser()
    p.push(Zmtp.greeting(false))
    p.push(Zmtp.ready({ Identity: "i", "Socket-Type": "DEALER" }))
    p.push(Zmtp.ready({ Identity: "i" }))
    p.push(Zmtp.pongFor(Uint8Array.of(0, 10, 7, 8)))
    expect(Zmtp.socketTypeOf(Uint8Array.from(seen.commands[0]!.data))).toBe("DEALER")
    expect(Zmtp.socketTypeOf(Uint8Array.from(seen.commands[1]!.data))).toBeUndefined()
    expect(seen.commands[2]).toEqual({ name: "PONG", data: [7, 8] })
  })

  it("any chunking of a valid stream gives the same greeting, commands and messages", () => {
    fc.assert(
      fc.property(fc.array(item, { maxLength: 12 }), fc.array(fc.nat(), { maxLength: 20 }), fc.boolean(), (items, cuts, asServer) => {
        const parts: Array<Uint8Array> = [Zmtp.greeting(asServer), Zmtp.ready({ "Socket-Type": "ROUTER" })]
        for (const it of items) parts.push(it.kind === "message" ? Zmtp.message(it.frames) : Zmtp.command("PING", it.data))
        const bytes = concat(parts)
        const { parser: p, seen } = parser()
        for (const chunk of chunked(bytes, cuts)) p.push(chunk)
        expect(seen.refusals).toEqual([])
        expect(seen.greetings).toEqual([{ major: 3, minor: 1, mechanism: "NULL", asServer }])
        expect(seen.commands.map((c) => c.name)).toEqual(["READY", ...items.filter((i) => i.kind === "ping").map(() => "PING")])
        expect(seen.commands.slice(1).map((c) => c.data)).toEqual(items.flatMap((i) => (i.kind === "ping" ? [[...i.data]] : [])))
        expect(seen.messages).toEqual(items.flatMap((i) => (i.kind === "message" ? [i.frames.map((f) => [...f])] : [])))
      }),
      { numRuns: 300 }
    )
  })

  it("random bytes, from the start or after a greeting, give at most one refusal and never a throw", () => {
    fc.assert(
      fc.property(fc.boolean(), fc.uint8Array({ maxLength: 300 }), fc.array(fc.nat(), { maxLength: 8 }), (greeted, noise, cuts) => {
        const { parser: p, seen } = parser(200)
        if (greeted) p.push(Zmtp.greeting(false))
        for (const chunk of chunked(noise, cuts)) expect(() => p.push(chunk)).not.toThrow()
        expect(seen.refusals.length).toBeLessThanOrEqual(1)
        // After a refusal nothing more comes out.
        if (seen.refusals.length === 1) {
          const before = seen.messages.length + seen.commands.length
          p.push(Zmtp.message([Uint8Array.of(1)]))
          expect(seen.messages.length + seen.commands.length).toBe(before)
          expect(p.refused).toBe(true)
        }
      }),
      { numRuns: 500 }
    )
  })

  const refusalOf = (bytes: ReadonlyArray<Uint8Array>, maxFrameBytes?: number): string | undefined => {
    const { parser: p, seen } = parser(maxFrameBytes)
    for (const chunk of bytes) p.push(chunk)
    return seen.refusals[0]?.reason
  }

  it("refuses, by reason: a peer that is not ZMTP 3, another mechanism, reserved flags, a long frame, a malformed command", () => {
    const greeting = Zmtp.greeting(false)
    const with_ = (at: number, value: number) => {
      const copy = Uint8Array.from(greeting)
      copy[at] = value
      return copy
    }
    // ZMTP 1.0 (a length where the signature's 0xff goes; or byte 10 without its low bit).
    expect(refusalOf([Uint8Array.of(0x05)])).toBe("signature")
    expect(refusalOf([with_(9, 0x00)])).toBe("signature")
    // ZMTP 2.x: refused from its version byte, without waiting for the rest.
    expect(refusalOf([with_(10, 1).subarray(0, 11)])).toBe("version")
    const curve = Uint8Array.from(greeting)
    curve.set(new TextEncoder().encode("CURVE"), 12)
    expect(refusalOf([curve])).toBe("mechanism")
    expect(refusalOf([greeting, Uint8Array.of(0x08, 0)])).toBe("reserved-flags")
    // Refused from the header: the body is never waited for.
    expect(refusalOf([greeting, Uint8Array.of(0x02, 0, 0, 0, 0, 0, 0x10, 0, 0)], 1024)).toBe("frame-too-large")
    // Lengths whose high 32 bits are set (read as two halves): 2^32 and 2^64 - 1.
    expect(refusalOf([greeting, Uint8Array.of(0x02, 0, 0, 0, 1, 0, 0, 0, 0)], 1024)).toBe("frame-too-large")
    expect(refusalOf([greeting, Uint8Array.of(0x02, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)], 1024)).toBe("frame-too-large")
    expect(refusalOf([greeting, Uint8Array.of(0x00, 200)], 100)).toBe("frame-too-large")
    expect(refusalOf([greeting, Uint8Array.of(0x04, 0)])).toBe("malformed-command")
    expect(refusalOf([greeting, Uint8Array.of(0x04, 2, 5, 0x41)])).toBe("malformed-command")
    expect(refusalOf([greeting, Uint8Array.of(0x05, 1, 0)])).toBe("malformed-command")
  })

  it("takes a command between the frames of a message as a command, as libzmq does, and the message goes on", () => {
    const { parser: p, seen } = parser()
    const ping = Zmtp.command("PING", Uint8Array.of(0, 10))
    p.push(concat([Zmtp.greeting(false), Uint8Array.of(0x01, 1, 9), ping, Uint8Array.of(0x00, 2, 7, 8)]))
    expect(seen.refusals).toEqual([])
    expect(seen.commands).toEqual([{ name: "PING", data: [0, 10] }])
    expect(seen.messages).toEqual([[[9], [7, 8]]])
  })

  it("waits for the rest of a greeting or a frame, and hands out nothing half-read", () => {
    const { parser: p, seen } = parser()
    const bytes = concat([Zmtp.greeting(false), Zmtp.message([new Uint8Array(1000).fill(3), Uint8Array.of(1)])])
    p.push(bytes.subarray(0, 63))
    expect(seen.greetings).toEqual([])
    p.push(bytes.subarray(63, 64 + 5))
    expect(seen.greetings.length).toBe(1)
    p.push(bytes.subarray(64 + 5, bytes.length - 1))
    expect(seen.messages).toEqual([])
    p.push(bytes.subarray(bytes.length - 1))
    expect(seen.messages.map((m) => m.map((f) => f.length))).toEqual([[1000, 1]])
    expect(seen.refusals).toEqual([])
  })
})
