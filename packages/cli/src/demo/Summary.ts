/**
 * The demo's closing table: what the burst measured, one metric per row, so a person can read it
 * and a script can pick a row by its name.
 *
 * @since 0.1.0
 * @internal
 */
import * as Table from "../Table.ts"
import type * as Burst from "./Burst.ts"
import * as Stats from "./Stats.ts"

/**
 * The table's lines.
 *
 * @example
 * ```ts
 * import { lines } from "./Summary.ts"
 *
 * lines({
 *   sent: 2, completed: 2, failed: 0, firstFailure: undefined, wallSeconds: 0.5,
 *   latencyMillis: [10, 20], timeToFirstTokenMillis: [2, 3], tokens: 32, routed: 2,
 *   engines: [{ identity: "mp-coord-0", requests: 1 }, { identity: "mp-coord-1", requests: 1 }]
 * })
 * // metric               value
 * // requests sent        2
 * // requests completed   2
 * // ...
 * ```
 *
 * @since 0.1.0
 */
export const lines = (burst: Burst.Result): Array<string> => {
  const { latencyMillis: latency, timeToFirstTokenMillis: ttft, wallSeconds } = burst
  const rows: Array<[string, string]> = [
    ["requests sent", `${burst.sent}`],
    ["requests completed", `${burst.completed}`],
    ["requests failed", `${burst.failed}`],
    ["wall time", `${wallSeconds.toFixed(2)} s`],
    ["throughput", `${Stats.perSecond(burst.completed, wallSeconds)} req/s`],
    ["latency p50", Stats.millis(Stats.percentile(latency, 50))],
    ["latency p99", Stats.millis(Stats.percentile(latency, 99))],
    ["requests streamed", `${ttft.length}`],
    ["time to first token p50", Stats.millis(Stats.percentile(ttft, 50))],
    ["time to first token p99", Stats.millis(Stats.percentile(ttft, 99))],
    ["tokens generated", `${burst.tokens}`],
    ["tokens per second", `${Stats.perSecond(burst.tokens, wallSeconds)} tok/s`],
    ...burst.engines.map((engine): [string, string] => [
      `engine ${engine.identity}`,
      `${engine.requests} requests (${Stats.percent(engine.requests, burst.routed)})`
    ])
  ]
  return Table.render(["metric", "value"], rows)
}
