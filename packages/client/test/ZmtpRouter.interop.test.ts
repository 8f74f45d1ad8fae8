/**
 * The protocol package's `ZmtpRouter` (a ROUTER of our own over `node:net`) with libzmq's DEALERs
 * (zeromq.js) as its peers: identities as libzmq gives them, routing by identity, an unknown
 * identity refused, a peer leaving, ipc and 1 MiB frames, and a peer with bad input closed while
 * the others go on.
 */
import { describe, expect, it } from "@effect/vitest"
import { ZmtpRouter } from "@mcore-effect/protocol"
import { TestSupport } from "@mcore-effect/testkit"
import { Effect, Queue } from "effect"
import * as Fs from "node:fs"
import * as Net from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"
import * as Zmq from "zeromq"

/** A router on `address` whose messages and events go to queues, closed with the scope. */
const router = (address: string) =>
  Effect.gen(function*() {
    const messages = yield* Queue.unbounded<Array<Buffer>>()
    const left = yield* Queue.unbounded<Buffer>()
    const refusals: Array<string> = []
    const socket = yield* Effect.acquireRelease(
      Effect.promise(() =>
        ZmtpRouter.listen(address, {
          message: (frames) => Queue.offerUnsafe(messages, frames),
          disconnected: (identity) => Queue.offerUnsafe(left, identity),
          refused: (why) => refusals.push(why)
        })
      ),
      (socket) => Effect.promise(() => socket.close())
    )
    return { socket, messages, left, refusals }
  })

const dealer = (options?: Zmq.SocketOptions<Zmq.Dealer>) =>
  Effect.acquireRelease(Effect.sync(() => new Zmq.Dealer({ linger: 0, ...options })), (d) => Effect.sync(() => d.close()))

const bounded = TestSupport.bounded("the router", "10 seconds")
const text = (s: string) => Buffer.from(s)

describe("ZmtpRouter against libzmq's DEALERs", () => {
  it.live("identities as libzmq gives them, replies routed by identity, an unknown one refused, a peer that leaves", () =>
    Effect.gen(function*() {
      const { left, messages, socket } = yield* router("tcp://127.0.0.1:0")
      expect(socket.address).toMatch(/^tcp:\/\/127\.0\.0\.1:\d+$/)
      const named = yield* dealer({ routingId: "named-one" })
      const anonymous = yield* dealer()
      named.connect(socket.address)
      anonymous.connect(socket.address)
      yield* Effect.promise(() => named.send([text("from named"), text("x")]))
      yield* Effect.promise(() => anonymous.send([text("from anonymous")]))
      const got = [yield* bounded(Queue.take(messages)), yield* bounded(Queue.take(messages))]
      const byText = new Map(got.map(([identity, first]) => [first!.toString(), identity!]))
      expect(byText.get("from named")!.toString()).toBe("named-one")
      const generated = byText.get("from anonymous")!
      expect(generated.length).toBe(5)
      expect(generated[0]).toBe(0)
      expect(got.find(([, first]) => first!.toString() === "from named")!.map(String)).toEqual(["named-one", "from named", "x"])
      expect(socket.size).toBe(2)

      expect(socket.send([generated, text("for anonymous")])).toBe("sent")
      expect(socket.send([text("named-one"), text("for named"), text("2")])).toBe("sent")
      expect((yield* bounded(Effect.promise(() => anonymous.receive()))).map(String)).toEqual(["for anonymous"])
      expect((yield* bounded(Effect.promise(() => named.receive()))).map(String)).toEqual(["for named", "2"])
      expect(socket.send([text("nobody"), text("lost")])).toBe("unreachable")

      named.close()
      expect((yield* bounded(Queue.take(left))).toString()).toBe("named-one")
      expect(socket.send([text("named-one"), text("gone")])).toBe("unreachable")
      expect(socket.size).toBe(1)
    }).pipe(Effect.scoped))

  it.live("over ipc, 1 MiB frames both ways", () =>
    Effect.gen(function*() {
      const dir = yield* Effect.acquireRelease(
        Effect.sync(() => Fs.mkdtempSync(Path.join(Os.tmpdir(), "mcore-zmtp-router-"))),
        (dir) => Effect.sync(() => Fs.rmSync(dir, { recursive: true, force: true }))
      )
      const { messages, socket } = yield* router(`ipc://${dir}/router`)
      const peer = yield* dealer({ routingId: "ipc-peer" })
      peer.connect(`ipc://${dir}/router`)
      const big = Buffer.alloc(1 << 20, 7)
      yield* Effect.promise(() => peer.send([big, text("end")]))
      const [identity, frame, end] = yield* bounded(Queue.take(messages))
      expect([identity!.toString(), frame!.equals(big), end!.toString()]).toEqual(["ipc-peer", true, "end"])
      expect(socket.send([identity!, big])).toBe("sent")
      const [back] = yield* bounded(Effect.promise(() => peer.receive()))
      expect(back!.equals(big)).toBe(true)
    }).pipe(Effect.scoped))

  it.live("a peer with bad input is closed and said once; the others go on", () =>
    Effect.gen(function*() {
      const { messages, refusals, socket } = yield* router("tcp://127.0.0.1:0")
      const good = yield* dealer({ routingId: "good" })
      good.connect(socket.address)
      const port = Number(socket.address.slice(socket.address.lastIndexOf(":") + 1))
      const bad = yield* Effect.acquireRelease(
        // Read (and dropped) as it comes: a socket with unread data never sees its end.
        Effect.sync(() => Net.connect({ host: "127.0.0.1", port }).on("error", () => {}).resume()),
        (s) => Effect.sync(() => s.destroy())
      )
      bad.write("GET / HTTP/1.1\r\n\r\n")
      const badClosed = yield* Effect.promise(() => new Promise<boolean>((resolve) => bad.once("close", () => resolve(true))))
      expect(badClosed).toBe(true)
      expect(refusals.length).toBe(1)
      expect(refusals[0]).toContain("signature")
      yield* Effect.promise(() => good.send([text("still here")]))
      expect((yield* bounded(Queue.take(messages))).map(String)).toEqual(["good", "still here"])
    }).pipe(Effect.scoped))
})
