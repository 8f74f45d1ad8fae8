/**
 * Rough throughput of a test coordinator with engines (stepMs 0), driven by a plain ZeroMQ
 * DEALER that blasts SUBMITs and counts replies. Not a test: prints requests per second.
 *
 *   node --conditions=source --import tsx packages/testkit/bench/throughput.ts [requests] [engines] [detokenize] [record] [address]
 *
 * `detokenize` (default true) is the requests' `detokenize_generations`: the coordinator fills
 * `generated_text` into each reply. `record` (default false) keeps the default inspection logs.
 */
import { Headers, Msgpack, SamplingParams } from "@mcore-effect/protocol"
import { Effect, Logger } from "effect"
import * as Zmq from "zeromq"
import { TestCluster } from "../src/index.ts"

const H = Headers.values
const total = Number(process.argv[2] ?? 100_000)
const engines = Number(process.argv[3] ?? 2)
const detokenize = (process.argv[4] ?? "true") === "true"
const record = (process.argv[5] ?? "false") === "true"
const address = process.argv[6] ?? "tcp://127.0.0.1:0"
const NIL = Uint8Array.of(0xc0)

const program = Effect.gen(function*() {
  const cluster = yield* TestCluster.make(
    record
      ? { engines, engine: { stepMs: 0, maxActiveRequests: Number(process.env.MAX_ACTIVE ?? 1024) }, coordinator: { address } }
      : { engines, engine: { stepMs: 0, recordLimit: 0, maxActiveRequests: Number(process.env.MAX_ACTIVE ?? 1024) }, coordinator: { address, recordLimit: 0 } }
  )
  const client = new Zmq.Dealer({ linger: 0, sendHighWaterMark: 0, receiveHighWaterMark: 0, sendTimeout: 0 })
  client.connect(cluster.address)
  yield* Effect.promise(async () => {
    await client.send([Msgpack.encode([H.CONNECT])])
    await client.receive()
    const params = { ...SamplingParams.defaults, num_tokens_to_generate: 8, detokenize_generations: detokenize }
    const prompt = Msgpack.encode("the quick brown fox jumps over the lazy dog")
    const started = performance.now()
    let received = 0
    const done = (async () => {
      while (received < total) {
        const frames = await client.receive()
        if (frames[0]![1] === H.ENGINE_REPLY) received++
      }
    })()
    for (let id = 0; id < total; id++) {
      await client.send([Msgpack.encode([H.SUBMIT_REQUEST, id, params, null]), prompt, NIL, NIL, NIL])
    }
    const sentAt = performance.now()
    await done
    const seconds = (performance.now() - started) / 1000
    console.log(
      `${total} requests, ${engines} engine(s), detokenize=${detokenize}, record=${record}: sent in ${((sentAt - started) / 1000).toFixed(2)} s, ` +
        `all replies in ${seconds.toFixed(2)} s: ${Math.round(total / seconds)} requests/s`
    )
    client.close()
  })
}).pipe(Effect.scoped, Effect.provide(Logger.layer([])))

Effect.runPromise(program).then(() => console.log("closed"))
