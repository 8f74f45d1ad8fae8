export * as Msgpack from "./Msgpack.ts"
export * as ProtocolError from "./ProtocolError.ts"
