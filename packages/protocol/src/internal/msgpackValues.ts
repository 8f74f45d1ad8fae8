/**
 * The values with a msgpack form of their own, as `Msgpack` writes them: bytes already encoded
 * ({@link Raw}), a number written as a Python float ({@link Float}), a map with float fields, the
 * bytes remembered for a frozen value, and the error for what has no form a Python peer reads.
 * Public through `Msgpack`, which re-exports them.
 *
 * @since 0.1.0
 * @internal
 */
/**
 * Thrown by {@link encode} for a value that has no msgpack form a Python peer can read:
 * a function, a symbol, a class instance, an integer outside 64 bits, a `Map` key that is not a
 * string (Python's `unpackb` refuses those), or nesting deeper than Python's packer allows
 * (which is also how a cycle shows up).
 *
 * @category errors
 * @since 0.1.0
 */
export class NotEncodableException extends globalThis.Error {
  override readonly name = "NotEncodableException"
  constructor(readonly path: string, readonly reason: string) {
    super(`${reason} at ${path === "" ? "the root" : path}`)
  }
}

/**
 * Typed arrays of numbers other than `Uint8Array` (which is written as msgpack bin): each is
 * written as a msgpack array of numbers, integers in their smallest form.
 *
 * @category models
 * @since 0.1.0
 */
export type NumberTypedArray =
  | Int8Array
  | Uint8ClampedArray
  | Int16Array
  | Uint16Array
  | Int32Array
  | Uint32Array
  | Float32Array
  | Float64Array

/** Every typed array written as an array of numbers. @internal */
export type NumericTypedArray = NumberTypedArray | BigInt64Array | BigUint64Array

/**
 * Bytes that are already one msgpack value, written verbatim wherever they appear: a body frame
 * forwarded untouched, or a media frame whose exact bytes were hashed for its cache key.
 *
 * @example
 * ```ts
 * import { Msgpack } from "@mcore-effect/protocol"
 *
 * const media = Msgpack.encode({ image: [new Uint8Array([1])] }, { sortKeys: true })
 * Msgpack.encode([1, new Msgpack.Raw(media)]) // the media bytes, unchanged, as element 2
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export class Raw {
  constructor(readonly bytes: Uint8Array) {}
}

/**
 * A number written as float64 wherever it appears, whole or not: a Python `float` (`1.0` is
 * `cb 3f f0 ..`), where a plain number that is whole is written as an integer (`01`), as Python
 * writes an `int`. A JavaScript number cannot say which of the two it is; a declaration can.
 *
 * @example
 * ```ts
 * import { Msgpack } from "@mcore-effect/protocol"
 *
 * Msgpack.encode({ temperature: new Msgpack.Float(1) }) // 81 ab .. cb 3f f0 00 00 00 00 00 00
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export class Float {
  constructor(readonly value: number) {}
}

/**
 * A plain object written as a map whose values at the keys in `floats` are written as
 * {@link Float}s when they are numbers: a declaration's float fields, without a copy of the
 * object (a copy costs more: PERFORMANCE.md#float-fields-marked-not-copied-or-written-by-a-second-writer).
 *
 * @internal
 */
export class FloatFields {
  constructor(readonly map: Readonly<Record<string, unknown>>, readonly floats: ReadonlySet<string>) {}
}

const remembered = new WeakMap<object, Uint8Array>()

/**
 * Remembers the bytes a frozen value encodes to, as its declaration writes it (float fields as
 * float64): `Frames` writes them for that value, as a metadata value, instead of encoding it
 * again. Only frozen values: a value that cannot change cannot go stale. Its nested objects must
 * be frozen too (the caller's promise).
 *
 * @category encoding
 * @since 0.1.0
 * @internal
 */
export const remember = (value: object, bytes: Uint8Array): void => {
  if (!Object.isFrozen(value)) throw new globalThis.TypeError("only a frozen value's bytes can be remembered")
  remembered.set(value, bytes)
}

/**
 * The bytes {@link remember}ed for `value`, or `undefined`.
 *
 * @category encoding
 * @since 0.1.0
 * @internal
 */
export const rememberedBytes = (value: unknown): Uint8Array | undefined =>
  value !== null && typeof value === "object" ? remembered.get(value) : undefined
