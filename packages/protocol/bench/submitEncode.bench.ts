/**
 * `pnpm bench submitEncode`: building the five frames of one SUBMIT_REQUEST with an 8,192-token
 * prompt, the protocol's way (`Submission.submitRequest`, which validates the prompt and the
 * sampling parameters, then `Messages.Client.encode`) against a bare msgpackr `pack` of the same
 * values (frame 0 array, prompt array, nil, nil, nil) with nothing checked; and the same
 * submission in Megatron-LM's dialects (`dialect.submit` + `Dialect.encodeClient`): main's one
 * frame `[20, id, prompt, sp, nil]` and core_v0.19's `[20, id, prompt, sp]`, each against the same
 * baseline, so that a dialect's cost shows beside the reference's.
 *
 * The ratio is protocol ops/s over msgpackr ops/s, each sample paired with a baseline sample taken
 * just before it. Times are this process's CPU time (`process.cpuUsage`): on the shared machine a
 * descheduled sample would otherwise count as slow. `--quick` takes fewer samples.
 */
import * as Result from "effect/Result"
import * as Dialect from "../src/Dialect.ts"
import * as DialectCatalog from "../src/DialectCatalog.ts"
import { Packr } from "msgpackr"
import * as Messages from "../src/Messages.ts"
import * as SamplingParams from "../src/SamplingParams.ts"
import * as Submission from "../src/Submission.ts"
import { Timing } from "@mcore-effect/testkit"

const { median, repeatsFor, secondsPer } = Timing

const TOKENS = 8_192
const REQUEST_ID = 123_456
const SAMPLES = process.argv.includes("--quick") || process.env.BENCH_QUICK === "1" ? 7 : 31
/** Each timed sample repeats its function for at least this long. */
const SAMPLE_MS = 20
const timing = { sampleMs: SAMPLE_MS, warmMs: 300, minRuns: 50 }

/** Deterministic token ids in a Llama-3-sized vocabulary (about half need a uint32). */
const prompt = (): Array<number> => {
  let state = 42
  return Array.from({ length: TOKENS }, () => {
    state = (Math.imul(state, 1_664_525) + 1_013_904_223) >>> 0
    return state % 128_256
  })
}


const sameBytes = (a: ReadonlyArray<Uint8Array>, b: ReadonlyArray<Uint8Array>): boolean =>
  a.length === b.length && a.every((frame, i) => Buffer.compare(frame, b[i]!) === 0)

export const run = async (): Promise<{
  readonly protocolOps: number
  readonly msgpackrOps: number
  readonly ratio: number
  readonly dialects: Readonly<Record<string, number>>
}> => {
  const tokens = prompt()
  const samplingParamsInput = { num_tokens_to_generate: 16 }
  // The baseline packs the map the protocol sends (defaults filled in, Python field order).
  const samplingParams = Result.getOrThrow(SamplingParams.make(samplingParamsInput))
  const packr = new Packr({ useRecords: false })

  const protocol = (): ReadonlyArray<Uint8Array> => {
    const message = Submission.submitRequest(
      { requestId: REQUEST_ID, prompt: tokens, samplingParams: samplingParamsInput },
      {}
    )
    if (Result.isFailure(message)) throw new Error(`refused: ${message.failure.message}`)
    const frames = Messages.Client.encode(message.success)
    if (Result.isFailure(frames)) throw new Error(`not encodable: ${frames.failure.message}`)
    return frames.success
  }
  const msgpackr = (): ReadonlyArray<Uint8Array> => [
    packr.pack([20, REQUEST_ID, samplingParams, null]),
    packr.pack(tokens),
    packr.pack(null),
    packr.pack(null),
    packr.pack(null)
  ]

  const inDialect = (name: Dialect.Name) => {
    const dialect = DialectCatalog.get(name)
    return (): ReadonlyArray<Uint8Array> => {
      const message = dialect.submit({ requestId: REQUEST_ID, prompt: tokens, samplingParams: samplingParamsInput }, {})
      if (Result.isFailure(message)) throw new Error(`refused: ${message.failure.message}`)
      return Result.getOrThrow(Dialect.encodeClient(dialect, message.success))
    }
  }
  const dialectPaths = (["main", "core_v0.19"] as const).map((name) => ({ name, f: inDialect(name) }))

  // The comparison is only fair if both build the same message: check the bytes first.
  const ours = protocol()
  const theirs = msgpackr()
  if (ours.length !== 5) throw new Error(`expected five frames, got ${ours.length}`)
  const identical = sameBytes(ours, theirs)

  const protocolRepeats = repeatsFor(protocol, timing)
  const msgpackrRepeats = repeatsFor(msgpackr, timing)
  const protocolOps: Array<number> = []
  const msgpackrOps: Array<number> = []
  const ratios: Array<number> = []
  for (let i = 0; i < SAMPLES; i++) {
    const base = secondsPer(msgpackr, msgpackrRepeats)
    const seconds = secondsPer(protocol, protocolRepeats)
    msgpackrOps.push(1 / base)
    protocolOps.push(1 / seconds)
    ratios.push(base / seconds)
  }

  // Each dialect, paired with the baseline likewise.
  const dialectRatios: Record<string, number> = {}
  const dialectOps: Record<string, number> = {}
  for (const { name, f } of dialectPaths) {
    const repeats = repeatsFor(f, timing)
    const ops: Array<number> = []
    const paired: Array<number> = []
    for (let i = 0; i < SAMPLES; i++) {
      const base = secondsPer(msgpackr, msgpackrRepeats)
      const seconds = secondsPer(f, repeats)
      ops.push(1 / seconds)
      paired.push(base / seconds)
    }
    dialectOps[name] = median(ops)
    dialectRatios[name] = median(paired)
  }

  const result = {
    protocolOps: median(protocolOps),
    msgpackrOps: median(msgpackrOps),
    ratio: median(ratios),
    dialects: dialectRatios
  }
  const bytes = ours.reduce((n, frame) => n + frame.byteLength, 0)
  console.log(`\nsubmitEncode: SUBMIT_REQUEST, ${TOKENS.toLocaleString("en-US")}-token prompt (${bytes.toLocaleString("en-US")} bytes in 5 frames), median of ${SAMPLES} paired samples of CPU time`)
  console.log(
    identical
      ? "frames byte-identical between the two paths"
      : "NOTE: the two paths' frames differ in bytes (the protocol writes Python's encoding; see Msgpack.ts)"
  )
  console.table([
    {
      path: "bare msgpackr pack (no validation)",
      "ops/s": Math.round(result.msgpackrOps).toLocaleString("en-US"),
      "µs/op": (1e6 / result.msgpackrOps).toFixed(1),
      ratio: "1.00x"
    },
    {
      path: "Submission.submitRequest + Messages.Client.encode",
      "ops/s": Math.round(result.protocolOps).toLocaleString("en-US"),
      "µs/op": (1e6 / result.protocolOps).toFixed(1),
      ratio: `${result.ratio.toFixed(2)}x`
    },
    ...dialectPaths.map(({ name }) => ({
      path: `${name}: dialect.submit + Dialect.encodeClient (one frame)`,
      "ops/s": Math.round(dialectOps[name]!).toLocaleString("en-US"),
      "µs/op": (1e6 / dialectOps[name]!).toFixed(1),
      ratio: `${dialectRatios[name]!.toFixed(2)}x`
    }))
  ])
  return result
}
