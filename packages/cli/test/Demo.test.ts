/**
 * `mcore demo`, run as a user runs it, its output checked for consistency: the streamed tokens are
 * the test engines' tokens for each prompt, the burst completed every request it sent, the
 * per-engine shares add up to it, the pause held the engines still, the abort reached an engine.
 */
import { beforeAll, describe, expect, it } from "@effect/vitest"
import { Generation, Vocabulary } from "@mcore-effect/testkit"
import { Effect } from "effect"
import * as Prompts from "../src/demo/Prompts.ts"
import { ensureBuilt } from "./support/Build.ts"
import * as Mcore from "./support/Mcore.ts"

beforeAll(ensureBuilt, 300_000)

/** The summary table's rows, by metric name. */
const summary = (stdout: string): Map<string, string> => {
  const lines = stdout.split("\n")
  const start = lines.indexOf("summary of the burst")
  const rows = new Map<string, string>()
  for (const line of lines.slice(start + 3)) {
    const match = /^ {2}(\S.*?) {2,}(\S.*)$/.exec(line)
    if (match !== null) rows.set(match[1]!, match[2]!)
  }
  return rows
}

const int = (text: string | undefined): number => {
  const match = /^(\d+)/.exec(text ?? "")
  if (match === null) throw new Error(`not a count: ${text}`)
  return Number(match[1])
}

const millis = (text: string | undefined): number => {
  const match = /^([\d.]+) ms$/.exec(text ?? "")
  if (match === null) throw new Error(`not a duration: ${text}`)
  return Number(match[1])
}

describe("mcore demo", () => {
  it.live("runs the tour and ends with a consistent summary", () =>
    Effect.gen(function*() {
      const requests = 3000
      const tokens = 16
      const { code, stdout, stderr } = yield* Mcore.run(["demo"], { millis: 240_000 })
      expect(stderr).toBe("")
      expect(code).toBe(0)
      const lines = stdout.split("\n")

      // 1. Every streamed prompt printed the tokens the test engines generate for it, as words.
      for (const prompt of Prompts.streamed) {
        const line = lines.find((l) => l.startsWith(`  ${prompt} ->`) && l.includes("tokens, first after"))
        expect(line, prompt).toBeDefined()
        const [, words, count] = /-> (.*?) {3}\[(\d+) tokens, first after /.exec(line!)!
        const expected = Vocabulary.detokenize(Generation.tokens(Vocabulary.tokenize(prompt), Number(count)))
        expect(Number(count)).toBeGreaterThan(0)
        expect(words).toBe(expected)
      }

      // 2. Not a terminal: the progress is ten plain lines, one per tenth, the last at 100%.
      const progress = lines.filter((l) => l.startsWith("  burst: "))
      expect(progress.map((l) => /\((\d+)%\)$/.exec(l)![1])).toEqual(
        ["10", "20", "30", "40", "50", "60", "70", "80", "90", "100"]
      )
      expect(progress.at(-1)).toBe(`  burst: ${requests}/${requests} (100%)`)

      // 3. Paused engines take no step; every held request completes after UNPAUSE.
      const paused = lines.find((l) => l.startsWith("  PAUSE: "))
      expect(paused).toMatch(/^ {2}PAUSE: coordinator and 2 engines PAUSED, \d+ requests waiting$/)
      expect(lines).toContain("  0 engine steps in 300ms while paused")
      expect(lines).toContain("  UNPAUSE: 64/64 requests completed")

      // 4. The abort ended the stream early and reached the engine holding the request.
      const abort = lines.find((l) => l.startsWith("  ABORT: "))
      const [, after] = /^ {2}ABORT: request \d+ aborted after (\d+) tokens; ABORT_REQUEST delivered to mp-coord-[01]$/
        .exec(abort ?? "") ?? []
      expect(Number(after)).toBeGreaterThanOrEqual(5)
      expect(Number(after)).toBeLessThan(2_000)

      // The summary adds up.
      const rows = summary(stdout)
      expect(int(rows.get("requests sent"))).toBe(requests)
      expect(int(rows.get("requests completed"))).toBe(requests)
      expect(int(rows.get("requests failed"))).toBe(0)
      expect(int(rows.get("tokens generated"))).toBe(requests * tokens)
      expect(int(rows.get("requests streamed"))).toBe(requests / 10)
      expect(millis(rows.get("latency p50"))).toBeLessThanOrEqual(millis(rows.get("latency p99")))
      expect(millis(rows.get("time to first token p50"))).toBeLessThanOrEqual(millis(rows.get("time to first token p99")))
      const engines = [...rows].filter(([name]) => name.startsWith("engine "))
      expect(engines.map(([name]) => name)).toEqual(["engine mp-coord-0", "engine mp-coord-1"])
      expect(engines.reduce((sum, [, value]) => sum + int(value), 0)).toBe(requests)
      const percents = engines.map(([, value]) => Number(/\(([\d.]+)%\)$/.exec(value)![1]))
      expect(Math.abs(percents.reduce((a, b) => a + b, 0) - 100)).toBeLessThanOrEqual(0.1)
    }), 300_000)

  it.live("--requests, --engines and --tokens shape the burst", () =>
    Effect.gen(function*() {
      const stdout = yield* Mcore.ok(["demo", "--requests", "200", "--engines", "3", "--tokens", "4"], { millis: 120_000 })
      const rows = summary(stdout)
      expect(int(rows.get("requests completed"))).toBe(200)
      expect(int(rows.get("tokens generated"))).toBe(800)
      const engines = [...rows].filter(([name]) => name.startsWith("engine "))
      expect(engines.length).toBe(3)
      expect(engines.reduce((sum, [, value]) => sum + int(value), 0)).toBe(200)
    }), 180_000)
})
