/**
 * Megatron-LM's releases core_v0.17 to core_v0.19: every message one msgpack frame, a plain
 * SUBMIT_REQUEST `[h, request_id, prompt, sampling_params]` and a reply `[h, request_id,
 * reply]`; an engine step's replies `[h, [reply, ...]]`. No partials (so no streaming), no
 * abort, no KV hand-off, no media; the coordinator hashes prompts itself. core_v0.17 and
 * core_v0.18 number their headers with `enum.auto()` from 1 (core_v0.18 adds TP_BROADCAST, which
 * only an engine's ranks exchange), core_v0.19 with the IntEnum table and the profiler signals.
 * Each release's `SamplingParams` has fewer fields than the next.
 *
 * core_v0.16 is declared apart (`coreV016.ts`): its replies are request records
 * (`{"requests": [...]}`) and PAUSE and STOP are acknowledged through the coordinator.
 *
 * @since 0.2.0
 * @internal
 */
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import { type Dialect, featuresOf, type Name, unsupported } from "../../Dialect.ts"
import * as Frames from "../../Frames.ts"
import * as Headers from "../../Headers.ts"
import * as M from "../../Messages.ts"
import * as MessageSpec from "../../MessageSpec.ts"
import { ReplyMap } from "../../Reply.ts"
import { KnownFields, withKnownFields } from "../../SamplingParams.ts"
import { RequestId } from "../../WireTypes.ts"
import { parts } from "./submissionParts.ts"

const H = Headers.values

/**
 * `[h, request_id, prompt, sampling_params]`, the parameters with the release's fields.
 *
 * @internal
 */
export const submitRequest = (samplingFieldCount: number) =>
  MessageSpec.make("SubmitRequest", H.SUBMIT_REQUEST, {
    metadata: { requestId: RequestId },
    bodies: { prompt: M.PromptBody, samplingParams: withKnownFields(samplingFieldCount) }
  })

/**
 * An engine step's finished requests: `[h, [reply, ...]]`.
 *
 * @internal
 */
export const EngineReplyBatch = MessageSpec.make("EngineReplyBatch", H.ENGINE_REPLY, {
  metadata: {},
  bodies: { replies: Schema.Array(ReplyMap) }
})

/**
 * `enum.auto()` from 1, in declaration order (core_v0.16.0 to core_v0.18.0 `headers.py`).
 *
 * @internal
 */
export const autoTable = (names: ReadonlyArray<Headers.HeaderName>): Headers.Table =>
  Headers.makeTable(Object.fromEntries(names.map((name, i) => [name, i + 1])))

const v017Names: ReadonlyArray<Headers.HeaderName> = [
  "CONNECT",
  "CONNECT_ACK",
  "SUBMIT_REQUEST",
  "ENGINE_REPLY",
  "PAUSE",
  "UNPAUSE",
  "SUSPEND",
  "RESUME",
  "SET_GENERATION_EPOCH",
  "STOP",
  "DISCONNECT",
  "SHUTDOWN"
]

const v019Table = Headers.makeTable({
  CONNECT: H.CONNECT,
  CONNECT_ACK: H.CONNECT_ACK,
  SUBMIT_REQUEST: H.SUBMIT_REQUEST,
  ENGINE_REPLY: H.ENGINE_REPLY,
  PAUSE: H.PAUSE,
  UNPAUSE: H.UNPAUSE,
  SUSPEND: H.SUSPEND,
  RESUME: H.RESUME,
  SET_GENERATION_EPOCH: H.SET_GENERATION_EPOCH,
  STOP: H.STOP,
  START_CUDA_PROFILER: H.START_CUDA_PROFILER,
  STOP_CUDA_PROFILER: H.STOP_CUDA_PROFILER,
  DISCONNECT: H.DISCONNECT,
  SHUTDOWN: H.SHUTDOWN,
  TP_BROADCAST: H.TP_BROADCAST
})

const known = Object.keys(KnownFields.fields)

/**
 * What a release differs in beyond its table and sampling fields (core_v0.16's acknowledgements,
 * and its coordinator's dropping a reply for a closed client).
 *
 * @internal
 */
export interface ReleaseWire {
  readonly coordinator: ReadonlyArray<MessageSpec.Any>
  readonly engine: ReadonlyArray<MessageSpec.Any>
  readonly closedClientReply: Dialect["closedClientReply"]
}

/**
 * A release's dialect: one frame per message, the signals its table has, the four-element
 * SUBMIT_REQUEST, no KV hand-off.
 *
 * @internal
 */
export const release = (
  name: Name,
  megatron: string,
  headers: Headers.Table,
  samplingFieldCount: number,
  wire: ReleaseWire = {
    coordinator: [M.ConnectAck, M.EngineReply],
    engine: [EngineReplyBatch, M.Disconnect],
    closedClientReply: "exit"
  }
): Dialect => {
  const options = { framing: "single", headers } as const
  const signals = M.controls.filter((spec) => headers.values[spec.headerName] !== undefined)
  const dialect: Dialect = {
    name,
    megatron,
    framing: "single",
    headers,
    features: featuresOf(headers),
    closedClientReply: wire.closedClientReply,
    samplingFields: known.slice(0, samplingFieldCount),
    client: Frames.codec([M.Connect, submitRequest(samplingFieldCount), ...signals], options),
    coordinator: Frames.codec(wire.coordinator, options),
    engine: Frames.codec(wire.engine, options),
    submit: (input, hashing) =>
      Result.map(parts(dialect, input, hashing), (p) => ({
        _tag: "SubmitRequest",
        requestId: input.requestId,
        prompt: p.prompt,
        samplingParams: p.samplingParams
      })),
    submitWithKv: () => Result.fail(unsupported(dialect, "kvHandoff"))
  }
  return dialect
}

/** @internal */
export const coreV019 = release("core_v0.19", "core_v0.19", v019Table, known.indexOf("return_prompt_tokens") + 1)
/** @internal */
export const coreV018 = release(
  "core_v0.18",
  "core_v0.18",
  autoTable([...v017Names, "TP_BROADCAST"]),
  known.indexOf("detokenize_stop_sequence") + 1
)
/** @internal */
export const coreV017 = release("core_v0.17", "core_v0.17", autoTable(v017Names), known.indexOf("detokenize_stop_sequence") + 1)
