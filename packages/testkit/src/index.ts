/**
 * A coordinator and engines that speak the Megatron-LM Core inference coordinator's wire
 * protocol over real ZeroMQ sockets, without a GPU: for testing clients (and services built on
 * them) against something that behaves like the real thing, faults included.
 *
 * The fast-check arbitraries are a separate entry point, `@mcore-effect/testkit/arbitraries`, so
 * that this one (which the `mcore` CLI runs) loads no fast-check.
 *
 * @since 0.1.0
 */
export * as ConnectionCounter from "./ConnectionCounter.ts"
export * as Continuations from "./Continuations.ts"
export { ControlState } from "@mcore-effect/coordinator"
export * as CoordinatorTokenizer from "./CoordinatorTokenizer.ts"
export * as Faults from "./Faults.ts"
export * as Generation from "./Generation.ts"
export * as KvPins from "./KvPins.ts"
export * as Loopback from "./Loopback.ts"
export { Routing } from "@mcore-effect/coordinator"
export * as TestCluster from "./TestCluster.ts"
export * as TestCoordinator from "./TestCoordinator.ts"
export * as TestDns from "./TestDns.ts"
export * as TestFleet from "./TestFleet.ts"
export * as TestEngine from "./TestEngine.ts"
export * as TestkitError from "./TestkitError.ts"
export * as TestSupport from "./TestSupport.ts"
export * as Timing from "./Timing.ts"
export * as Trace from "./Trace.ts"
export * as TraceError from "./TraceError.ts"
export * as TraceMatch from "./TraceMatch.ts"
export * as TraceRecorder from "./TraceRecorder.ts"
export * as TraceReplay from "./TraceReplay.ts"
export * as Vocabulary from "./Vocabulary.ts"
export * as WordTokenizer from "./WordTokenizer.ts"
