/**
 * The client's writer over a real DEALER on loopback: request ids come back with failures, and
 * closing flushes what is queued while the peer is connected, and does not wait when it is not.
 */
import { describe, expect, it } from "@effect/vitest"
import { TestSupport } from "@mcore-effect/testkit"
import { Effect } from "effect"
import * as Zmq from "zeromq"
import * as Writer from "../src/internal/writer.ts"

const router = TestSupport.loopbackRouter

const link = (up: boolean): Writer.Link => ({ up, onDown: () => {} })

describe("Writer", () => {
  it.live("closing while connected delivers everything queued, then closes the socket", () =>
    Effect.gen(function*() {
      const peer = yield* router
      const inbox = yield* TestSupport.peer(peer, "router")
      const dealer = new Zmq.Dealer({ linger: 0 })
      dealer.connect(peer.lastEndpoint!)
      const writer = Writer.make(dealer, () => {})
      writer.send([Uint8Array.of(0)], undefined)
      yield* inbox.next() // connected
      for (let i = 1; i <= 100; i++) writer.send([Uint8Array.of(i)], i)
      yield* Effect.promise(() => Writer.closeAfterFlush(dealer, writer, link(true), 1_000))
      expect(dealer.closed).toBe(true)
      const got: Array<number> = []
      for (let i = 0; i < 100; i++) got.push((yield* inbox.next())[1]![0]!)
      expect(got).toEqual(Array.from({ length: 100 }, (_, i) => i + 1))
    }).pipe(Effect.scoped))

  it.live("closing while not connected does not wait, and drops what is queued", () =>
    Effect.gen(function*() {
      const dealer = new Zmq.Dealer({ linger: 0 })
      dealer.connect("tcp://127.0.0.1:1")
      const failures: Array<number | undefined> = []
      const writer = Writer.make(dealer, (requestId) => failures.push(requestId))
      writer.send([Uint8Array.of(1)], 1)
      // The bound is 10 s; waiting for it would trip the guard.
      yield* Effect.promise(() => Writer.closeAfterFlush(dealer, writer, link(false), 10_000)).pipe(
        TestSupport.bounded("closing while not connected", "5 seconds")
      )
      expect(dealer.closed).toBe(true)
      expect(writer.pending).toBe(0)
      expect(failures).toEqual([])
    }))

  it.live("a connection that drops during the flush ends it at once", () =>
    Effect.gen(function*() {
      const dealer = new Zmq.Dealer({ linger: 0, sendTimeout: 0 })
      dealer.connect("tcp://127.0.0.1:1")
      const writer = Writer.make(dealer, () => {})
      writer.pause() // a queue that cannot go out
      writer.send([Uint8Array.of(1)], 1)
      let down: (() => void) | undefined
      const closing = Writer.closeAfterFlush(dealer, writer, { up: true, onDown: (callback) => (down = callback) }, 10_000)
      expect(dealer.closed).toBe(false)
      down!()
      yield* Effect.promise(() => closing)
      expect(dealer.closed).toBe(true)
    }))
})
