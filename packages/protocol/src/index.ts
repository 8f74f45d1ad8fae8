/**
 * The Megatron-LM Core inference coordinator's wire protocol as data: headers, every message's
 * frame layout declared once, encode and decode derived from the declarations, block hashing
 * and media keys; and `FrameSocket`, the reader and single writer every peer drives its ZeroMQ
 * socket with (structural: this package does not depend on zeromq), and `MemorySocket`, in-memory
 * ROUTER and DEALER sides for peers that meet without ZeroMQ.
 *
 * @since 0.1.0
 */
export * as AddressAllowlist from "./AddressAllowlist.ts"
export * as BlockHashes from "./BlockHashes.ts"
export * as Dialect from "./Dialect.ts"
export * as DialectCatalog from "./DialectCatalog.ts"
/**
 * The former name of {@link DialectCatalog} (until 0.2.x), the same module: kept so that existing
 * imports compile.
 *
 * @since 0.2.0
 * @deprecated Use `DialectCatalog`.
 */
export * as Dialects from "./DialectCatalog.ts"
export * as Frames from "./Frames.ts"
export * as FrameSocket from "./FrameSocket.ts"
export * as Headers from "./Headers.ts"
export * as Media from "./Media.ts"
export * as MemorySocket from "./MemorySocket.ts"
export * as Messages from "./Messages.ts"
export * as MessageSpec from "./MessageSpec.ts"
export * as Msgpack from "./Msgpack.ts"
export * as MsgpackScan from "./MsgpackScan.ts"
export * as PrefixHashing from "./PrefixHashing.ts"
export * as Prompt from "./Prompt.ts"
export * as ProtocolError from "./ProtocolError.ts"
export * as Reply from "./Reply.ts"
export * as SamplingParams from "./SamplingParams.ts"
/**
 * `isPlainObject` and `describeValue`, shared with the client and testkit so that every package
 * judges and names values alike. Internal: not a stable API.
 *
 * @since 0.1.0
 * @internal
 */
export * as Values from "./internal/values.ts"
export * as Submission from "./Submission.ts"
export * as WireTypes from "./WireTypes.ts"
export * as Zmtp from "./Zmtp.ts"
export * as ZmtpConnection from "./ZmtpConnection.ts"
export * as ZmtpRouter from "./ZmtpRouter.ts"
