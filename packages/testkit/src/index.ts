/**
 * A coordinator and engines that speak the Megatron-LM Core inference coordinator's wire
 * protocol over real ZeroMQ sockets, without a GPU: for testing clients (and services built on
 * them) against something that behaves like the real thing, faults included.
 *
 * @since 0.1.0
 */
export * as Arbitraries from "./Arbitraries.ts"
export * as SchemaArbitrary from "./SchemaArbitrary.ts"
