/**
 * Timing helpers shared by the protocol benchmarks. Times are CPU seconds of this process, not
 * wall seconds: on a shared machine a descheduled sample would otherwise count as slow
 * (measured here: wall-clock medians varied 2x between runs, CPU-time medians a few percent).
 */

/** CPU seconds per call of `f`, over `repeats` calls. */
export const secondsPer = (f: () => unknown, repeats: number): number => {
  const start = process.cpuUsage()
  for (let i = 0; i < repeats; i++) f()
  const { system, user } = process.cpuUsage(start)
  return (user + system) / 1e6 / repeats
}

/** Repeats for a sample of about `sampleMs`, found after a warm-up that lets the JIT settle. */
export const repeatsFor = (
  f: () => unknown,
  options: { readonly sampleMs: number; readonly warmMs: number; readonly minRuns: number }
): number => {
  const warmUntil = performance.now() + options.warmMs
  let runs = 0
  while (performance.now() < warmUntil || runs < options.minRuns) {
    f()
    runs++
  }
  return Math.max(1, Math.ceil(options.sampleMs / 1000 / secondsPer(f, options.minRuns)))
}

export const median = (xs: ReadonlyArray<number>): number => {
  const sorted = [...xs].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}
