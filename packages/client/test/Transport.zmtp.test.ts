/**
 * The client over `Transport.zmtp`, its own DEALER over `node:net`, against libzmq: the testkit's
 * coordinator (a zeromq.js ROUTER) over tcp and ipc, a coordinator in a process of its own that
 * stops answering (heartbeats tell) and is killed and replaced (the DEALER dials again), a peer
 * that does not speak ZMTP, and CurveZMQ refused by name.
 */
import { describe, expect, it } from "@effect/vitest"
import { Headers, Msgpack, Zmtp } from "@mcore-effect/protocol"
import { Generation, TestCluster, TestSupport, Vocabulary } from "@mcore-effect/testkit"
import { Effect, Fiber, Schedule, Stream } from "effect"
import * as Fs from "node:fs"
import * as Net from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"
import * as Zmq from "zeromq"
import { InferenceClient, Transport } from "../src/index.ts"
import * as ChildCoordinator from "./support/ChildCoordinator.ts"
import { withRegistry } from "./support/Cluster.ts"

const tokens = Vocabulary.tokenize("the quick fox runs over the dog")
const overZmtp = Effect.provide(Transport.layerZmtp)
const bounded = TestSupport.bounded("the client", "10 seconds")
const heartbeats = { heartbeatInterval: 100, heartbeatTimeout: 600 } as const

/** Submits, streams, and checks the replies are the engines' for their prompts. */
const exercise = (client: InferenceClient.Service) =>
  Effect.gen(function*() {
    const replies = yield* Effect.forEach([2, 3, 4, 5], (n) => client.submit(tokens, { num_tokens_to_generate: n }), {
      concurrency: "unbounded"
    })
    expect(replies.map((r) => r.generated_tokens)).toEqual([2, 3, 4, 5].map((n) => Generation.tokens(tokens, n)))
    const events = yield* Stream.runCollect(client.stream(tokens, { num_tokens_to_generate: 6 }))
    const streamed = events.flatMap((event) => (event._tag === "Tokens" ? event.newTokens : []))
    const last = events.at(-1)
    expect(last?._tag).toBe("Final")
    const generated: ReadonlyArray<number> = last?._tag === "Final" ? ((last.reply as InferenceClient.RawReply).generated_tokens as ReadonlyArray<number>) : []
    expect(generated).toEqual(Generation.tokens(tokens, 6))
    // The partials, in order, are what the final reply says was generated before its end.
    expect(streamed.length).toBeGreaterThan(0)
    expect(generated.slice(0, streamed.length)).toEqual(streamed)
    // A batch of ~640 KB written in one turn: more than one of a turn's chunks (256 KiB), each
    // written as it fills; every prompt arrives whole (the engines answer from the prompt).
    const prompts = Array.from({ length: 500 }, (_, i) => Array.from({ length: 400 }, (_, j) => 1000 + ((i * 7 + j) % 3000)))
    const many = yield* Stream.runCollect(
      client.submitAll(prompts.map((prompt) => ({ prompt, samplingParams: { num_tokens_to_generate: 2 } })))
    )
    expect(many.length).toBe(500)
    for (const done of many) {
      expect((done.reply as InferenceClient.RawReply).generated_tokens).toEqual(Generation.tokens(prompts[done.index]!, 2))
    }
    expect(yield* client.pendingCount).toBe(0)
  })

describe("Transport.zmtp", () => {
  it.live("over tcp, against the testkit's coordinator (libzmq's ROUTER): submit, stream, a batch", () =>
    Effect.gen(function*() {
      const cluster = yield* TestCluster.make({ engines: 2 })
      const client = yield* overZmtp(InferenceClient.make({ address: cluster.address, protocol: cluster.protocol }))
      expect(yield* client.connected).toBe(true)
      yield* exercise(client)
      const snapshot = yield* cluster.coordinator.snapshot
      expect(snapshot.rejected).toEqual([])
    }).pipe(withRegistry))

  it.live("over ipc (a Unix socket, as libzmq maps ipc://)", () =>
    Effect.gen(function*() {
      const dir = yield* Effect.acquireRelease(
        Effect.sync(() => Fs.mkdtempSync(Path.join(Os.tmpdir(), "mcore-zmtp-"))),
        (dir) => Effect.sync(() => Fs.rmSync(dir, { recursive: true, force: true }))
      )
      const cluster = yield* TestCluster.make({ engines: 1, coordinator: { address: `ipc://${dir}/coordinator` } })
      const client = yield* overZmtp(InferenceClient.make({ address: cluster.address, protocol: cluster.protocol }))
      yield* exercise(client)
    }).pipe(withRegistry))

  it.live("a coordinator that stops answering fails what is pending (heartbeats); killed and replaced, the DEALER dials again", () =>
    Effect.gen(function*() {
      const coordinator = yield* ChildCoordinator.make()
      const client = yield* overZmtp(
        InferenceClient.make({ address: coordinator.address, protocol: coordinator.protocol, ...heartbeats })
      )
      yield* client.submit([1])
      yield* coordinator.signal("SIGSTOP")
      const pending = yield* Effect.forkChild(Effect.forEach([1, 2, 3], (n) => client.submit([n]), { concurrency: "unbounded" }))
      expect((yield* bounded(Effect.flip(Fiber.join(pending)))).reason._tag).toBe("CoordinatorLost")
      expect(yield* client.pendingCount).toBe(0)
      yield* coordinator.signal("SIGKILL")
      yield* coordinator.exited

      const successor = yield* ChildCoordinator.make(coordinator.address)
      const reply = yield* bounded(
        client.submit([9, 9]).pipe(
          Effect.retry({ while: (e) => e.reason._tag === "CoordinatorLost", schedule: Schedule.spaced("20 millis") })
        )
      )
      expect((reply as InferenceClient.RawReply).echo).toEqual([9, 9])
      expect(successor.address).toBe(coordinator.address)
    }).pipe(withRegistry), { timeout: 30_000 })

  it.live("a peer that does not speak ZMTP: refused, said once per connection, and the connect times out", () =>
    Effect.gen(function*() {
      const server = yield* Effect.acquireRelease(
        Effect.promise(() =>
          new Promise<Net.Server>((resolve) => {
            const server = Net.createServer((socket) => {
              socket.on("error", () => {})
              socket.end("HTTP/1.1 400 Bad Request\r\n\r\n")
            })
            server.listen(0, "127.0.0.1", () => resolve(server))
          })
        ),
        (server) => Effect.sync(() => server.close())
      )
      const port = (server.address() as Net.AddressInfo).port
      yield* TestSupport.withLogs((logs) =>
        Effect.gen(function*() {
          const error = yield* Effect.flip(
            overZmtp(InferenceClient.make({ address: `tcp://127.0.0.1:${port}`, protocol: "reference", connectTimeout: 400 }))
          )
          expect(error.reason._tag).toBe("ConnectTimeout")
          expect(logs.some((line) => line.includes("ZMTP: signature"))).toBe(true)
        })
      )
    }).pipe(Effect.scoped))

  it.live("a coordinator that stops reading: sends over maxQueuedBytes fail alone; what was queued arrives whole once it reads", () =>
    Effect.gen(function*() {
      // A ROUTER by hand: the handshake, CONNECT answered, then nothing read until resumed.
      let received = 0
      let peer: Net.Socket | undefined
      const server = yield* Effect.acquireRelease(
        Effect.promise(() =>
          new Promise<Net.Server>((resolve) => {
            const server = Net.createServer((socket) => {
              peer = socket
              socket.on("error", () => {})
              const parser = new Zmtp.Parser({
                maxFrameBytes: 64 * 1024 * 1024,
                greeting: () => socket.write(Zmtp.ready({ "Socket-Type": "ROUTER" })),
                command: () => {},
                message: () => {
                  received++
                  if (received === 1) {
                    socket.write(Zmtp.message([Msgpack.encode([Headers.values.CONNECT_ACK])]))
                    socket.pause()
                  }
                },
                refused: (refusal) => socket.destroy(new Error(refusal.detail))
              })
              socket.on("data", (chunk: Buffer) => parser.push(chunk))
              socket.write(Zmtp.greeting(true))
            })
            server.listen(0, "127.0.0.1", () => resolve(server))
          })
        ),
        (server) => Effect.sync(() => server.close())
      )
      const port = (server.address() as Net.AddressInfo).port
      const limit = 8 * 1024 * 1024
      const client = yield* overZmtp(InferenceClient.make({
        address: `tcp://127.0.0.1:${port}`,
        protocol: "reference",
        maxQueuedBytes: limit,
        closeTimeout: 0
      }))
      // 64 prompts of about 1 MB each: 64 MB offered, the link takes about 8 MB and the kernel's buffers.
      const prompt = new Array<number>(1_000_000).fill(5)
      const outcomes = yield* Effect.forEach(
        Array.from({ length: 64 }, () => prompt),
        (p) => client.submit(p, { num_tokens_to_generate: 1 }).pipe(Effect.flip, Effect.timeoutOption("1 second")),
        { concurrency: "unbounded" }
      )
      const failed = outcomes.flatMap((o) => (o._tag === "Some" ? [o.value] : []))
      const accepted = outcomes.length - failed.length
      expect(failed.length).toBeGreaterThanOrEqual(32)
      expect(accepted).toBeGreaterThanOrEqual(1)
      for (const error of failed) {
        expect(error.reason._tag).toBe("SendFailed")
        expect(String((error.reason as { cause?: unknown }).cause)).toContain("maxQueuedBytes")
      }
      // Read again: every accepted request arrives whole (the parser refuses anything cut).
      peer!.resume()
      // The CONNECT, then each accepted request and the abort its timeout sent after it: a failed
      // send was never sent, so it owes no abort.
      yield* Effect.suspend(() => (received === 1 + 2 * accepted ? Effect.void : Effect.fail("waiting"))).pipe(
        Effect.retry(Schedule.spaced("20 millis")),
        bounded
      )
      expect(peer!.destroyed).toBe(false)
    }).pipe(Effect.scoped), { timeout: 30_000 })

  it.live("the default dials with zmtp (a Node socket of its own), transport: zeromq with zeromq.js; an unknown one is refused by name", () =>
    Effect.gen(function*() {
      // libzmq's ROUTER: only the client's own socket, if it has one, is a Node handle.
      const cluster = yield* TestCluster.make({ engines: 1, coordinator: { transport: "zeromq" } })
      const sockets = () => process.getActiveResourcesInfo().filter((r) => r === "TCPSocketWrap").length
      const before = sockets()
      const dial = (transport?: "zmtp" | "zeromq") =>
        Effect.scoped(Effect.gen(function*() {
          const client = yield* InferenceClient.make({ address: cluster.address, protocol: cluster.protocol, transport })
          const reply = yield* client.submit(tokens, { num_tokens_to_generate: 2 })
          expect(reply.generated_tokens).toEqual(Generation.tokens(tokens, 2))
          return sockets() - before
        }))
      expect(yield* dial()).toBe(1)
      expect(yield* dial("zmtp")).toBe(1)
      expect(yield* dial("zeromq")).toBe(0)
      // The option wins over a provided transport.
      expect(yield* dial("zeromq").pipe(overZmtp)).toBe(0)
      const unknown = yield* Effect.flip(
        InferenceClient.make({ address: cluster.address, protocol: cluster.protocol, transport: "nng" })
      )
      expect(unknown.reason).toMatchObject({ _tag: "InvalidArgument", name: "transport" })
    }).pipe(Effect.scoped, withRegistry))

  it.live("CurveZMQ is refused by name, before anything is opened", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(overZmtp(InferenceClient.make({
        address: "tcp://127.0.0.1:1",
        protocol: "reference",
        curve: { serverKey: Zmq.curveKeyPair().publicKey }
      })))
      expect(error.reason._tag).toBe("InvalidArgument")
      expect(error.message).toContain("curve")
    }).pipe(Effect.scoped))
})
