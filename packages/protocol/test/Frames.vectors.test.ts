import { describe, expect, it } from "@effect/vitest"
import { Result } from "effect"
import { Frames, Messages, MessageSpec, Msgpack } from "../src/index.ts"
import { fromJson, hasFloat, hex, plain, readFixture } from "./fixtureValues.ts"

interface Vector {
  readonly name: string
  readonly frames_hex: ReadonlyArray<string>
  readonly decoded: ReadonlyArray<unknown>
}

const vectors = readFixture<{ messages: ReadonlyArray<Vector> }>("frames.json").messages

/** Which direction each vector travels in. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const codecOf = (name: string): Frames.Codec<any> =>
  name === "connect_ack" || name.startsWith("engine_reply") ? Messages.Coordinator : Messages.Client

/** A decoded message laid back out as the positional values of its frames. */
const positional = (codec: Frames.Codec<ReadonlyArray<MessageSpec.Any>>, message: Record<string, unknown>) => {
  const spec = codec.specs.find((s) => s.tag === message._tag)!
  return [
    [spec.header, ...spec.metadataKeys.map((k) => message[k])],
    ...spec.bodyKeys.map((k) => message[k])
  ]
}

describe("frames.json vectors (produced by the Python peer's msgpack)", () => {
  it("covers every message the Python client and coordinator exchange", () => {
    expect(vectors.length).toBeGreaterThanOrEqual(22)
  })

  for (const vector of vectors) {
    describe(vector.name, () => {
      const frames = vector.frames_hex.map((h) => new Uint8Array(Buffer.from(h, "hex")))
      const codec = codecOf(vector.name)

      it("decodes to the listed values", () => {
        const decoded = codec.decode(frames)
        if (Result.isFailure(decoded)) throw decoded.failure
        const message = decoded.success as Record<string, unknown>
        const expected = vector.decoded.map(fromJson)
        const actual = positional(codec, message).map((value) =>
          value instanceof Msgpack.Raw ? Msgpack.decode(value.bytes) : value
        )
        // The typed reply unwraps nothing at this layer: the raw map is kept as sent.
        expect(plain(actual)).toEqual(plain(expected))
      })

      it("re-encodes byte for byte (floats: same value)", () => {
        const decoded = Result.getOrThrow(codec.decode(frames))
        const encoded = Result.getOrThrow(codec.encode(decoded as never))
        expect(encoded.length).toBe(frames.length)
        encoded.forEach((frame, i) => {
          const expectedValue = fromJson(vector.decoded[i])
          if (hasFloat(expectedValue)) {
            expect(plain(Msgpack.decode(frame))).toEqual(plain(Msgpack.decode(frames[i]!)))
          } else {
            expect(hex(frame)).toBe(vector.frames_hex[i])
          }
        })
      })
    })
  }
})
