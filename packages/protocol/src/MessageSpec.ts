/**
 * How a message is laid out on the wire, declared once: which values ride in the metadata frame
 * (frame 0, after the header, in declaration order) and which body frames follow (one per body,
 * in declaration order). `Frames` derives encode and decode from these declarations, so no frame
 * index is written by hand and the two directions cannot drift.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import * as SchemaAST from "effect/SchemaAST"
import { type Header, type HeaderName, nameOf } from "./Headers.ts"

/**
 * One message's declaration.
 *
 * @category models
 * @since 0.1.0
 */
export interface MessageSpec<
  Tag extends string = string,
  Metadata extends Schema.Struct.Fields = Schema.Struct.Fields,
  Bodies extends Schema.Struct.Fields = Schema.Struct.Fields
> {
  readonly tag: Tag
  /** The header's value in the reference table. */
  readonly header: Header
  /** The header's name: a codec writes the value its own table gives this name. */
  readonly headerName: HeaderName
  /** Values of frame 0 after the header, in wire order. Bounded: nothing here grows with the prompt. */
  readonly metadata: Metadata
  /** Body frames, in wire order. */
  readonly bodies: Bodies
  /**
   * A body that spans all remaining frames, one array element per frame, its length given by an
   * array in the metadata (the engines' batched replies). Always the last body.
   */
  readonly variadic: { readonly body: keyof Bodies & string; readonly countedBy: keyof Metadata & string } | undefined
  readonly metadataKeys: ReadonlyArray<keyof Metadata & string>
  readonly bodyKeys: ReadonlyArray<keyof Bodies & string>
  /**
   * How many of the last bodies are optional (declared with `Schema.optionalKey`). In one frame
   * (single framing) the array ends before those that are absent, so `[20, id, prompt, sp]` and
   * `[20, id, prompt, sp, media]` are one message (Megatron-LM main's SUBMIT_REQUEST, whose
   * coordinator takes either); multipart messages always carry every body, an absent one as nil.
   */
  readonly optionalTail: number
  /** The whole message as a tagged struct: its type, validation and arbitraries. */
  readonly schema: Schema.TaggedStruct<Tag, Metadata & Bodies>
}

/**
 * Any message declaration.
 *
 * @category models
 * @since 0.1.0
 */
export type Any = MessageSpec<string, any, any>

/**
 * The message value a declaration describes.
 *
 * @category models
 * @since 0.1.0
 */
export type Type<S extends Any> = S["schema"]["Type"]

/**
 * Declares a message.
 *
 * @example
 * ```ts
 * import { Headers, MessageSpec } from "@mcore-effect/protocol"
 * import { Schema } from "effect"
 *
 * const Abort = MessageSpec.make("AbortRequest", Headers.values.ABORT_REQUEST, {
 *   metadata: { requestId: Schema.Int },
 *   bodies: {}
 * })
 * // frames: [pack([23, requestId])]
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = <
  const Tag extends string,
  const Metadata extends Schema.Struct.Fields,
  const Bodies extends Schema.Struct.Fields
>(
  tag: Tag,
  header: Header,
  layout: {
    readonly metadata: Metadata
    readonly bodies: Bodies
    readonly variadic?: { readonly body: keyof Bodies & string; readonly countedBy: keyof Metadata & string }
  }
): MessageSpec<Tag, Metadata, Bodies> => {
  const bodyKeys = Object.keys(layout.bodies) as Array<keyof Bodies & string>
  if (layout.variadic !== undefined && bodyKeys[bodyKeys.length - 1] !== layout.variadic.body) {
    throw new globalThis.Error(`${tag}: the variadic body must be the last body`)
  }
  const optional = bodyKeys.map((key) => SchemaAST.isOptional((layout.bodies[key] as Schema.Top).ast))
  const optionalTail = optional.length - (optional.lastIndexOf(false) + 1)
  if (optional.some((o, i) => o && i < optional.length - optionalTail)) {
    throw new globalThis.Error(`${tag}: only the last bodies may be optional`)
  }
  if (optionalTail > 0 && layout.variadic !== undefined) throw new globalThis.Error(`${tag}: a variadic body is never optional`)
  for (const key of Object.keys(layout.metadata)) {
    if (SchemaAST.isOptional((layout.metadata[key] as Schema.Top).ast)) {
      throw new globalThis.Error(`${tag}: metadata value ${key} cannot be optional`)
    }
  }
  return {
    tag,
    header,
    headerName: nameOf(header),
    metadata: layout.metadata,
    bodies: layout.bodies,
    variadic: layout.variadic,
    metadataKeys: Object.keys(layout.metadata) as Array<keyof Metadata & string>,
    bodyKeys,
    optionalTail,
    schema: Schema.TaggedStruct(tag, { ...layout.metadata, ...layout.bodies } as Metadata & Bodies)
  }
}

/**
 * The frame count a message of this declaration has, when it is fixed.
 *
 * @category getters
 * @since 0.1.0
 */
export const fixedArity = (spec: Any): number | undefined =>
  spec.variadic === undefined ? 1 + spec.bodyKeys.length : undefined

/**
 * Where a body rides: its frame index (frame 0 is the metadata). For a variadic body, the first
 * of its frames.
 *
 * @example
 * ```ts
 * import { Messages, MessageSpec } from "@mcore-effect/protocol"
 *
 * MessageSpec.frameIndex(Messages.SubmitRequest, "blockHashes") // 2
 * ```
 *
 * @category getters
 * @since 0.1.0
 */
export const frameIndex = <S extends Any>(spec: S, body: S["bodyKeys"][number]): number => {
  const index = spec.bodyKeys.indexOf(body)
  if (index < 0) throw new globalThis.Error(`${spec.tag} has no body named ${body}`)
  return 1 + index
}
