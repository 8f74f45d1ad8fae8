/**
 * `mcore coordinator --external-engines N`: the coordinator package's `Coordinator`, bound where
 * `--listen` says (any interface: the engines of a Megatron-LM deployment may run on other
 * hosts), with the model's tokenizer, for N engines to dial as Megatron's do
 * (`start_listening_to_data_parallel_coordinator(..., launch_inference_coordinator=False)`).
 *
 * @since 0.2.0
 * @internal
 */
import { Coordinator, type CoordinatorError, type CoordinatorTokenizer, type Routing } from "@mcore-effect/coordinator"
import type { Dialect } from "@mcore-effect/protocol"
import { Tokenizer } from "@mcore-effect/text"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as Output from "../Output.ts"
import { watchRegistrations, watchState } from "./CoordinatorWatch.ts"

/**
 * The `--tokenizer` directory could not be loaded.
 *
 * @since 0.2.0
 */
export class TokenizerUnusable extends Data.TaggedError("TokenizerUnusable")<{
  readonly directory: string
  readonly why: string
}> {
  override get message(): string {
    return `TokenizerUnusable: cannot load the tokenizer in ${this.directory}: ${this.why}`
  }
}

/**
 * The model's tokenizer as the coordinator uses it, as Megatron's `detokenize` does: trailing
 * end-of-document tokens (the tokenizer's eos ids) dropped unless the request asked to keep the
 * stop sequence, special tokens skipped; a text prompt encoded as the engines encode it.
 */
export const coordinatorTokenizer = (tokenizer: Tokenizer.Service): CoordinatorTokenizer.CoordinatorTokenizer => ({
  tokenize: (text) => tokenizer.encode(text),
  detokenize: (ids, options) => {
    let end = ids.length
    if (options?.removeEod === true) while (end > 0 && tokenizer.eosTokenIds.includes(ids[end - 1]!)) end--
    return tokenizer.decode(end === ids.length ? ids : ids.slice(0, end), { skipSpecialTokens: true })
  }
})

/** What the external mode is started with. */
export interface Options {
  readonly listen: string
  readonly protocol: Dialect.Name
  readonly tokenizer: string
  readonly policy: Routing.Policy
  readonly blockSizeTokens: number
  readonly maxRequests: number | undefined
  readonly alpha: number | undefined
  readonly prefixTableCapacity: number | undefined
  readonly transport: "zmtp" | "zeromq"
  /** `--allow-from`, as given (the coordinator parses it). */
  readonly allowFrom: string | undefined
}

/**
 * Loads the tokenizer, then binds: a bad directory binds nothing. Returns the running
 * coordinator, for the command to print its address before it serves.
 */
export const start: (
  options: Options
) => Effect.Effect<Coordinator.Handle, TokenizerUnusable | CoordinatorError.CoordinatorError, Scope.Scope> = Effect.fnUntraced(function*(
  options: Options
) {
  const loaded = yield* Tokenizer.fromDirectory(options.tokenizer).pipe(
    Effect.mapError((error) => new TokenizerUnusable({ directory: options.tokenizer, why: error.message }))
  )
  return yield* Coordinator.make({
    address: options.listen,
    protocol: options.protocol,
    tokenizer: coordinatorTokenizer(loaded),
    policy: options.policy,
    blockSizeTokens: options.blockSizeTokens,
    maxRequests: options.maxRequests,
    alpha: options.alpha,
    prefixTableCapacity: options.prefixTableCapacity,
    transport: options.transport,
    allowFrom: options.allowFrom,
    // No records for `Snapshot.received` / `rejected` (nothing here reads them; the counters
    // count on): the watchers' snapshot after each turn then copies none. Streamed tokens with
    // instant engine steps, CPU per token (perf stat, 3 runs): 3.31-4.20 µs with 100 kept,
    // 2.79-3.11 with none.
    recordLimit: 0
  })
})

/**
 * Serves until stopped: prints every engine that registers or leaves, the clients and the
 * control state as they change, and once when the expected engines are there. Clients are
 * served from the start (a submission before the first engine waits for one).
 */
export const serve = (coordinator: Coordinator.Handle, expected: number): Effect.Effect<never> =>
  Effect.gen(function*() {
    yield* Output.line(
      `coordinator: waiting for ${expected} engine(s) to register (policy ${coordinator.policy}, protocol ${coordinator.protocol}); stop with Ctrl-C`
    )
    const announce = Effect.flatMap(coordinator.awaitEngines(expected), (registered) => {
      const identities = registered.engines.map((e) => e.identity)
      return Output.line(`coordinator: ${identities.length} engine(s) registered (${identities.join(", ")}), serving`)
    })
    return yield* Effect.all([watchState(coordinator), watchRegistrations(coordinator), Effect.andThen(announce, Effect.never)], {
      concurrency: "unbounded"
    }).pipe(Effect.andThen(Effect.never))
  })
