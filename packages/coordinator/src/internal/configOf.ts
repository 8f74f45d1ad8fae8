/**
 * A coordinator's options checked and turned into the loop's `CoordinatorConfig`, once for both
 * makers: the package's `Coordinator.make` and the testkit's `TestCoordinator.make`, each with its
 * own defaults (given here already filled in) and its own error around the refusal. Also the
 * bridge from the loop's log lines to Effect's logger, taken from the caller's context.
 *
 * @since 0.2.0
 * @internal
 */
import { type Dialect, DialectCatalog, type MemorySocket } from "@mcore-effect/protocol"
import * as Effect from "effect/Effect"
import * as LogLevel from "effect/LogLevel"
import * as References from "effect/References"
import * as Result from "effect/Result"
import type { CoordinatorTokenizer } from "../CoordinatorTokenizer.ts"
import * as PrefixTable from "../PrefixTable.ts"
import * as Routing from "../Routing.ts"
import type { CoordinatorConfig, Log } from "./coordinatorConfig.ts"
import { isZ85Key } from "./coordinatorSocket.ts"
import * as DialectWire from "./dialectWire.ts"

/** What both makers take, their defaults filled in where they have one. */
export interface Checked {
  readonly protocol: Dialect.Name
  readonly tokenizer: CoordinatorTokenizer | undefined
  readonly policy: Routing.Policy
  readonly scoring: Routing.Scoring
  readonly beta: number
  readonly alpha?: number | undefined
  readonly maxRequests?: number | undefined
  readonly prefixTableCapacity?: number | undefined
  readonly blockSizeTokens: number
  readonly recordLimit: number
  readonly startupRegistrations: number
  readonly curve: { readonly publicKey: string; readonly secretKey: string } | undefined
  readonly network: MemorySocket.Network | undefined
}

/** An option refused, and why. */
export interface Refused {
  readonly option: string
  readonly why: string
}

const refuse = (option: string, why: string): Result.Result<never, Refused> => Result.fail({ option, why })

/**
 * The config, or the first option refused.
 *
 * @internal
 */
export const configOf = (options: Checked, log: Log, debug: boolean): Result.Result<CoordinatorConfig, Refused> => {
  const dialect = DialectCatalog.parse(options.protocol)
  if (Result.isFailure(dialect)) return refuse("protocol", dialect.failure)
  const { beta, blockSizeTokens, curve, policy, recordLimit, scoring, startupRegistrations, tokenizer } = options
  if (tokenizer !== undefined && (typeof tokenizer?.tokenize !== "function" || typeof tokenizer.detokenize !== "function")) {
    return refuse("tokenizer", "must have tokenize and detokenize functions (the model's tokenizer)")
  }
  if (!Routing.Policy.literals.includes(policy)) return refuse("policy", `unknown policy ${String(policy)}`)
  if (scoring !== "megatron" && scoring !== "relative_load") return refuse("scoring", `unknown scoring ${String(scoring)}`)
  if (!Number.isFinite(beta) || beta < 0) return refuse("beta", "must be a finite number >= 0")
  const alpha = options.alpha ?? 0.5
  if (!(alpha >= 0 && alpha <= 1)) return refuse("alpha", "must be a number from 0 to 1")
  const maxRequests = options.maxRequests ?? 256
  if (!Number.isSafeInteger(maxRequests) || maxRequests < 1) return refuse("maxRequests", "must be an integer >= 1")
  const prefixTableCapacity = options.prefixTableCapacity ?? PrefixTable.defaultCapacity
  if (!Number.isSafeInteger(prefixTableCapacity) || prefixTableCapacity < 0) {
    return refuse("prefixTableCapacity", "must be an integer >= 0")
  }
  if (!Number.isSafeInteger(blockSizeTokens) || blockSizeTokens < 1) return refuse("blockSizeTokens", "must be an integer >= 1")
  if (!Number.isSafeInteger(recordLimit) || recordLimit < 0) return refuse("recordLimit", "must be an integer >= 0")
  if (!Number.isSafeInteger(startupRegistrations) || startupRegistrations < 0) {
    return refuse("startupRegistrations", "must be an integer >= 0")
  }
  if (curve !== undefined && !(isZ85Key(curve.publicKey) && isZ85Key(curve.secretKey))) {
    return refuse("curve", "publicKey and secretKey must be 40-character Z85 keys")
  }
  if (curve !== undefined && options.network !== undefined) return refuse("curve", "CurveZMQ is ZeroMQ's: not with a network")
  return Result.succeed({
    wire: DialectWire.of(dialect.success.name),
    policy,
    beta,
    scoring,
    alpha,
    maxRequests,
    prefixTableCapacity,
    blockSizeTokens,
    tokenizer,
    recordLimit,
    startupRegistrations,
    log,
    debug,
    curve
  })
}

/**
 * The loop's log, bridged to Effect's logger in the caller's context, and whether debug lines
 * are wanted there (a coordinator whose logs stop at info formats no line per request).
 *
 * @internal
 */
export const logging: Effect.Effect<{ readonly log: Log; readonly debug: boolean }> = Effect.gen(function*() {
  const runFork = Effect.runForkWith(yield* Effect.context<never>())
  const log: Log = (level, message) => {
    runFork(Effect.logWithLevel(level)(message))
  }
  return { log, debug: LogLevel.isLessThanOrEqualTo(yield* References.MinimumLogLevel, "Debug") }
})
