#!/usr/bin/env node
/**
 * The `mcore` executable.
 *
 * @since 0.1.0
 */
// The platform package's index loads HTTP, cluster and more; the two modules used here load fast.
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { run } from "./Cli.ts"
import { signalTeardown } from "./Failure.ts"

NodeRuntime.runMain(run(process.argv.slice(2)), { teardown: signalTeardown() })
