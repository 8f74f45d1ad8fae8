/**
 * The in-memory sockets keep the ZeroMQ behaviour the peers rely on: identity-prefixed messages
 * at the router, routing by identity, `EHOSTUNREACH` for a peer that is not there, queueing
 * before a connection, connection events before the connection's messages, reconnection when a
 * router is bound again, and frames copied on send.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { MemorySocket } from "../src/index.ts"

const text = (frames: ReadonlyArray<Uint8Array>) => frames.map((f) => Buffer.from(f).toString())
const bytes = (...parts: Array<string>) => parts.map((p) => Buffer.from(p))
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve))

describe("MemorySocket", () => {
  it.effect("a router receives each message with the sender's identity and routes replies by it", () =>
    Effect.promise(async () => {
      const network = new MemorySocket.Network()
      const router = network.bind("inproc://c")
      const a = network.connect("inproc://c", { routingId: "a" })
      const b = network.connect("inproc://c", { routingId: "b" })
      await a.send(bytes("from", "a"))
      await b.send(bytes("from b"))
      expect(text(await router.receive())).toEqual(["a", "from", "a"])
      expect(text(await router.receive())).toEqual(["b", "from b"])
      await router.send(bytes("b", "to b"))
      await router.send(bytes("a", "to a"))
      expect(text(await a.receive())).toEqual(["to a"])
      expect(text(await b.receive())).toEqual(["to b"])
      await expect(router.send(bytes("nobody", "x"))).rejects.toMatchObject({ code: "EHOSTUNREACH" })
    }))

  it.effect("a dealer queues until a router is bound, and both sides hear of the connection before its messages", () =>
    Effect.promise(async () => {
      const network = new MemorySocket.Network()
      const dealer = network.connect("inproc://later")
      const heard: Array<string> = []
      dealer.onLink((event) => heard.push(`dealer ${event}`))
      await dealer.send(bytes("early"))
      await nextTurn()
      expect(dealer.connected).toBe(false)
      const router = network.bind("inproc://later")
      router.onPeer((event, identity) => heard.push(`router ${event} ${identity.length}`))
      expect(heard).toEqual([])
      const [identity, frame] = await router.receive()
      expect(heard).toEqual(["router up 5", "dealer up"])
      expect(text([frame!])).toEqual(["early"])
      // ZeroMQ's own identities: five bytes, the first zero.
      expect(identity![0]).toBe(0)
    }))

  it.effect("a router that closes drops its dealers, which connect to the next one bound at the address", () =>
    Effect.promise(async () => {
      const network = new MemorySocket.Network()
      const first = network.bind("inproc://c")
      const dealer = network.connect("inproc://c", { routingId: "d" })
      const heard: Array<string> = []
      dealer.onLink((event) => heard.push(event))
      await dealer.send(bytes("one"))
      expect(text(await first.receive())).toEqual(["d", "one"])
      const pending = first.receive()
      first.close()
      await expect(pending).rejects.toMatchObject({ code: "EBADF" })
      await nextTurn()
      expect(heard).toEqual(["up", "down"])
      expect(() => network.bind("inproc://elsewhere")).not.toThrow()
      const second = network.bind("inproc://c")
      expect(() => network.bind("inproc://c")).toThrow(expect.objectContaining({ code: "EADDRINUSE" }))
      await dealer.send(bytes("two"))
      expect(text(await second.receive())).toEqual(["d", "two"])
      expect(heard).toEqual(["up", "down", "up"])
    }))

  it.effect("a dealer that closes is gone for the router: its peer event, then EHOSTUNREACH", () =>
    Effect.promise(async () => {
      const network = new MemorySocket.Network()
      const router = network.bind()
      const events: Array<string> = []
      router.onPeer((event) => events.push(event))
      const dealer = network.connect(router.address, { routingId: "d" })
      await dealer.send(bytes("hi"))
      await router.receive()
      expect(router.peerCount).toBe(1)
      dealer.close()
      await expect(dealer.receive()).rejects.toMatchObject({ code: "EBADF" })
      await nextTurn()
      expect(events).toEqual(["up", "down"])
      await expect(router.send(bytes("d", "late"))).rejects.toMatchObject({ code: "EHOSTUNREACH" })
    }))

  it.effect("frames are copied on send: a sender reusing its buffer changes nothing received", () =>
    Effect.promise(async () => {
      const network = new MemorySocket.Network()
      const router = network.bind()
      const dealer = network.connect(router.address)
      const buffer = Uint8Array.of(1, 2, 3)
      await dealer.send([buffer])
      buffer[0] = 9
      const [, frame] = await router.receive()
      expect([...frame!]).toEqual([1, 2, 3])
      expect(Buffer.isBuffer(frame)).toBe(true)
    }))
})
