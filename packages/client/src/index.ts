/**
 * A TypeScript / Effect client for Megatron-LM Core's inference coordinator: the Python
 * `InferenceClient` as an Effect service, wire-compatible with the Python peers.
 *
 * @since 0.1.0
 */
export * as ClientConfig from "./ClientConfig.ts"
export * as ClientError from "./ClientError.ts"
export * as ClientMetrics from "./ClientMetrics.ts"
export * as ClientService from "./ClientService.ts"
export * as Disaggregated from "./Disaggregated.ts"
export * as Fleet from "./Fleet.ts"
export * as FleetConfig from "./FleetConfig.ts"
export * as InferenceClient from "./InferenceClient.ts"
export * as Membership from "./Membership.ts"
export * as Reply from "./Reply.ts"
export * as Setting from "./Setting.ts"
export * as Transport from "./Transport.ts"
