// The project's disaggregated client against two of Megatron-LM main's real coordinators (a
// prefill one and a decode one, run by run_coordinator.py with the harness's engines doing the
// hand-off): requests half streamed, a quarter dropped after their first event, each answer
// compared with the same request answered by the prefill coordinator alone.
//
//   node scripts/megatron/disagg_check.mjs ROOT PREFILL_ADDR DECODE_ADDR [--requests N]
//
// Prints one JSON line: answers right/checked, dropped, the client's hand-off stats. The engines'
// own books (pinned_blocks, released_blocks, release_noop) are in run_coordinator.py's --stats
// files; disagg_check.sh compares them.
import { pathToFileURL } from "node:url"
import * as path from "node:path"

const [root, prefillAddress, decodeAddress] = process.argv.slice(2)
const at = process.argv.indexOf("--requests")
const count = at === -1 ? 40 : Number(process.argv[at + 1])
const client = await import(pathToFileURL(path.join(root, "packages/client/dist/index.js")).href)
const { Effect, Stream } = await import(pathToFileURL(path.join(root, "node_modules/effect/dist/index.js")).href)
const { Disaggregated, InferenceClient } = client

const program = Effect.gen(function*() {
  const prefill = yield* InferenceClient.make({ address: prefillAddress, protocol: "main" })
  const decode = yield* InferenceClient.make({ address: decodeAddress, protocol: "main" })
  const d = yield* Disaggregated.make({
    prefill: [{ name: prefillAddress, client: prefill }],
    decode: [{ name: decodeAddress, client: decode }],
    decodeGrace: "5 seconds"
  })
  const results = yield* Effect.forEach(Array.from({ length: count }, (_, i) => i), (i) =>
    Effect.gen(function*() {
      const prompt = Array.from({ length: 5 + (i % 37) }, (_, k) => 1 + ((i * 31 + k * 7) % 500))
      const params = { num_tokens_to_generate: 3 + (i % 9), temperature: 1.0 }
      const expected = (yield* prefill.submit(prompt, params)).generated_tokens
      if (i % 4 === 3) {
        yield* Stream.runHead(d.client.stream(prompt, params))
        return "dropped"
      }
      const got = i % 2 === 0
        ? (yield* d.client.submit(prompt, params)).generated_tokens
        : (yield* Stream.runLast(d.client.stream(prompt, params))).value.reply.generated_tokens
      return JSON.stringify(got) === JSON.stringify(expected) ? "right" : `wrong ${JSON.stringify(got)} != ${JSON.stringify(expected)}`
    }), { concurrency: 8 })
  yield* d.idle
  const stats = yield* d.stats
  const checked = results.filter((r) => r !== "dropped")
  console.log(JSON.stringify({
    right: checked.filter((r) => r === "right").length,
    checked: checked.length,
    dropped: results.length - checked.length,
    wrong: checked.filter((r) => r !== "right").slice(0, 3),
    stats
  }))
})

await Effect.runPromise(Effect.scoped(program))
