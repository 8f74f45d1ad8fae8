/**
 * The direct writer of a message's head: whatever it takes, its bytes are the general writer's;
 * whatever it does not take, it leaves to the general writer (and says so with `undefined`).
 */
import { describe, expect, it } from "@effect/vitest"
import * as fc from "fast-check"
import { Msgpack } from "../../src/index.ts"
import * as DirectArray from "../../src/internal/directArray.ts"

/** Values it takes: integers across every width, nils, and bytes already encoded. */
const taken = fc.oneof(
  fc.integer({ min: 0, max: 0x7f }),
  fc.integer({ min: 0x80, max: 0xffff }),
  fc.integer({ min: 0x1_0000, max: 0xffff_ffff }),
  fc.constant(null),
  fc.constant(undefined),
  fc.jsonValue().map((value) => new Msgpack.Raw(Msgpack.encode(value)))
)

/** Values it leaves to the general writer. */
const left = fc.oneof(
  fc.integer({ min: -0x8000_0000, max: -1 }),
  fc.constant(2 ** 32),
  fc.constant(-0),
  fc.double({ noInteger: true }),
  fc.string(),
  fc.boolean(),
  fc.constant(new Uint8Array([1, 2])),
  fc.constant({ a: 1 })
)

describe("DirectArray.encode", () => {
  it("writes what Msgpack.encode writes, for up to 15 values it takes", () => {
    fc.assert(
      fc.property(fc.array(taken, { maxLength: 15 }), (values) => {
        expect(Buffer.from(DirectArray.encode(values)!).toString("hex")).toBe(Buffer.from(Msgpack.encode(values)).toString("hex"))
      })
    )
  })

  it("leaves to the general writer an array with any value it does not take, or over 15 values", () => {
    fc.assert(
      fc.property(fc.array(taken, { maxLength: 14 }), left, fc.nat(), (values, other, at) => {
        const mixed: Array<unknown> = [...values]
        mixed.splice(at % (values.length + 1), 0, other)
        expect(DirectArray.encode(mixed)).toBeUndefined()
      })
    )
    expect(DirectArray.encode(Array.from({ length: 16 }, () => 1))).toBeUndefined()
  })

  it("writes a SUBMIT_REQUEST's head: header, request id, encoded parameters and a nil", () => {
    const params = new Msgpack.Raw(Msgpack.encode({ temperature: 1.5 }))
    expect(Buffer.from(DirectArray.encode([20, 300, params, null])!).toString("hex")).toBe(
      "9414cd012c" + Buffer.from(params.bytes).toString("hex") + "c0"
    )
  })
})
