/**
 * Text in, text out, over real ZeroMQ sockets against the testkit's coordinator and engines,
 * with the word-level tokenizer the testkit generates from the engines' vocabulary: what the
 * engines generate is known (Generation.tokens), so the expected text is too.
 */
import { describe, expect, it } from "@effect/vitest"
import { InferenceClient } from "@mcore-effect/client"
import { Messages, Msgpack } from "@mcore-effect/protocol"
import { Generation, type Trace, type TraceRecorder, TestSupport, Vocabulary, WordTokenizer } from "@mcore-effect/testkit"
import { Effect, Fiber, Latch, Result, Stream, Tracer } from "effect"
import { TextGeneration, Tokenizer } from "../src/index.ts"
import { quiet, setup } from "./support/Setup.ts"

const prompt = "the quick fox"
const promptIds = Vocabulary.tokenize(prompt)
const expectedText = (ids: ReadonlyArray<number>, n: number) => Vocabulary.detokenize(Generation.tokens(ids, n))

/** The client's messages on the wire, by kind. */
const sent = (entries: ReadonlyArray<Trace.Entry>) => {
  const submits: Array<{ readonly requestId: number; readonly prompt: unknown }> = []
  const aborts: Array<number> = []
  for (const entry of entries) {
    if (entry.dir !== "client->coordinator") continue
    const m = Messages.Client.decode(entry.frames)
    if (Result.isFailure(m)) continue
    if (m.success._tag === "SubmitRequest") {
      submits.push({ requestId: m.success.requestId, prompt: Msgpack.decode(entry.frames[1]!) })
    }
    if (m.success._tag === "AbortRequest") aborts.push(m.success.requestId)
  }
  return { submits, aborts }
}

/**
 * After a last round trip (everything sent before it has then passed the recorder): exactly one
 * ABORT went out, for the first request.
 */
const expectOneAbort = (text: TextGeneration.Service, recorder: TraceRecorder.Handle) =>
  Effect.gen(function*() {
    const barrier = yield* text.generate("one", { samplingParams: { num_tokens_to_generate: 1 } })
    const { aborts, submits } = sent(
      yield* recorder.waitFor("the barrier", (e) => sent(e).submits.some((s) => s.requestId === barrier.requestId))
    )
    expect(aborts).toEqual([submits[0]!.requestId])
  })

const deltasOf = (parts: ReadonlyArray<TextGeneration.StreamPart>) =>
  parts.flatMap((p) => (p._tag === "TextDelta" ? [p] : []))

const finishOf = (parts: ReadonlyArray<TextGeneration.StreamPart>) => {
  const last = parts[parts.length - 1]!
  expect(last._tag).toBe("Finish")
  expect(parts.filter((p) => p._tag === "Finish")).toHaveLength(1)
  return last as TextGeneration.Finish
}

describe("TextGeneration over the test cluster", () => {
  it.live("generate: text in, the engines' words out, with the finish reason and usage", () =>
    Effect.gen(function*() {
      const { recorder, text } = yield* setup()
      const result = yield* text.generate(prompt, { samplingParams: { num_tokens_to_generate: 5 } })
      expect(result.text).toBe(expectedText(promptIds, 5))
      expect(result.tokenIds).toEqual(Generation.tokens(promptIds, 5))
      expect(result.promptTokenIds).toEqual(promptIds)
      expect(result.finishReason).toBe("length")
      expect(result.usage).toEqual({ promptTokens: 3, completionTokens: 5, cachedTokens: 0, totalTokens: 8 })
      expect(result.logProbs).toBeUndefined()
      // Token ids went out, not text; termination_id is the tokenizer's eos.
      const { submits } = sent(yield* recorder.waitFor("the submit", (e) => sent(e).submits.length === 1))
      expect(submits[0]!.prompt).toEqual(promptIds)
      expect(result.requestId).toBe(submits[0]!.requestId)
    }).pipe(quiet))

  it.live("termination_id -1 (vLLM's ignore_eos): no eos ends the text, the engine's nor the tokenizer's", () =>
    Effect.gen(function*() {
      const { client } = yield* setup()
      // A tokenizer whose eos is the third word the engines will generate for the prompt.
      const third = Generation.tokens(promptIds, 3)[2]!
      const tokenizer = yield* Tokenizer.fromFiles(
        { tokenizer: WordTokenizer.tokenizerJson(), config: { ...WordTokenizer.tokenizerConfig(), eos_token: Vocabulary.words[third] } },
        "eos-is-a-word"
      )
      const text = yield* TextGeneration.make(client, tokenizer)
      const ended = yield* text.generate({ tokens: promptIds }, { samplingParams: { num_tokens_to_generate: 5 } })
      expect(ended.finishReason).toBe("stop")
      expect(ended.tokenIds).toEqual(Generation.tokens(promptIds, 3))
      const ignoring = yield* text.generate({ tokens: promptIds }, { samplingParams: { num_tokens_to_generate: 5, termination_id: -1 } })
      expect(ignoring.finishReason).toBe("length")
      expect(ignoring.tokenIds).toEqual(Generation.tokens(promptIds, 5))
    }).pipe(quiet))

  it.live("generate runs in a TextGeneration.generate span when a tracer is installed, the client's span inside it", () =>
    Effect.gen(function*() {
      const { spans, tracer } = TestSupport.recordingTracer()
      const { text } = yield* setup()
      yield* text.generate(prompt, { samplingParams: { num_tokens_to_generate: 2 } }).pipe(
        Effect.provideService(Tracer.Tracer, tracer)
      )
      const generate = spans.find((s) => s.name === "TextGeneration.generate")
      expect(generate?.status._tag).toBe("Ended")
      const submit = spans.find((s) => s.name.startsWith("InferenceClient."))!
      expect(submit.parent._tag === "Some" && submit.parent.value.spanId).toBe(generate!.spanId)
    }).pipe(quiet))

  it.live("requestId is this client's id (what abort takes); coordinatorRequestId the reply's request_id", () =>
    Effect.gen(function*() {
      const { cluster, text } = yield* setup()
      // Another client's request first: the coordinator's ids run ahead of this client's.
      const other = yield* InferenceClient.make({ address: cluster.address, protocol: cluster.protocol })
      yield* other.submit([1, 2], { num_tokens_to_generate: 1 })
      const generated = yield* text.generate(prompt, { samplingParams: { num_tokens_to_generate: 2 } })
      const streamed = finishOf(yield* Stream.runCollect(text.stream(prompt, { samplingParams: { num_tokens_to_generate: 3 } })))
      expect([generated.requestId, streamed.requestId]).toEqual([0, 1])
      expect([generated.coordinatorRequestId, streamed.coordinatorRequestId]).toEqual([1, 2])
    }).pipe(quiet))

  it.live("generate: cached tokens come from num_cached_tokens; log probs (the prompt's too) pass through", () =>
    Effect.gen(function*() {
      const { text } = yield* setup({ engine: { blockSizeTokens: 2 } })
      const long = "the quick fox runs over the dog and the cat"
      yield* text.generate(long, { samplingParams: { num_tokens_to_generate: 2 } })
      const again = yield* text.generate(long, { samplingParams: { num_tokens_to_generate: 3 }, logProbs: true })
      expect(again.usage.cachedTokens).toBeGreaterThan(0)
      expect(again.usage.cachedTokens).toBeLessThanOrEqual(again.usage.promptTokens)
      expect(again.logProbs).toEqual(again.tokenIds.map(Generation.logProbOf))
      expect(again.promptLogProbs).toBeUndefined()
      const scored = yield* text.generate(prompt, { samplingParams: { num_tokens_to_generate: 2 }, promptLogProbs: true })
      expect(scored.promptLogProbs).toEqual(promptIds.slice(1).map(Generation.logProbOf))
      expect(scored.logProbs).toEqual(scored.tokenIds.map(Generation.logProbOf))
    }).pipe(quiet))

  it.live("stream: deltas as tokens arrive, the final reply's tail included, then one Finish", () =>
    Effect.gen(function*() {
      const { text } = yield* setup({ engine: { stepMs: 2 } })
      for (const n of [1, 2, 4, 9]) {
        const parts = yield* Stream.runCollect(text.stream(prompt, { samplingParams: { num_tokens_to_generate: n } }))
        const deltas = deltasOf(parts)
        const finish = finishOf(parts)
        expect(deltas.map((d) => d.text).join("")).toBe(expectedText(promptIds, n))
        expect(deltas.flatMap((d) => d.tokenIds)).toEqual(Generation.tokens(promptIds, n))
        expect(deltas.every((d) => d.text !== "")).toBe(true)
        expect(finish.text).toBe(expectedText(promptIds, n))
        expect(finish.finishReason).toBe("length")
        expect(finish.usage.completionTokens).toBe(n)
      }
    }).pipe(quiet))

  it.live("typed replies (deserialize: true) and many streams at once, each its own text", () =>
    Effect.gen(function*() {
      const { text } = yield* setup({ engines: 2, engine: { stepMs: 1 }, client: { deserialize: true } })
      const generated = yield* text.generate(prompt, { samplingParams: { num_tokens_to_generate: 3 } })
      expect(generated.text).toBe(expectedText(promptIds, 3))
      const prompts = Array.from({ length: 40 }, (_, i) => `${Vocabulary.word(1 + (i % 60))} ${Vocabulary.word(1 + ((i * 7) % 60))} fox`)
      const results = yield* Effect.forEach(
        prompts,
        (p, i) => Stream.runCollect(text.stream(p, { samplingParams: { num_tokens_to_generate: 1 + (i % 9) } })),
        { concurrency: "unbounded" }
      )
      results.forEach((parts, i) => {
        const expected = expectedText(Vocabulary.tokenize(prompts[i]!), 1 + (i % 9))
        expect(deltasOf(parts).map((d) => d.text).join("")).toBe(expected)
        expect(finishOf(parts).text).toBe(expected)
      })
    }).pipe(quiet))

  it.live("chat: messages rendered with the template, encoded without extra specials, answered", () =>
    Effect.gen(function*() {
      const { recorder, text } = yield* setup()
      const messages = [{ role: "system", content: "be quick" }, { role: "user", content: "the red fox" }]
      const result = yield* text.generate({ messages }, { samplingParams: { num_tokens_to_generate: 3 } })
      const ids = ["<|system|>", "be", "quick", "<|end|>", "<|user|>", "the", "red", "fox", "<|end|>", "<|assistant|>"].map(
        (t) => WordTokenizer.idOf(t) ?? WordTokenizer.idOf("<unk>")!
      )
      expect(result.promptTokenIds).toEqual(ids)
      expect(result.text).toBe(expectedText(ids, 3))
      const { submits } = sent(yield* recorder.waitFor("the submit", (e) => sent(e).submits.length === 1))
      expect(submits[0]!.prompt).toEqual(ids)
    }).pipe(quiet))

  it.live("chat with a prefill: the prefill tokenized after the rendered chat; media go with the request, as sent", () =>
    Effect.gen(function*() {
      const { recorder, text } = yield* setup()
      const messages = [{ role: "user", content: "the red fox" }]
      const image = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 1, 2, 3])
      const result = yield* text.generate(
        { messages, prefill: "the quick" },
        { samplingParams: { num_tokens_to_generate: 2 }, multiModalData: { image: [image] } }
      )
      const ids = ["<|user|>", "the", "red", "fox", "<|end|>", "<|assistant|>", "the", "quick"].map((t) => WordTokenizer.idOf(t)!)
      expect(result.promptTokenIds).toEqual(ids)
      expect(result.text).toBe(expectedText(ids, 2))
      const entries = yield* recorder.waitFor("the submit", (e) => sent(e).submits.length === 1)
      const submit = entries.find((e) => e.dir === "client->coordinator" && sent([e]).submits.length === 1)!
      const media = Msgpack.decode(submit.frames[3]!) as { readonly image: ReadonlyArray<Uint8Array> }
      expect(media.image.map((bytes) => Array.from(bytes))).toEqual([Array.from(image)])
      // The prefill is no render option: the same chat without it renders as before.
      expect(yield* text.promptTokens({ messages })).toEqual(ids.slice(0, 6))
    }).pipe(quiet))

  it.live("a stop string ends the text where it begins; the stream ends early and aborts once", () =>
    Effect.gen(function*() {
      const { cluster, recorder, text } = yield* setup({ engine: { stepMs: 5 } })
      const generated = Generation.tokens(promptIds, 40)
      // A word first generated at position 3 or later, so partials come before it.
      const at = generated.findIndex((id, i) => i >= 3 && generated.indexOf(id) === i)
      const stop = ` ${Vocabulary.word(generated[at]!)}`
      // stop_words null: the engine is not told, so the text layer finds it, mid-stream.
      const parts = yield* Stream.runCollect(
        text.stream(prompt, { samplingParams: { num_tokens_to_generate: 40, stop_words: null }, stop: [stop] })
      )
      const finish = finishOf(parts)
      expect(finish.text).toBe(Vocabulary.detokenize(generated.slice(0, at)))
      expect(deltasOf(parts).map((d) => d.text).join("")).toBe(finish.text)
      expect(finish.finishReason).toBe("stop")
      expect(finish.stopString).toBe(stop)
      expect(finish.tokenIds).toEqual(generated.slice(0, at + 1))
      yield* cluster.engines[0]!.waitFor("the abort", (s) => s.aborted.length === 1)
      const { aborts, submits } = sent(yield* recorder.waitFor("the abort", (e) => sent(e).aborts.length >= 1))
      expect(aborts).toEqual([submits[0]!.requestId])
    }).pipe(quiet))

  it.live("generate with a stop string: the text is cut, the finish reason is stop", () =>
    Effect.gen(function*() {
      const { text } = yield* setup()
      const generated = Generation.tokens(promptIds, 12)
      const at = generated.findIndex((id, i) => i >= 2 && generated.indexOf(id) === i)
      const result = yield* text.generate(prompt, {
        samplingParams: { num_tokens_to_generate: 12, stop_words: null },
        stop: [Vocabulary.word(generated[at]!)]
      })
      expect(result.text).toBe(`${Vocabulary.detokenize(generated.slice(0, at))} `)
      expect(result.finishReason).toBe("stop")
      expect(result.stopString).toBe(Vocabulary.word(generated[at]!))
      // Sent as stop_words too (the default): the engine stops there itself, short of the budget.
      const engineStop = yield* text.generate(prompt, { samplingParams: { num_tokens_to_generate: 12 }, stop: [Vocabulary.word(generated[at]!)] })
      expect(engineStop.text.trimEnd()).toBe(Vocabulary.detokenize(generated.slice(0, at)))
      expect(engineStop.finishReason).toBe("stop")
      expect(engineStop.tokenIds.length).toBeLessThan(12)
    }).pipe(quiet))

  it.live("interrupting a stream mid-way sends exactly one ABORT", () =>
    Effect.gen(function*() {
      const { cluster, recorder, text } = yield* setup({ engine: { stepMs: 10 } })
      const first = yield* Latch.make()
      const fiber = yield* text.stream(prompt, { samplingParams: { num_tokens_to_generate: 200 } }).pipe(
        Stream.runForEach(() => first.open),
        Effect.forkChild
      )
      yield* first.await
      yield* Fiber.interrupt(fiber)
      yield* cluster.engines[0]!.waitFor("the abort", (s) => s.aborted.length === 1)
      yield* expectOneAbort(text, recorder)
    }).pipe(quiet))

  it.live("interrupting generate sends exactly one ABORT", () =>
    Effect.gen(function*() {
      const { cluster, recorder, text } = yield* setup({ engine: { stepMs: 10 } })
      const fiber = yield* Effect.forkChild(text.generate(prompt, { samplingParams: { num_tokens_to_generate: 500 } }))
      yield* recorder.waitFor("the submit", (e) => sent(e).submits.length === 1)
      yield* Fiber.interrupt(fiber)
      yield* cluster.engines[0]!.waitFor("the abort", (s) => s.aborted.length === 1)
      yield* expectOneAbort(text, recorder)
    }).pipe(quiet))

  it.live("taking a few deltas and stopping aborts the request once", () =>
    Effect.gen(function*() {
      const { recorder, text } = yield* setup({ engine: { stepMs: 5 } })
      const parts = yield* Stream.runCollect(
        text.stream(prompt, { samplingParams: { num_tokens_to_generate: 100 } }).pipe(Stream.take(2))
      )
      expect(parts.map((p) => p._tag)).toEqual(["TextDelta", "TextDelta"])
      yield* expectOneAbort(text, recorder)
    }).pipe(quiet))

  it.live("a request aborted from elsewhere finishes its stream with finish reason aborted", () =>
    Effect.gen(function*() {
      const { client, recorder, text } = yield* setup({ engine: { stepMs: 10 } })
      const latch = yield* Latch.make()
      const fiber = yield* text.stream(prompt, { samplingParams: { num_tokens_to_generate: 200 } }).pipe(
        Stream.tap(() => latch.open),
        Stream.runCollect,
        Effect.forkChild
      )
      yield* latch.await
      const { submits } = sent((yield* recorder.trace).entries)
      yield* client.abort(submits[0]!.requestId)
      const parts = yield* Fiber.join(fiber)
      const finish = finishOf(parts)
      expect(finish.finishReason).toBe("aborted")
      expect(finish.text).toBe(deltasOf(parts).map((d) => d.text).join(""))
      expect(finish.text.length).toBeGreaterThan(0)
    }).pipe(quiet))

  it.live("bad input is refused before anything goes out", () =>
    Effect.gen(function*() {
      const { cluster, recorder, text } = yield* setup()
      const refusals = [
        yield* Effect.flip(text.generate(prompt, { stop: [""] })),
        yield* Effect.flip(text.generate({ tokens: [1, 2, 1_000_000] })),
        yield* Effect.flip(text.generate({ messages: [] })),
        yield* Effect.flip(text.generate({ messages: [{ role: "robot", content: "x" }] })),
        yield* Effect.flip(text.generate("   ")),
        yield* Effect.flip(Stream.runDrain(text.stream(prompt, { topLogProbs: -1 })))
      ]
      expect(refusals.map((e) => e._tag === "TextError" ? e.reason._tag : e.reason._tag)).toEqual([
        "InvalidArgument",
        "InvalidArgument",
        "InvalidArgument",
        "TemplateError",
        "InvalidArgument",
        "InvalidArgument"
      ])
      const invalidParams = yield* Effect.flip(text.generate(prompt, { samplingParams: { temperature: -1 } }))
      expect(invalidParams._tag === "ClientError" && invalidParams.reason._tag).toBe("InvalidRequest")
      // @ts-expect-error: a misspelt field does not compile, and is refused at run time too
      const typo = yield* Effect.flip(text.generate(prompt, { samplingParams: { temprature: 0.5 } }))
      expect(typo._tag === "ClientError" && typo.reason._tag === "InvalidRequest" && typo.reason.error.reason)
        .toMatchObject({ _tag: "UnknownSamplingParam", field: "temprature", didYouMean: "temperature" })
      const engine = yield* cluster.engines[0]!.snapshot
      expect(engine.received.filter((m) => m.name === "SUBMIT_REQUEST")).toHaveLength(0)
      expect(sent((yield* recorder.trace).entries).submits).toHaveLength(0)
    }).pipe(quiet))
})
