/**
 * `pnpm bench toolArguments`: streaming one long tool call's arguments (a model writing a file
 * through a tool), per token, through `AssistantReply.Deltas`, against reading the whole text so
 * far for every token (`AssistantReply.read`, what a stream did for every token inside a call
 * before the open call's arguments were extended in place), in the same run. Hermes and
 * qwen3_coder, at 1,000, 4,000 and 16,000 characters of arguments, tokens of 9 characters.
 * Medians of 7 samples of process CPU time.
 */
import * as AssistantReply from "../src/internal/tools/AssistantReply.ts"
import * as ReasoningParser from "../src/internal/tools/ReasoningParser.ts"
import * as ToolCallParser from "../src/internal/tools/ToolCallParser.ts"
import { Timing } from "@mcore-effect/testkit"

const { median } = Timing

const PIECE = "abc def, "
const SAMPLES = process.argv.includes("--quick") || process.env.BENCH_QUICK === "1" ? 3 : 7

const openings: Record<string, string> = {
  hermes: '<think>ok</think>\n<tool_call>\n{"name": "write_file", "arguments": {"content": "',
  qwen3_coder: "<think>ok</think>\n<tool_call>\n<function=write_file>\n<parameter=content>\n"
}

const readingOf = (parser: string): AssistantReply.Reading => ({
  reasoning: ReasoningParser.parsers.get("qwen3"),
  calls: { parser: ToolCallParser.parsers.get(parser)!, tools: [{ name: "write_file" }], parallel: true }
})

const cpuMicros = (): number => {
  const { system, user } = process.cpuUsage()
  return user + system
}


/** µs of CPU per token while the arguments grow from `from` to `to` characters. */
const perToken = (step: (text: string) => void, opening: string, from: number, to: number): number => {
  step(opening)
  let written = 0
  while (written < from) {
    step(PIECE)
    written += PIECE.length
  }
  const start = cpuMicros()
  let tokens = 0
  while (written < to) {
    step(PIECE)
    written += PIECE.length
    tokens++
  }
  return (cpuMicros() - start) / tokens
}

export const run = async (): Promise<void> => {
  const rows: Array<Record<string, string>> = []
  for (const parser of ["hermes", "qwen3_coder"]) {
    const reading = readingOf(parser)
    for (const chars of [1_000, 4_000, 16_000]) {
      // The 500 characters up to `chars`: the cost per token at that length.
      const from = chars - 500
      const deltas = Array.from({ length: SAMPLES }, () => {
        const d = new AssistantReply.Deltas(reading)
        return perToken((t) => d.push(t), openings[parser]!, from, chars)
      })
      const whole = Array.from({ length: SAMPLES }, () => {
        let text = ""
        return perToken((t) => {
          text += t
          AssistantReply.read(reading, text, false)
        }, openings[parser]!, from, chars)
      })
      rows.push({
        parser,
        "arguments (chars)": chars.toLocaleString("en-US"),
        "read whole, µs/token": median(whole).toFixed(2),
        "Deltas, µs/token": median(deltas).toFixed(2),
        ratio: `${(median(deltas) / median(whole)).toFixed(3)}x`
      })
    }
  }
  console.log(`\ntoolArguments: one call's arguments streamed, 9-character tokens, medians of ${SAMPLES} samples of CPU time`)
  console.table(rows)
}

if (import.meta.url === `file://${process.argv[1]}`) await run()
