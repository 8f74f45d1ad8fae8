/**
 * The numbers of the demo's summary: percentiles over measured samples and the units they are
 * shown in.
 *
 * @since 0.1.0
 * @internal
 */

/**
 * The `p`-th percentile (0 < p <= 100) of `samples` by the nearest-rank method: always one of
 * the samples, `NaN` when there are none.
 *
 * @example
 * ```ts
 * import { percentile } from "./Stats.ts"
 *
 * percentile([5, 1, 3, 2, 4], 50) // 3
 * percentile([5, 1, 3, 2, 4], 99) // 5
 * ```
 *
 * @since 0.1.0
 */
export const percentile = (samples: ReadonlyArray<number>, p: number): number => {
  if (samples.length === 0) return Number.NaN
  const sorted = Float64Array.from(samples).sort()
  const rank = Math.ceil((p / 100) * sorted.length)
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]!
}

/**
 * Milliseconds with a precision that suits their size (`0.42 ms`, `12.3 ms`, `412 ms`).
 *
 * @since 0.1.0
 */
export const millis = (ms: number): string =>
  Number.isNaN(ms) ? "-" : ms < 1 ? `${ms.toFixed(2)} ms` : ms < 100 ? `${ms.toFixed(1)} ms` : `${Math.round(ms)} ms`

/**
 * A rate per second, rounded to a whole number.
 *
 * @since 0.1.0
 */
export const perSecond = (count: number, seconds: number): string =>
  seconds > 0 ? `${Math.round(count / seconds)}` : "-"

/**
 * A share of a total as a percentage with one decimal.
 *
 * @since 0.1.0
 */
export const percent = (part: number, total: number): string =>
  total > 0 ? `${((100 * part) / total).toFixed(1)}%` : "-"
