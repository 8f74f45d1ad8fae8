/**
 * `mcore serve --engines-listen ADDR`: the server is the coordinator. Megatron-LM's engines dial
 * `ADDR` as they dial a coordinator process (`launch_inference_coordinator=False`), and the
 * server's requests go to them through a coordinator in the server's own process
 * (`HostedClient`): no coordinator process between HTTP and the engines. The coordinator routes
 * by `--policy`, detokenizes with the served model's tokenizer (loaded once, for both), and takes
 * other clients on the same address (`mcore control`).
 *
 * One server process only: an engine has one coordinator, so `--workers` above 1 is refused (the
 * way to run several is `mcore coordinator --external-engines` and `--coordinator` for each).
 *
 * @since 0.2.0
 * @internal
 */
import type { ClientConfig, ClientError, InferenceClient } from "@mcore-effect/client"
import { Coordinator, type CoordinatorError, CoordinatorMetrics, HostedClient, Routing } from "@mcore-effect/coordinator"
import type { Dialect } from "@mcore-effect/protocol"
import { ExtraMetrics, HealthReport } from "@mcore-effect/server"
import { type TextError, Tokenizer } from "@mcore-effect/text"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { Flag } from "effect/cli"
import * as Output from "../Output.ts"
import { integer } from "../Values.ts"
import { coordinatorTokenizer } from "./CoordinatorExternal.ts"
import { watchRegistrations } from "./CoordinatorWatch.ts"

/** The flags of this mode. */
export const flags = {
  enginesListen: Flag.String("engines-listen").pipe(
    Flag.withMetavar("address"),
    Flag.withDescription(
      "Be the coordinator: bind here for Megatron-LM's engines to dial (tcp://0.0.0.0:PORT for engines on other hosts; " +
        "port 0: any free one, printed as `engines ADDRESS` on the second line), instead of --coordinator; needs " +
        "--protocol and --tokenizer, and one server process"
    ),
    Flag.optional
  ),
  externalEngines: integer("external-engines", 1).pipe(
    Flag.withDescription("With --engines-listen: the engines expected (default 1); said once they have all registered"),
    Flag.optional
  ),
  policy: Flag.Literals("policy", Routing.Policy.literals).pipe(
    Flag.withDescription("With --engines-listen: the coordinator's routing policy (default load_balanced)"),
    Flag.optional
  ),
  allowFrom: Flag.String("allow-from").pipe(
    Flag.withMetavar("cidrs"),
    Flag.withDescription(
      "With --engines-listen: who may connect to the coordinator, engines and clients alike (IP addresses and CIDR " +
        "blocks, comma-separated); it must admit 127.0.0.1 (the server's own client connects from there)"
    ),
    Flag.optional
  )
} as const

/** How the coordinator in the server's process is started. */
export interface Hosted {
  readonly listen: string
  readonly expected: number
  readonly policy: Routing.Policy | undefined
  readonly allowFrom: string | undefined
}

/** Where a hosted server's engines dial, for its start-up lines. */
export const describe = (hosted: Hosted): string =>
  `engines dialing ${hosted.listen} (${hosted.expected} expected)`

/**
 * `/health` in this mode: the engines registered (their identities, `mp-coord-<rank>`, so which
 * ranks are up) and how many are expected; not ready while none is.
 */
const health = (expected: number) =>
  Layer.effect(
    HealthReport.HealthReport,
    Effect.gen(function*() {
      const coordinator = yield* Coordinator.Coordinator
      return {
        report: Effect.map(coordinator.snapshot, (snapshot) => ({
          ready: snapshot.engines.length > 0,
          status: "no_engines",
          fields: { engines: snapshot.engines.map((e) => e.identity), engines_expected: expected }
        }))
      }
    })
  )

/** `/metrics` in this mode: the coordinator's page and the process's figures after the server's. */
const metrics = Layer.effect(
  ExtraMetrics.ExtraMetrics,
  Effect.gen(function*() {
    const coordinator = yield* Coordinator.Coordinator
    return { text: Effect.map(coordinator.snapshot, (snapshot) => CoordinatorMetrics.prometheus(snapshot) + CoordinatorMetrics.processText()) }
  })
)

/**
 * The tokenizer (loaded once), the coordinator with it, the server's client on the coordinator,
 * and what `/health` and `/metrics` report of the coordinator: what the server runs on in this
 * mode.
 */
export const layer = (
  hosted: Hosted,
  protocol: Dialect.Name,
  tokenizerDirectory: string,
  client: Omit<ClientConfig.ClientOptions, "address" | "protocol">
): Layer.Layer<
  Tokenizer.Tokenizer | Coordinator.Coordinator | InferenceClient.InferenceClient | HealthReport.HealthReport | ExtraMetrics.ExtraMetrics,
  TextError.TextError | CoordinatorError.CoordinatorError | ClientError.ClientError
> =>
  Layer.provideMerge(Layer.merge(health(hosted.expected), metrics), Layer.provideMerge(
    Layer.unwrap(
      Effect.gen(function*() {
        const tokenizer = yield* Tokenizer.Tokenizer
        return HostedClient.layer({
          address: hosted.listen,
          protocol,
          tokenizer: coordinatorTokenizer(tokenizer),
          policy: hosted.policy,
          allowFrom: hosted.allowFrom,
          // Nothing reads the records here (the counters count on); see `CoordinatorExternal`.
          recordLimit: 0,
          client
        })
      })
    ),
    Tokenizer.layer(tokenizerDirectory)
  ))

/**
 * Says where the engines dial (standard output, after the server's URL: a script reads both),
 * then each engine that registers or leaves, and once when the expected ones are there
 * (standard error).
 */
export const announce = (coordinator: Coordinator.Handle, expected: number): Effect.Effect<never> =>
  Effect.suspend(() => {
    let said = false
    const all = (registered: ReadonlyArray<string>) => {
      if (said || registered.length < expected) return Effect.void
      said = true
      return Output.errorLine(`${registered.length} engine(s) registered (${registered.join(", ")}), serving`)
    }
    return Effect.andThen(Output.line(`engines ${coordinator.address}`), watchRegistrations(coordinator, Output.errorLine, all))
  })
