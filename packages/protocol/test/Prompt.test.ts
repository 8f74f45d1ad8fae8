import { describe, expect, it } from "@effect/vitest"
import { Result, Schema } from "effect"
import * as fc from "fast-check"
import * as Msgpack from "../src/Msgpack.ts"
import * as Prompt from "../src/Prompt.ts"

const why = (input: unknown): string => {
  const result = Prompt.validate(input)
  if (Result.isSuccess(result)) throw new Error("expected a failure")
  const reason = result.failure.reason
  if (reason._tag !== "InvalidPrompt") throw new Error(`expected InvalidPrompt, got ${reason._tag}`)
  return reason.why
}

describe("Prompt.validate", () => {
  it("accepts a string as is", () => {
    for (const s of ["Hello, world", " ", "héllo 🌍"]) {
      const result = Prompt.validate(s)
      expect(Result.isSuccess(result) && result.success).toBe(s)
    }
  })

  it("accepts token ids and returns the very same value", () => {
    const inputs = [
      [0],
      [0, 1, 125416, Number.MAX_SAFE_INTEGER],
      new Int32Array([1, 2, 3]),
      new Uint32Array([0, 4294967295]),
      new Int16Array([0, 32767]),
      new Uint16Array([65535]),
      new Float64Array([0, 7, 2 ** 53 - 1])
    ]
    for (const input of inputs) {
      const result = Prompt.validate(input)
      expect(Result.isSuccess(result) && result.success).toBe(input)
    }
  })

  it("sends typed arrays as msgpack int arrays, the same bytes as a plain array", () => {
    const ids = [125416, 62485, 16239, 7204, 40835]
    const expected = "95ce0001e9e8cdf415cd3f6fcd1c24cd9f83" // frames.json submit_tokens_short_hashed, frame 1
    for (const prompt of [ids, Int32Array.from(ids), Uint32Array.from(ids), Float64Array.from(ids)]) {
      const result = Prompt.validate(prompt)
      if (Result.isFailure(result)) throw new Error(result.failure.message)
      expect(Buffer.from(Msgpack.encode(result.success)).toString("hex")).toBe(expected)
    }
  })

  const bad: ReadonlyArray<readonly [string, unknown, number, string]> = [
    ["a negative id", [1, 2, -1], 2, "-1"],
    ["a fraction", [1.5], 0, "1.5"],
    ["2^53", [0, 2 ** 53], 1, String(2 ** 53)],
    ["NaN", [3, Number.NaN], 1, "NaN"],
    ["Infinity", [Infinity], 0, "Infinity"],
    ["a bigint", [1, 2n], 1, "2n"],
    ["a string id", ["1"], 0, "\"1\""],
    ["a nested array", [[1, 2]], 0, "an array"],
    ["an object", [{ id: 1 }], 0, "an object"],
    ["null", [null], 0, "null"],
    ["a boolean", [true], 0, "true"],
    ["a hole", [1, , 3], 1, "undefined"], // eslint-disable-line no-sparse-arrays
    ["a negative Int32Array element", new Int32Array([5, 6, -7]), 2, "-7"],
    ["a negative Int16Array element", new Int16Array([-1]), 0, "-1"],
    ["a fractional Float64Array element", new Float64Array([1, 2.5]), 1, "2.5"],
    ["a NaN Float64Array element", new Float64Array([Number.NaN]), 0, "NaN"],
    ["a Float64Array element of 2^53", new Float64Array([2 ** 53]), 0, String(2 ** 53)]
  ]
  for (const [name, input, index, value] of bad) {
    it(`reports the first bad id: ${name}`, () => {
      const text = why(input)
      expect(text).toContain(`index ${index} is ${value}`)
    })
  }

  it("refuses an empty prompt, text or token ids, saying it is empty", () => {
    for (const empty of ["", [], new Int32Array(0), new Uint32Array(0), new Int16Array(0), new Uint16Array(0), new Float64Array(0)]) {
      expect(why(empty)).toMatch(/^it is empty; a request needs at least one character or token id/)
    }
    // An empty Uint8Array is still bytes: the reason that matters is its type.
    expect(why(new Uint8Array(0))).toContain("bytes, not token ids")
  })

  it("refuses a Uint8Array, saying it is bytes", () => {
    expect(why(new Uint8Array([1, 2, 3]))).toContain("bytes, not token ids")
    expect(why(Buffer.from([1, 2, 3]))).toContain("bytes, not token ids")
  })

  it("refuses other typed arrays and other values", () => {
    expect(why(new Float32Array([1]))).toContain("Float32Array")
    expect(why(new BigInt64Array([1n]))).toContain("BigInt64Array")
    expect(why(new Int8Array([1]))).toContain("Int8Array")
    for (const input of [null, undefined, 42, 1n, true, { 0: 1, length: 1 }, new Map(), () => "x", Symbol("s")]) {
      expect(why(input)).toContain("a string or an array of token ids")
    }
  })

  it("accepts every array of non-negative safe integers, and refuses one with a bad id", () => {
    fc.assert(fc.property(fc.array(fc.maxSafeNat(), { minLength: 1 }), (ids) => Result.isSuccess(Prompt.validate(ids))))
    fc.assert(
      fc.property(
        fc.array(fc.maxSafeNat()),
        fc.oneof(fc.integer({ max: -1 }), fc.double({ noInteger: true }), fc.constant(2 ** 53)),
        fc.nat(),
        (ids, badId, at) => {
          const i = ids.length === 0 ? 0 : at % (ids.length + 1)
          const prompt = [...ids.slice(0, i), badId, ...ids.slice(i)]
          return why(prompt).includes(`index ${i} is`)
        }
      )
    )
  })
})

describe("Prompt.isTokenIds", () => {
  it("tells token ids from text", () => {
    expect(Prompt.isTokenIds("abc")).toBe(false)
    expect(Prompt.isTokenIds([1])).toBe(true)
    expect(Prompt.isTokenIds(new Int32Array(1))).toBe(true)
  })
})

describe("Prompt.PromptWire", () => {
  const decode = Schema.decodeUnknownResult(Prompt.PromptWire)
  it("decodes a string or an array of non-negative integers", () => {
    expect(Result.isSuccess(decode("hi"))).toBe(true)
    expect(Result.isSuccess(decode([1, 2, 3]))).toBe(true)
    expect(Result.isFailure(decode([1, -2]))).toBe(true)
    expect(Result.isFailure(decode([1.5]))).toBe(true)
    expect(Result.isFailure(decode(new Uint8Array([1])))).toBe(true)
  })

  // The wire schema decodes what any peer may send, an empty prompt included; this client refuses
  // to send one.
  it.prop("every non-empty wire prompt passes validate", [Prompt.PromptWire], ([prompt]) => {
    expect(Result.isSuccess(Prompt.validate(prompt))).toBe(prompt.length > 0)
  })
})

describe("Prompt.frame", () => {
  // The oracle: validating, then encoding what passed. `frame` must agree on every input: the
  // verdict, the error's text and the bytes.
  const twoPasses = (input: unknown): Result.Result<Uint8Array, string> => {
    const valid = Prompt.validate(input)
    return Result.isFailure(valid) ? Result.fail(valid.failure.message) : Result.succeed(Msgpack.encode(valid.success))
  }
  const onePass = (input: unknown): Result.Result<Uint8Array, string> => {
    const framed = Prompt.frame(input)
    return Result.isFailure(framed) ? Result.fail(framed.failure.message) : Result.succeed(framed.success.bytes)
  }
  const agree = (input: unknown) => {
    const [a, b] = [twoPasses(input), onePass(input)]
    if (Result.isSuccess(a) && Result.isSuccess(b)) expect(Buffer.from(b.success).equals(Buffer.from(a.success))).toBe(true)
    else expect(b).toEqual(a)
  }
  const id = fc.oneof(
    { weight: 8, arbitrary: fc.nat(300_000) },
    fc.constantFrom(0, -0, 127, 128, 255, 256, 65_535, 65_536, 2 ** 32 - 1, 2 ** 32, 2 ** 53 - 1, 2 ** 53),
    fc.integer({ min: 2 ** 32, max: Number.MAX_SAFE_INTEGER })
  )
  const bad = fc.oneof(
    fc.constantFrom(-1, 0.5, Number.NaN, Infinity, -Infinity, "1", null, undefined, true, 1n, [1], {}),
    fc.double()
  )

  it("agrees with validate-then-encode on token arrays, good ones and ones with a bad id anywhere", () => {
    fc.assert(fc.property(fc.array(id, { maxLength: 600 }), agree))
    fc.assert(
      fc.property(fc.array(id, { minLength: 1, maxLength: 300 }), fc.nat(), bad, (ids, at, value) => {
        const input: Array<unknown> = [...ids]
        input[at % input.length] = value
        agree(input)
      })
    )
  })

  it("agrees on text, typed arrays and everything that is not a prompt", () => {
    for (const input of ["", "Hello", new Int32Array([1, -2]), new Uint16Array([1, 2]), new Float64Array([1, 0.5]), new Uint8Array(1), 7, null, {}]) {
      agree(input)
    }
    fc.assert(fc.property(fc.string(), agree))
  })

  it("leaves the pool as it found it after a refusal: the next frame is whole", () => {
    expect(Result.isFailure(Prompt.frame([1, 2, -3]))).toBe(true)
    const framed = Result.getOrThrow(Prompt.frame([4, 5]))
    expect(Array.from(framed.bytes)).toEqual([0x92, 4, 5])
    expect(Array.from(Msgpack.encode([6]))).toEqual([0x91, 6])
  })
})
