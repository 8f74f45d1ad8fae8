/**
 * A message declaration compiled once for its codec: a decoder per field, the integer check of
 * each metadata value on the wire, and the float keys each value is written with.
 *
 * @since 0.2.0
 * @internal
 */
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as SchemaAST from "effect/SchemaAST"
import type * as MessageSpec from "../MessageSpec.ts"
import { floatKeysOf, type WireIntCheck, wireIntCheck } from "./wireNumbers.ts"

export type FieldDecoder = (input: unknown) => Result.Result<unknown, string>

export const fieldDecoder = (schema: Schema.Top): FieldDecoder => {
  const decode = Schema.decodeUnknownResult(schema as Schema.Codec<unknown, unknown>)
  return (input) => {
    const result = decode(input)
    return Result.isSuccess(result) ? Result.succeed(result.success) : Result.fail(result.failure.message)
  }
}

export interface Compiled {
  readonly spec: MessageSpec.Any
  readonly metadata: ReadonlyArray<readonly [string, FieldDecoder]>
  /** Per metadata value, its integer check on the wire (or `undefined`). */
  readonly wireInts: ReadonlyArray<WireIntCheck | undefined>
  /** The last metadata index with a check: the walk over frame 0's bytes stops there. */
  readonly lastWireInt: number
  /** Per metadata value, the keys written as float64 (or `undefined`). */
  readonly floatKeys: ReadonlyArray<ReadonlySet<string> | undefined>
  readonly bodies: ReadonlyArray<readonly [string, FieldDecoder]>
  /** Per body, the keys written as float64 (or `undefined`): single-frame bodies are map values too. */
  readonly bodyFloatKeys: ReadonlyArray<ReadonlySet<string> | undefined>
  /** Decoder of one element of the variadic body. */
  readonly variadicElement: FieldDecoder | undefined
}

export const compile = (spec: MessageSpec.Any): Compiled => {
  const variadic = spec.variadic
  const wire = spec.metadataKeys.map((key) => SchemaAST.toEncoded((spec.metadata[key] as Schema.Top).ast))
  const wireInts = wire.map(wireIntCheck)
  return {
    spec,
    floatKeys: wire.map(floatKeysOf),
    metadata: spec.metadataKeys.map((key) => [key, fieldDecoder(spec.metadata[key])] as const),
    wireInts,
    lastWireInt: wireInts.reduce((last, check, i) => (check === undefined ? last : i), -1),
    bodies: spec.bodyKeys
      .filter((key) => key !== variadic?.body)
      .map((key) => [key, fieldDecoder(spec.bodies[key])] as const),
    bodyFloatKeys: spec.bodyKeys.map((key) => floatKeysOf(SchemaAST.toEncoded((spec.bodies[key] as Schema.Top).ast))),
    variadicElement: variadic === undefined
      ? undefined
      : fieldDecoder((spec.bodies[variadic.body] as unknown as Schema.$Array<Schema.Top>).value)
  }
}
