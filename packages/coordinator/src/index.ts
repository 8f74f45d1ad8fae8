/**
 * The coordinator side of Megatron-LM Core's inference protocol, in every dialect the project
 * speaks: clients and engines meet on one ROUTER, submissions are routed by policy, control
 * signals run their state machine, engines' replies go back to their clients, detokenized with
 * the model's tokenizer.
 *
 * @since 0.2.0
 */
export * as ControlState from "./ControlState.ts"
export * as Coordinator from "./Coordinator.ts"
export * as CoordinatorError from "./CoordinatorError.ts"
export * as CoordinatorMetrics from "./CoordinatorMetrics.ts"
export * as CoordinatorTokenizer from "./CoordinatorTokenizer.ts"
export * as HostedClient from "./HostedClient.ts"
export * as PrefixTable from "./PrefixTable.ts"
export * as Routing from "./Routing.ts"
