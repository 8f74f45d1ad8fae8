/**
 * The tool-call and reasoning parsers on texts as models write them: incomplete tags, text before
 * and after, several calls, malformed calls (left as content, never a crash); and, as a property,
 * that a text streamed in any split gives deltas whose joined pieces are the unstreamed reading.
 */
import { describe, expect, it } from "@effect/vitest"
import * as fc from "fast-check"
import * as AssistantReply from "../src/internal/tools/AssistantReply.ts"
import * as ReasoningParser from "../src/internal/tools/ReasoningParser.ts"
import * as ToolCallParser from "../src/internal/tools/ToolCallParser.ts"

const hermes = ToolCallParser.parsers.get("hermes")!
const coder = ToolCallParser.parsers.get("qwen3_coder")!
const qwen3 = ReasoningParser.parsers.get("qwen3")!
const r1 = ReasoningParser.parsers.get("deepseek-r1")!

const weather = { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" }, days: { type: "integer" }, units: { type: "object" } } } }

describe("hermes", () => {
  it("reads calls with text before, between and after", () => {
    const text = 'Let me check.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n<tool_call>\n{"name": "f", "arguments": {}}\n</tool_call>'
    expect(hermes.parse(text, [], true)).toMatchObject({
      content: "Let me check.\n",
      calls: [{ name: "get_weather", arguments: '{"city": "Paris"}' }, { name: "f", arguments: "{}" }]
    })
    expect(hermes.parse('<tool_call>{"name":"f","arguments":{}}</tool_call> and done', [], true).content).toBe(" and done")
  })

  it("leaves malformed calls and unclosed tags as content", () => {
    const bad = '<tool_call>{"name": "f", "arguments": {"x": }</tool_call>'
    expect(hermes.parse(bad, [], true)).toMatchObject({ content: bad, calls: [] })
    expect(hermes.parse('<tool_call>{"arguments": {}}</tool_call>', [], true).calls).toEqual([])
    const unclosed = '<tool_call>{"name": "f", "arguments": {"x": 1}}'
    expect(hermes.parse(unclosed, [], true)).toMatchObject({ content: unclosed, calls: [] })
    expect(hermes.parse("a <tool_ca", [], true)).toMatchObject({ content: "a <tool_ca", calls: [] })
  })

  it("holds back what may be a tag while the text is generated", () => {
    expect(hermes.parse("a <tool_ca", [], false)).toMatchObject({ content: "a ", calls: [] })
    expect(hermes.parse('<tool_call>{"name": "f", "argu', [], false).calls).toEqual([])
    expect(hermes.parse('<tool_call>{"name": "f", "arguments": {"x": 1}}\n</tool_', [], false).calls)
      .toEqual([{ name: "f", arguments: '{"x": 1' }])
  })

  it("serializes arguments written in another order", () => {
    expect(hermes.parse('<tool_call>{"arguments": {"a": 1}, "name": "f"}</tool_call>', [], true).calls)
      .toEqual([{ name: "f", arguments: '{"a":1}' }])
  })
})

describe("qwen3_coder", () => {
  it("reads parameters by the tool's schema types", () => {
    const text = "Sure.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nNew York\n</parameter>\n<parameter=days>\n3\n</parameter>\n<parameter=units>\n{\"t\": \"C\"}\n</parameter>\n</function>\n</tool_call>"
    expect(coder.parse(text, [weather], true)).toMatchObject({
      content: "Sure.\n",
      calls: [{ name: "get_weather", arguments: JSON.stringify({ city: "New York", days: 3, units: { t: "C" } }) }]
    })
  })

  it("keeps text where a typed value does not parse, and JSON where no type is known", () => {
    const text = "<tool_call><function=get_weather><parameter=days>many</parameter><parameter=other>[1]</parameter></function></tool_call>"
    expect(coder.parse(text, [weather], true).calls).toEqual([{ name: "get_weather", arguments: JSON.stringify({ days: "many", other: [1] }) }])
  })

  it("leaves a block without a function as content; holds an unfinished call", () => {
    expect(coder.parse("<tool_call>nothing</tool_call>", [], true).calls).toEqual([])
    expect(coder.parse("<tool_call><function=f><parameter=a>1</parameter><param", [], false).calls)
      .toEqual([{ name: "f", arguments: '{"a":1' }])
  })
})

describe("reasoning", () => {
  it("qwen3: the think block split off; none is all content", () => {
    expect(qwen3.split("<think>\nhmm\n</think>\n\n42", true)).toMatchObject({ reasoning: "\nhmm\n", content: "\n\n42" })
    expect(qwen3.split("42", true)).toMatchObject({ reasoning: "", content: "42" })
    expect(qwen3.split("<think>still going", true)).toMatchObject({ reasoning: "still going", content: "" })
    expect(qwen3.split("<thi", false)).toMatchObject({ reasoning: "", content: "" })
    expect(qwen3.split("<think>a</thi", false)).toMatchObject({ reasoning: "a", content: "" })
  })

  it("deepseek-r1: reasoning until </think>, with or without the opening tag", () => {
    expect(r1.split("hmm</think>42", true)).toMatchObject({ reasoning: "hmm", content: "42" })
    expect(r1.split("<think>hmm</think>42", true)).toMatchObject({ reasoning: "hmm", content: "42" })
    expect(r1.split("hmm", true)).toMatchObject({ reasoning: "hmm", content: "" })
  })

  it("tool calls are read after the reasoning only", () => {
    const reading = { reasoning: qwen3, calls: { parser: hermes, tools: [], parallel: true } }
    const text = '<think>maybe <tool_call>{"name": "no", "arguments": {}}</tool_call>?</think>\n<tool_call>{"name": "yes", "arguments": {}}</tool_call>'
    const reply = AssistantReply.read(reading, text, true)
    expect(reply.calls).toEqual([{ name: "yes", arguments: "{}" }])
    expect(reply.reasoning).toContain('"no"')
    expect(AssistantReply.read({ ...reading, calls: { ...reading.calls, parallel: false } }, text + text.slice(text.indexOf("\n")), true).calls).toHaveLength(1)
  })
})

/** The deltas of `text` streamed in the pieces `cuts` make, joined. */
const streamed = (reading: AssistantReply.Reading, text: string, cuts: ReadonlyArray<number>) => {
  const deltas = new AssistantReply.Deltas(reading)
  const all: Array<Record<string, any>> = []
  let at = 0
  for (const cut of [...cuts].sort((a, b) => a - b)) {
    all.push(...deltas.push(text.slice(at, cut)))
    at = cut
  }
  all.push(...deltas.push(text.slice(at)), ...deltas.end())
  let reasoning = ""
  let content = ""
  const calls: Array<{ name: string; arguments: string; id: string }> = []
  for (const delta of all) {
    reasoning += delta["reasoning_content"] ?? ""
    content += delta["content"] ?? ""
    for (const call of delta["tool_calls"] ?? []) {
      if (call.id !== undefined) {
        expect(call.index).toBe(calls.length)
        expect(call.function.arguments).toBe("")
        calls.push({ name: call.function.name, arguments: "", id: call.id })
      } else calls[call.index]!.arguments += call.function.arguments
    }
  }
  return { reasoning, content, calls: calls.map(({ arguments: a, name }) => ({ name, arguments: a })) }
}

const word = fc.stringMatching(/^[a-z ]{0,12}$/)
const json = fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.stringify(v))
const argumentsObject = fc.dictionary(fc.stringMatching(/^[a-z]{1,6}$/), fc.jsonValue({ maxDepth: 1 }), { maxKeys: 3 })
const name = fc.stringMatching(/^[a-z_]{1,10}$/)

const hermesCall = fc.tuple(name, argumentsObject, fc.boolean()).map(([n, a, spaced]) =>
  spaced ? `<tool_call>\n{"name": ${JSON.stringify(n)}, "arguments": ${JSON.stringify(a, null, 1)}}\n</tool_call>` : `<tool_call>{"name":${JSON.stringify(n)},"arguments":${JSON.stringify(a)}}</tool_call>`
)
const coderCall = fc.tuple(name, fc.array(fc.tuple(fc.stringMatching(/^[a-z]{1,6}$/), json), { maxLength: 3 })).map(([n, params]) =>
  `<tool_call>\n<function=${n}>\n${params.map(([k, v]) => `<parameter=${k}>\n${v}\n</parameter>\n`).join("")}</function>\n</tool_call>`
)

const texts = (call: fc.Arbitrary<string>) =>
  fc.tuple(fc.option(word, { nil: undefined }), word, fc.array(call, { maxLength: 3 }), fc.oneof(word, fc.constant("")))
    .map(([think, before, calls, after]) => (think === undefined ? "" : `<think>${think}</think>\n`) + before + calls.join("\n") + after)

describe("streamed deltas", () => {
  for (const [label, parser, call] of [["hermes", hermes, hermesCall], ["qwen3_coder", coder, coderCall]] as const) {
    it(`${label}: joined, they are the unstreamed reading, for any split`, () => {
      fc.assert(fc.property(texts(call), fc.array(fc.nat(), { maxLength: 12 }), (text, cuts) => {
        const reading = { reasoning: qwen3, calls: { parser, tools: [], parallel: true } }
        const whole = AssistantReply.read(reading, text, true)
        const got = streamed(reading, text, cuts.map((c) => c % (text.length + 1)))
        expect(got).toEqual({ reasoning: whole.reasoning, content: whole.content, calls: whole.calls })
      }), { numRuns: 300 })
    })
  }

  /**
   * `text` streamed split in one or two pieces everywhere, and character by character (the way a
   * long argument streams), joined, is its reading as a whole, whose one call is `call`.
   */
  const everySplit = (parser: typeof hermes, text: string, call: { readonly name: string; readonly arguments: string }) => {
    const reading = { reasoning: qwen3, calls: { parser, tools: [], parallel: true } }
    const whole = AssistantReply.read(reading, text, true)
    expect(whole.calls).toEqual([call])
    const want = { reasoning: whole.reasoning, content: whole.content, calls: whole.calls }
    for (let i = 0; i <= text.length; i++) {
      for (let j = i; j <= text.length; j += 3) expect(streamed(reading, text, [i, j])).toEqual(want)
    }
    expect(streamed(reading, text, Array.from({ length: text.length }, (_, k) => k))).toEqual(want)
  }

  it("hermes: every split of a call with blanks and nested braces (the open call's arguments extended without reading it all)", () => {
    everySplit(
      hermes,
      '<think>x</think>\n<tool_call>\n{"name": "f", "arguments": {"a": {"b": [1, "}"]}, "c": " "} }\n</tool_call>',
      { name: "f", arguments: '{"a": {"b": [1, "}"]}, "c": " "}' }
    )
  })

  it("qwen3_coder: every split of a call whose values hold '<' and '>' (an open parameter not read again)", () => {
    everySplit(
      coder,
      "<think>x</think>\n<tool_call>\n<function=f>\n<parameter=a>\nif a < b > c\n</parameter>\n" +
        "<parameter=b>\n[1, 2]\n</parameter>\n</function>\n</tool_call>",
      { name: "f", arguments: '{"a":"if a < b > c","b":[1,2]}' }
    )
  })

  it("a closed think block with blank content after it is not more reasoning (found by the property)", () => {
    const reading = { reasoning: qwen3, calls: { parser: hermes, tools: [], parallel: true } }
    for (let cut = 0; cut <= 23; cut++) {
      expect(streamed(reading, "<think> </think>\n    aa", [cut])).toEqual({ reasoning: " ", content: "\n    aa", calls: [] })
    }
  })

  it("never throws on arbitrary text", () => {
    fc.assert(fc.property(fc.string({ unit: fc.constantFrom("<", ">", "/", "tool_call", "think", "function=", "parameter=", "{", "}", '"', "a", "\n") }), fc.array(fc.nat(), { maxLength: 6 }), (text, cuts) => {
      for (const parser of [hermes, coder]) {
        streamed({ reasoning: qwen3, calls: { parser, tools: [], parallel: true } }, text, cuts.map((c) => c % (text.length + 1)))
      }
    }), { numRuns: 300 })
  })
})
