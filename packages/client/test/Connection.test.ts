/**
 * The connection state on its own (each transition and what it asks for), and the connection's
 * local calls: `available`, `register` (nothing registered or sent when refused), `cancel`.
 */
import { describe, expect, it } from "@effect/vitest"
import { FrameSocket, Messages } from "@mcore-effect/protocol"
import { TestSupport } from "@mcore-effect/testkit"
import { Effect, Result } from "effect"
import * as ClientConfig from "../src/ClientConfig.ts"
import { Recorder } from "../src/ClientMetrics.ts"
import { Connection } from "../src/internal/connection.ts"
import { ConnectionState } from "../src/internal/connectionState.ts"
import { singles } from "../src/internal/pendingRequests.ts"

describe("ConnectionState", () => {
  it("connecting -> ready at the first CONNECT_ACK; a later one changes nothing", () => {
    const state = new ConnectionState()
    expect(state.awaitingFirstAck).toBe(true)
    expect(state.up()).toBe(false) // the first connection's CONNECT is already queued
    expect(state.acknowledged()).toBe("first")
    expect(state.phase).toBe("ready")
    expect(state.awaitingFirstAck).toBe(false)
    expect(state.acknowledged()).toBeUndefined()
  })

  it("a connection that drops before its CONNECT_ACK says CONNECT again on the next one", () => {
    const state = new ConnectionState()
    state.up()
    expect(state.down()).toBe(false) // nothing was in flight
    expect(state.phase).toBe("connecting")
    expect(state.up()).toBe(true)
  })

  it("ready -> lost on a drop (the requests in flight fail); back to ready at a new CONNECT_ACK", () => {
    const state = new ConnectionState()
    state.up()
    state.acknowledged()
    expect(state.down()).toBe(true)
    expect(state.phase).toBe("lost")
    expect(state.linkUp).toBe(false)
    expect(state.down()).toBe(false) // already lost: nothing more to fail
    expect(state.up()).toBe(true) // the coordinator does not know this connection: CONNECT
    expect(state.acknowledged()).toBe("back")
    expect(state.phase).toBe("ready")
  })

  it("closed is final", () => {
    const state = new ConnectionState()
    state.up()
    state.acknowledged()
    state.close()
    expect(state.down()).toBe(false)
    expect(state.up()).toBe(false)
    expect(state.acknowledged()).toBeUndefined()
    expect(state.phase).toBe("closed")
  })
})

/** A socket that keeps what is sent: the connection's writer writes here. */
const recording = () => {
  const sent: Array<ReadonlyArray<Uint8Array>> = []
  const socket: FrameSocket.Writable = { send: async (message) => void sent.push(message) }
  return { sent, socket }
}

const connection = (options?: Partial<ClientConfig.ClientOptions>) =>
  Effect.map(Effect.context<never>(), (context) => {
    const config = Result.getOrThrow(ClientConfig.resolve({ address: "tcp://127.0.0.1:1", protocol: "reference", ...options }))
    const { sent, socket } = recording()
    const writer = new FrameSocket.Writer<number | undefined>(socket)
    const warnings: Array<string> = []
    const c = new Connection(config, new Recorder(context), writer, (m) => warnings.push(m))
    const idle = Effect.promise(() => new Promise<void>((resolve) => writer.whenIdle(resolve)))
    const tags = Effect.map(idle, () => sent.map((frames) => Result.getOrThrow(Messages.Client.decode(frames))._tag))
    return { connection: c, tags, warnings }
  })

const single = (c: Connection) => singles(c)

describe("Connection", () => {
  it.effect("refuses everything until ready, with ClientClosed once closed and CoordinatorLost while lost", () =>
    Effect.gen(function*() {
      const { connection: c, tags } = yield* connection()
      expect(c.available()?.reason._tag).toBe("ClientClosed") // connecting: nothing may go out yet
      const refused = c.register({ prompt: [1, 2] }, false, single(c))
      expect(Result.isFailure(refused)).toBe(true)
      c.up()
      c.state.acknowledged()
      expect(c.available()).toBeUndefined()
      c.down()
      expect(c.available()?.reason._tag).toBe("CoordinatorLost")
      c.up() // a new connection: CONNECT again
      c.state.acknowledged()
      c.close()
      expect(c.available()?.reason._tag).toBe("ClientClosed")
      expect(yield* tags).toEqual(["Connect"])
    }).pipe(TestSupport.withRegistry))

  it.effect("register: ids in order; a refused request takes no id and sends nothing", () =>
    Effect.gen(function*() {
      const { connection: c, tags } = yield* connection()
      c.state.acknowledged()
      const first = c.register({ prompt: [1, 2] }, false, single(c))
      const badPrompt = c.register({ prompt: [-1] }, false, single(c))
      const badTimeout = c.register({ prompt: [1], timeout: -1 }, false, single(c))
      const second = c.register({ prompt: "hi", kvMeta: {} as never, srcBlockIds: [3] }, true, single(c))
      expect(Result.getOrThrow(first).requestId).toBe(0)
      expect(Result.isFailure(badPrompt) && badPrompt.failure.reason._tag).toBe("InvalidRequest")
      expect(Result.isFailure(badTimeout) && badTimeout.failure.reason).toMatchObject({ _tag: "InvalidArgument", name: "timeout" })
      expect(Result.getOrThrow(second).requestId).toBe(1)
      expect(c.pending.size).toBe(2)
      expect(yield* tags).toEqual(["SubmitRequest", "SubmitRequestWithKv"])
    }).pipe(TestSupport.withRegistry))

  it.effect("cancel: ABORT_REQUEST for a pending request and RequestAborted here; nothing for one not pending", () =>
    Effect.gen(function*() {
      const { connection: c, tags } = yield* connection()
      c.state.acknowledged()
      const entry = Result.getOrThrow(c.register({ prompt: [1] }, false, single(c)))
      c.cancel(entry.requestId)
      c.cancel(entry.requestId)
      c.cancel(42)
      expect(entry.exit?._tag).toBe("Failure")
      expect(c.pending.size).toBe(0)
      expect(yield* tags).toEqual(["SubmitRequest", "AbortRequest"])
    }).pipe(TestSupport.withRegistry))

  it.effect("a request's deadline aborts it with RequestTimeout", () =>
    Effect.gen(function*() {
      const { connection: c, tags } = yield* connection({ requestTimeout: 5 })
      c.state.acknowledged()
      const entry = Result.getOrThrow(c.register({ prompt: [1] }, false, single(c)))
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 30)))
      expect(String(entry.exit)).toContain("RequestTimeout")
      expect(yield* tags).toEqual(["SubmitRequest", "AbortRequest"])
    }).pipe(TestSupport.withRegistry))

  it.effect("a send ZeroMQ refuses fails its request with SendFailed", () =>
    Effect.gen(function*() {
      const { connection: c, warnings } = yield* connection()
      c.state.acknowledged()
      const entry = Result.getOrThrow(c.register({ prompt: [1] }, false, single(c)))
      c.sendFailed(entry.requestId, new Error("EFSM"))
      c.sendFailed(undefined, new Error("a signal"))
      expect(String(entry.exit)).toContain("SendFailed")
      expect(warnings).toEqual(["a message to the coordinator was not sent: Error: a signal"])
    }).pipe(TestSupport.withRegistry))
})
