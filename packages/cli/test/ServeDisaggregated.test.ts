/**
 * `mcore serve --prefill-coordinator P --decode-coordinator D` as a subprocess, in front of two
 * test clusters on loopback speaking Megatron-LM main (whose engines do the KV hand-off as
 * Megatron's do): chat completions answered, streamed or not; log probs refused with a 400;
 * `/metrics` with the hand-off figures, the pinned-blocks gauge back at 0; every pin released
 * once, none early; and a protocol without the hand-off refused by name.
 */
import { beforeAll, describe, expect, it } from "@effect/vitest"
import { Generation, KvPins, TestCluster, WordTokenizer } from "@mcore-effect/testkit"
import { Effect } from "effect"
import { ensureBuilt } from "./support/Build.ts"
import * as Mcore from "./support/Mcore.ts"

beforeAll(ensureBuilt, 300_000)

const chat = (url: string, body: Record<string, unknown>) =>
  Effect.promise(async () => {
    const response = await fetch(`${url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ messages: [{ role: "user", content: "the quick fox" }], max_tokens: 4, ...body })
    })
    return { status: response.status, text: await response.text() }
  })

describe("mcore serve, disaggregated", () => {
  it.live("prefill on one coordinator, decode on another: answers, log probs a 400, /metrics, every pin released", () =>
    Effect.gen(function*() {
      const engine = { stepMs: 0, blockSizeTokens: 4 }
      const prefill = yield* TestCluster.make({ engines: 1, protocol: "main", engine })
      const decode = yield* TestCluster.make({ engines: 1, protocol: "main", engine })
      const tokenizer = yield* WordTokenizer.directory
      const process = yield* Mcore.start([
        "serve", "--port", "0", "--protocol", "main", "--tokenizer", tokenizer,
        "--prefill-coordinator", prefill.address, "--decode-coordinator", decode.address
      ])
      const url = yield* process.line("the URL", (l) => l.startsWith("http://"))
      const plain = yield* chat(url, {})
      expect(plain.status).toBe(200)
      expect(JSON.parse(plain.text).choices[0].message.content.split(" ")).toHaveLength(4)
      const streamed = yield* chat(url, { stream: true })
      expect(streamed.status).toBe(200)
      expect(streamed.text).toContain("data: [DONE]")
      const logprobs = yield* chat(url, { logprobs: true })
      expect(logprobs.status).toBe(400)
      expect(logprobs.text).toContain("log probs")

      const kv = yield* prefill.engines[0]!.waitFor("both releases", (s) => s.kvPins.released === 2)
      expect(kv.kvPins.pinned).toBe(2)
      expect(KvPins.balanced(yield* prefill.kvPins)).toBe(true)
      expect((yield* decode.engines[0]!.snapshot).failure).toBeNull()
      const metrics = yield* Effect.promise(() => fetch(`${url}/metrics`).then((r) => r.text()))
      expect(metrics).toMatch(/mcore_handoffs_started(_total)?(\{[^}]*\})? 2/)
      expect(metrics).toMatch(/mcore_handoffs_decoded(_total)?(\{[^}]*\})? 2/)
      expect(metrics).toMatch(/mcore_handoffs_released(_total)?(\{[^}]*\})? 2/)
      expect(metrics).toMatch(/mcore_handoff_blocks_pinned(\{[^}]*\})? 0/)
      yield* process.kill("SIGTERM")
      yield* process.exited()
    }).pipe(Effect.scoped), 120_000)

  it.live("mcore generate --prefill-address --decode-address: one disaggregated request, its pin released", () =>
    Effect.gen(function*() {
      const engine = { stepMs: 0, blockSizeTokens: 4 }
      const prefill = yield* TestCluster.make({ engines: 1, protocol: "main", engine })
      const decode = yield* TestCluster.make({ engines: 1, protocol: "main", engine })
      const stdout = yield* Mcore.ok([
        "generate", "--prefill-address", prefill.address, "--decode-address", decode.address, "--protocol", "main",
        "-n", "5", "--json", "--token-ids", "1 2 3 4 5 6"
      ])
      expect(JSON.parse(stdout).generated_tokens).toEqual(Generation.tokens([1, 2, 3, 4, 5, 6], 5))
      yield* prefill.engines[0]!.waitFor("the release", (s) => s.kvPins.released === 1)
      expect(KvPins.balanced(yield* prefill.kvPins)).toBe(true)
      // Only one of the two, or with --address: a usage error naming the flag.
      const alone = yield* Mcore.run(["generate", "--prefill-address", prefill.address, "--protocol", "main", "hi"])
      expect(alone.code).toBe(2)
      expect(alone.stderr).toContain("--prefill-address")
      const v019 = yield* Mcore.run([
        "generate", "--prefill-address", prefill.address, "--decode-address", decode.address, "--protocol", "core_v0.19", "hi"
      ])
      expect(v019.code).toBe(2)
      expect(v019.stderr).toContain("core_v0.19")
    }).pipe(Effect.scoped), 120_000)

  it.live("a protocol without the hand-off is refused by name, exit code 2, before connecting", () =>
    Effect.gen(function*() {
      const ended = yield* Mcore.run([
        "serve", "--protocol", "core_v0.19", "--tokenizer", ".",
        "--prefill-coordinator", "tcp://127.0.0.1:1", "--decode-coordinator", "tcp://127.0.0.1:2"
      ])
      expect(ended.code).toBe(2)
      expect(ended.stderr).toContain("--protocol core_v0.19 does not carry the KV hand-off")
    }), 60_000)
})
