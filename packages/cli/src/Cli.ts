/**
 * The `mcore` command tree and how it runs: the CLI module's parsing and help, a one-line
 * presenter for wrong invocations, logs on standard error (standard output carries results),
 * and every typed failure reported as one line with a non-zero exit code.
 *
 * @since 0.1.0
 */
import * as NodeServices from "@effect/platform-node/NodeServices"
// Named by the command tree's inferred error type.
import type { ClientError } from "@mcore-effect/client"
import type { CoordinatorError } from "@mcore-effect/coordinator"
import type { TestkitError, TraceError } from "@mcore-effect/testkit"
import type { TextError } from "@mcore-effect/text"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as References from "effect/References"
import { CliConfig, Command, GlobalFlag } from "effect/cli"
import * as Control from "./commands/Control.ts"
import * as Coordinator from "./commands/Coordinator.ts"
import * as Demo from "./commands/Demo.ts"
import * as Generate from "./commands/Generate.ts"
import * as Serve from "./commands/Serve.ts"
import * as Trace from "./commands/Trace.ts"
import * as Failure from "./Failure.ts"
import * as UsagePresenter from "./UsagePresenter.ts"
import { version } from "./Version.ts"

/**
 * The root command.
 *
 * @since 0.1.0
 */
export const mcore = Command.make("mcore").pipe(
  Command.withDescription("Client tools for Megatron-LM Core's inference coordinator, and a test coordinator to try them on"),
  Command.withSubcommands([Demo.command, Generate.command, Control.command, Coordinator.command, Trace.command, Serve.command])
)

/** The built-in flags, without `--wizard`: every command here runs unattended. */
const builtIns = [GlobalFlag.Help, GlobalFlag.Version, GlobalFlag.Completions, GlobalFlag.LogLevel]

const environment = Layer.mergeAll(
  NodeServices.layer,
  UsagePresenter.layer,
  CliConfig.layer({ builtIns }),
  // Logs go to standard error and start at warnings; `--log-level` lowers the bar.
  Layer.succeed(Logger.LogToStderr, true),
  Layer.succeed(References.MinimumLogLevel, "Warn")
)

/**
 * Runs `mcore` with the given arguments (without `node` and the script).
 *
 * @example
 * ```ts
 * import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
 * import { run } from "./Cli.ts"
 *
 * NodeRuntime.runMain(run(["demo", "--requests", "500"]))
 * ```
 *
 * @since 0.1.0
 */
export const run = (args: ReadonlyArray<string>): Effect.Effect<void, Failure.Reported> =>
  Command.runWith(mcore, { version })(args).pipe(Failure.report, Effect.provide(environment))
