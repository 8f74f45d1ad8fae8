/**
 * The coordinator's machinery, for the testkit, whose test coordinator is this one with its
 * faults put on the way to clients (`Peer`), and whose test engines share the dialects' wire
 * (`DialectWire`, the frame helpers). Not a public API: no compatibility promise between
 * versions; applications use the package's main entry point.
 *
 * @since 0.2.0
 * @internal
 */
export { configOf, logging } from "./configOf.ts"
export { CoordinatorCore } from "./coordinatorCore.ts"
export * as CoordinatorSocket from "./coordinatorSocket.ts"
export * as DialectWire from "./dialectWire.ts"
export * as GeneratedText from "./generatedText.ts"
export * as Peer from "./peer.ts"
export { RecentLog } from "./recentLog.ts"
export * from "./wireFrames.ts"
export type { CoordinatorConfig, Counters, Log, LogLevel } from "./coordinatorConfig.ts"
export type { Delivery, Rejection } from "./coordinatorRecords.ts"
export { type CoreSnapshot, type EngineView, snapshotOf } from "./snapshot.ts"
export { awaitState } from "./awaitState.ts"
