/**
 * The Megatron-LM Core inference coordinator's wire protocol as data: headers, every message's
 * frame layout declared once, encode and decode derived from the declarations, block hashing
 * and media keys. Pure: no sockets.
 *
 * @since 0.1.0
 */
export * as BlockHashes from "./BlockHashes.ts"
export * as Frames from "./Frames.ts"
export * as Headers from "./Headers.ts"
export * as Media from "./Media.ts"
export * as Messages from "./Messages.ts"
export * as MessageSpec from "./MessageSpec.ts"
export * as Msgpack from "./Msgpack.ts"
export * as MsgpackScan from "./MsgpackScan.ts"
export * as PrefixHashing from "./PrefixHashing.ts"
export * as Prompt from "./Prompt.ts"
export * as ProtocolError from "./ProtocolError.ts"
export * as Reply from "./Reply.ts"
export * as SamplingParams from "./SamplingParams.ts"
export * as Submission from "./Submission.ts"
export * as WireTypes from "./WireTypes.ts"
