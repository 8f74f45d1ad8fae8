import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { FrameSocket } from "../src/index.ts"

/**
 * An in-memory socket: records what is sent, checks that sends never overlap (zeromq.js throws
 * on a second send in flight), and fails the sends it is told to.
 */
class MemorySocket implements FrameSocket.Writable, FrameSocket.Readable {
  readonly sent: Array<ReadonlyArray<Uint8Array>> = []
  inFlight = 0
  overlapped = false
  failNext = 0
  closed = false
  private readonly incoming: Array<Array<Buffer>> = []
  private waiting: { resolve: (frames: Array<Buffer>) => void; reject: (e: Error) => void } | undefined

  async send(message: Array<Uint8Array>): Promise<void> {
    if (this.inFlight > 0) this.overlapped = true
    this.inFlight++
    await new Promise((resolve) => setImmediate(resolve))
    this.inFlight--
    if (this.failNext > 0) {
      this.failNext--
      throw new Error("refused")
    }
    this.sent.push(message)
  }

  receive(): Promise<Array<Buffer>> {
    const next = this.incoming.shift()
    if (next !== undefined) return Promise.resolve(next)
    if (this.closed) return Promise.reject(new Error("closed"))
    return new Promise((resolve, reject) => (this.waiting = { resolve, reject }))
  }

  deliver(frames: Array<Buffer>): void {
    const waiting = this.waiting
    this.waiting = undefined
    if (waiting !== undefined) waiting.resolve(frames)
    else this.incoming.push(frames)
  }

  close(): void {
    this.closed = true
    this.waiting?.reject(new Error("closed"))
  }
}

const frame = (n: number) => [Uint8Array.of(n)]
const idle = (writer: FrameSocket.Writer<any>) => new Promise<void>((resolve) => writer.whenIdle(resolve))

describe("FrameSocket.Writer", () => {
  it("sends in order, one at a time", async () => {
    const socket = new MemorySocket()
    const writer = new FrameSocket.Writer(socket)
    for (let i = 0; i < 50; i++) writer.send(frame(i))
    expect(writer.pending).toBe(49) // the first is already with the socket
    expect(writer.idle).toBe(false)
    await idle(writer)
    expect(socket.sent.map((m) => m[0]![0])).toEqual(Array.from({ length: 50 }, (_, i) => i))
    expect(socket.overlapped).toBe(false)
    expect(writer.idle).toBe(true)
  })

  it("reports a refused message with its tag, and goes on", async () => {
    const socket = new MemorySocket()
    const failures: Array<[string, number | undefined]> = []
    const writer = new FrameSocket.Writer<number | undefined>(socket, (cause, _message, tag) => failures.push([String(cause), tag]))
    socket.failNext = 1
    writer.send(frame(1), 7)
    writer.send(frame(2), undefined)
    await idle(writer)
    expect(failures).toEqual([["Error: refused", 7]])
    expect(writer.failed).toBe(1)
    expect(socket.sent.map((m) => m[0]![0])).toEqual([2])
  })

  it("holds messages while paused; close drops what is queued and later sends", async () => {
    const socket = new MemorySocket()
    const writer = new FrameSocket.Writer(socket)
    writer.pause()
    writer.send(frame(1))
    await new Promise((resolve) => setTimeout(resolve, 5))
    expect(socket.sent).toEqual([])
    writer.resume()
    await idle(writer)
    expect(socket.sent).toHaveLength(1)
    writer.sendAfter(1_000, frame(2))
    writer.close()
    writer.send(frame(3))
    await new Promise((resolve) => setTimeout(resolve, 5))
    expect(socket.sent).toHaveLength(1)
    expect(writer.pending).toBe(0)
  })

  it("calls every whenIdle callback once the queue has gone out", async () => {
    const socket = new MemorySocket()
    const writer = new FrameSocket.Writer(socket)
    const calls: Array<string> = []
    writer.whenIdle(() => calls.push("already idle"))
    writer.send(frame(1))
    writer.whenIdle(() => calls.push("a"))
    writer.whenIdle(() => calls.push("b"))
    await idle(writer)
    expect(calls).toEqual(["already idle", "a", "b"])
  })
})

/**
 * A socket like zeromq.js with `sendTimeout: 0`: each send is done before `send` returns (its
 * promise already settled); `busyAfter` makes it defer one send as zeromq.js can, after which a
 * second send throws synchronously (EBUSY) until the deferred one is out.
 */
class SyncSocket implements FrameSocket.Writable {
  readonly sent: Array<number> = []
  calls = 0
  refuse = new Set<number>()
  busyAfter = Infinity
  private busy = false

  send(message: Array<Uint8Array>): Promise<void> {
    if (this.busy) throw new Error("Socket is busy writing")
    this.calls++
    const n = message[0]![0]!
    if (this.calls === this.busyAfter) {
      this.busy = true
      return new Promise((resolve) =>
        setImmediate(() => {
          this.busy = false
          this.sent.push(n)
          resolve()
        })
      )
    }
    if (this.refuse.has(n)) return Promise.reject(new Error(`refused ${n}`))
    this.sent.push(n)
    return Promise.resolve()
  }
}

describe("FrameSocket.Writer, immediate", () => {
  it("hands each message to the socket from send itself, in order, and reports refusals with their tags", async () => {
    const socket = new SyncSocket()
    socket.refuse.add(3)
    const failed: Array<number> = []
    const writer = new FrameSocket.Writer<number>(socket, (_cause, _message, tag) => failed.push(tag), { immediate: true })
    for (let i = 0; i < 6; i++) writer.send(frame(i), 100 + i)
    expect(socket.sent).toEqual([0, 1, 2, 4, 5]) // synchronously
    expect(writer.idle).toBe(true)
    await new Promise((resolve) => setImmediate(resolve))
    expect(failed).toEqual([103])
    expect(writer.failed).toBe(1)
  })

  it("falls back to the loop, in order, when the socket defers a send and is busy", async () => {
    const socket = new SyncSocket()
    socket.busyAfter = 3
    const writer = new FrameSocket.Writer<number>(socket, () => expect.unreachable(), { immediate: true })
    for (let i = 0; i < 10; i++) writer.send(frame(i), i)
    expect(socket.sent).toEqual([0, 1])
    expect(writer.idle).toBe(false)
    await idle(writer)
    expect(socket.sent).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9])
    writer.send(frame(10), 10) // immediate again
    expect(socket.sent.at(-1)).toBe(10)
  })

  it("queues while paused, and ignores refusals after close", async () => {
    const socket = new SyncSocket()
    socket.refuse.add(1)
    const failed: Array<number> = []
    const writer = new FrameSocket.Writer<number>(socket, (_c, _m, tag) => failed.push(tag), { immediate: true })
    writer.pause()
    writer.send(frame(0), 0)
    expect(socket.sent).toEqual([])
    writer.resume()
    await idle(writer)
    expect(socket.sent).toEqual([0])
    writer.send(frame(1), 1)
    writer.close()
    await new Promise((resolve) => setImmediate(resolve))
    expect(failed).toEqual([])
  })
})

describe("FrameSocket.Writer, immediate and coalesced", () => {
  const turn = () => new Promise((resolve) => setImmediate(resolve))
  const options = { immediate: true, coalesce: true } as const

  it("sends a turn's first message at once, the rest together after the turn, in order, and reports refusals with their tags", async () => {
    const socket = new SyncSocket()
    socket.refuse.add(3)
    const failed: Array<number> = []
    const writer = new FrameSocket.Writer<number>(socket, (_cause, _message, tag) => failed.push(tag), options)
    for (let i = 0; i < 6; i++) writer.send(frame(i), 100 + i)
    expect(socket.sent).toEqual([0]) // the first at once; the rest in the burst after this turn
    expect(writer.idle).toBe(false)
    expect(writer.pending).toBe(5)
    let idleSeen = false
    writer.whenIdle(() => (idleSeen = true))
    await turn()
    expect(socket.sent).toEqual([0, 1, 2, 4, 5])
    expect(socket.calls).toBe(6) // one burst, each message once
    expect(idleSeen).toBe(true)
    expect(writer.idle).toBe(true)
    await turn()
    expect(failed).toEqual([103])
    writer.send(frame(6), 106)
    await turn()
    expect(socket.sent.at(-1)).toBe(6)
  })

  it("hands the rest of a burst to the loop, in order, when the socket is busy", async () => {
    const socket = new SyncSocket()
    socket.busyAfter = 3
    const writer = new FrameSocket.Writer<number>(socket, () => expect.unreachable(), options)
    for (let i = 0; i < 10; i++) writer.send(frame(i), i)
    await turn()
    expect(socket.sent).toEqual([0, 1])
    writer.send(frame(10), 10) // while the loop runs: after the rest
    await idle(writer)
    expect(socket.sent).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
  })

  it("holds a burst while paused, and drops it on close", async () => {
    const socket = new SyncSocket()
    const writer = new FrameSocket.Writer<number>(socket, () => expect.unreachable(), options)
    writer.send(frame(0), 0)
    writer.send(frame(1), 1)
    writer.pause()
    await turn()
    expect(socket.sent).toEqual([0])
    writer.resume()
    await idle(writer)
    expect(socket.sent).toEqual([0, 1])
    await turn()
    writer.send(frame(2), 2) // a new turn's first: at once
    writer.send(frame(3), 3)
    writer.close()
    await turn()
    expect(socket.sent).toEqual([0, 1, 2])
    expect(writer.pending).toBe(0)
  })

  it("sends a burst as soon as it holds maxBurst messages, the turn's rest after the turn, in order", async () => {
    const socket = new SyncSocket()
    const writer = new FrameSocket.Writer<number>(socket, () => expect.unreachable(), { ...options, maxBurst: 3 })
    for (let i = 0; i < 9; i++) writer.send(frame(i), i)
    // 0 at once; 1-3 when the third of them queued; 4-6 likewise; 7 and 8 wait for the turn's end.
    expect(socket.sent).toEqual([0, 1, 2, 3, 4, 5, 6])
    expect(writer.pending).toBe(2)
    await turn()
    expect(socket.sent).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8])
    expect(socket.calls).toBe(9)
    expect(writer.idle).toBe(true)
    // Paused, nothing goes, however many queue; resumed, all of it, in order.
    writer.pause()
    for (let i = 9; i < 14; i++) writer.send(frame(i), i)
    expect(socket.sent).toHaveLength(9)
    writer.resume()
    await idle(writer)
    expect(socket.sent).toEqual(Array.from({ length: 14 }, (_, i) => i))
  })

  it("hands a full burst to the loop, in order, when the socket turns busy during it", async () => {
    const socket = new SyncSocket()
    socket.busyAfter = 3
    const writer = new FrameSocket.Writer<number>(socket, () => expect.unreachable(), { ...options, maxBurst: 2 })
    for (let i = 0; i < 8; i++) writer.send(frame(i), i)
    await idle(writer)
    expect(socket.sent).toEqual([0, 1, 2, 3, 4, 5, 6, 7])
  })

  it("sends one message a turn at once: requests one at a time wait for no burst", async () => {
    const socket = new SyncSocket()
    const writer = new FrameSocket.Writer<number>(socket, () => expect.unreachable(), options)
    for (let i = 0; i < 3; i++) {
      writer.send(frame(i), i)
      expect(socket.sent).toEqual(Array.from({ length: i + 1 }, (_, j) => j))
      expect(writer.idle).toBe(true)
      await turn()
    }
  })
})

describe("FrameSocket.read", () => {
  it("hands every message over; a throwing handler does not end the loop; closing ends it", async () => {
    const socket = new MemorySocket()
    const got: Array<number> = []
    const errors: Array<string> = []
    const reader = FrameSocket.read(socket, {
      onMessage: (frames) => {
        if (frames[0]![0] === 2) throw new Error("bad")
        got.push(frames[0]![0]!)
      },
      onHandlerError: (cause) => errors.push(String(cause)),
      onReceiveError: (cause) => errors.push(`receive: ${String(cause)}`)
    })
    for (const n of [1, 2, 3]) socket.deliver([Buffer.of(n)])
    await new Promise((resolve) => setTimeout(resolve, 5))
    socket.close()
    await reader.done
    expect(got).toEqual([1, 3])
    expect(errors).toEqual(["Error: bad"])
  })

  it("holds while the gate is shut", async () => {
    const socket = new MemorySocket()
    const got: Array<number> = []
    let open!: () => void
    let gate: Promise<void> | undefined = new Promise((resolve) => (open = resolve))
    FrameSocket.read(socket, {
      gate: () => gate,
      onMessage: (frames) => got.push(frames[0]![0]!),
      onHandlerError: () => {},
      onReceiveError: () => {}
    })
    socket.deliver([Buffer.of(1)])
    await new Promise((resolve) => setTimeout(resolve, 5))
    expect(got).toEqual([])
    gate = undefined
    open()
    await new Promise((resolve) => setTimeout(resolve, 5))
    expect(got).toEqual([1])
    socket.close()
  })

  it.effect("as a scoped resource, stops when the scope closes", () =>
    Effect.gen(function*() {
      const socket = new MemorySocket()
      const got: Array<number> = []
      yield* Effect.scoped(FrameSocket.reader(socket, {
        onMessage: (frames) => got.push(frames[0]![0]!),
        onHandlerError: () => {},
        onReceiveError: () => {}
      }))
      socket.deliver([Buffer.of(1)])
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 5)))
      expect(got).toEqual([])
      socket.close()
    }))
})
