/**
 * CPU-time measures for the packages' benchmarks. Times are CPU seconds of this process, not
 * wall seconds: on a shared machine a descheduled sample would otherwise count as slow
 * (measured for the protocol's benchmarks: wall-clock medians varied 2x between runs, CPU-time
 * medians a few percent). Each benchmark reports ratios against a baseline of the same run.
 *
 * @example
 * ```ts
 * import { Timing } from "@mcore-effect/testkit"
 *
 * const work = () => JSON.stringify({ a: [1, 2, 3] })
 * const repeats = Timing.repeatsFor(work, { sampleMs: 50, warmMs: 20, minRuns: 100 })
 * const micros = Timing.median([1, 2, 3].map(() => Timing.secondsPer(work, repeats) * 1e6))
 * ```
 *
 * @since 0.2.0
 */

/**
 * CPU seconds per call of `f`, over `repeats` calls.
 *
 * @since 0.2.0
 */
export const secondsPer = (f: () => unknown, repeats: number): number => {
  const start = process.cpuUsage()
  for (let i = 0; i < repeats; i++) f()
  const { system, user } = process.cpuUsage(start)
  return (user + system) / 1e6 / repeats
}

/**
 * Repeats for a sample of about `sampleMs`, found after a warm-up that lets the JIT settle.
 *
 * @since 0.2.0
 */
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

/**
 * The median of `xs` (the mean of the middle two for an even count); `NaN` for none.
 *
 * @since 0.2.0
 */
export const median = (xs: ReadonlyArray<number>): number => {
  if (xs.length === 0) return Number.NaN
  const sorted = [...xs].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

/**
 * Reads a streamed chat completion (server-sent events) to its end and returns the moment its
 * first content chunk arrived (`performance.now()`, ms), or `undefined` when none did: what a
 * time-to-first-token figure reads. The first chunk carries the role; the first content follows.
 *
 * @example
 * ```ts
 * import { Timing } from "@mcore-effect/testkit"
 *
 * const ttftMillis = async (url: string, body: string): Promise<number | undefined> => {
 *   const t0 = performance.now()
 *   const response = await fetch(`${url}/v1/chat/completions`, { method: "POST", body })
 *   const at = await Timing.firstContentAt(response)
 *   return at === undefined ? undefined : at - t0
 * }
 * ```
 *
 * @since 0.2.0
 */
export const firstContentAt = async (response: Response): Promise<number | undefined> => {
  const reader = response.body!.getReader()
  const decoder = new TextDecoder()
  let text = ""
  let at: number | undefined
  for (;;) {
    const { done, value } = await reader.read()
    if (done) return at
    if (at === undefined) {
      text += decoder.decode(value, { stream: true })
      if (/"content":"[^"]/.test(text)) at = performance.now()
    }
  }
}
