/**
 * Plain-text tables for terminals and logs: columns padded to their widest cell, a rule under
 * the header. ASCII only, so they read the same in a CI log as in a terminal.
 *
 * @since 0.1.0
 * @internal
 */

/**
 * Alignment of a column.
 *
 * @since 0.1.0
 */
export type Align = "left" | "right"

/**
 * Renders `rows` under `header`, one string per line. Numeric-looking columns are best given
 * `"right"`.
 *
 * @example
 * ```ts
 * import { render } from "./Table.ts"
 *
 * render(["metric", "value"], [["requests", "3000"], ["throughput", "1650 req/s"]])
 * // [ "metric      value",
 * //   "----------  ----------",
 * //   "requests    3000",
 * //   "throughput  1650 req/s" ]
 * ```
 *
 * @since 0.1.0
 */
export const render = (
  header: ReadonlyArray<string>,
  rows: ReadonlyArray<ReadonlyArray<string>>,
  align: ReadonlyArray<Align> = []
): Array<string> => {
  const widths = header.map((cell, i) => Math.max(cell.length, ...rows.map((row) => (row[i] ?? "").length)))
  const line = (cells: ReadonlyArray<string>) =>
    widths
      .map((width, i) => {
        const cell = cells[i] ?? ""
        return align[i] === "right" ? cell.padStart(width) : cell.padEnd(width)
      })
      .join("  ")
      .trimEnd()
  return [line(header), widths.map((w) => "-".repeat(w)).join("  "), ...rows.map(line)]
}
