/**
 * An OpenAI-compatible HTTP server on the inference client.
 *
 * @since 0.1.0
 */
export * as Admission from "./Admission.ts"
export * as ChatCompletions from "./ChatCompletions.ts"
export * as Choice from "./Choice.ts"
export * as Chunks from "./Chunks.ts"
export * as CommonShape from "./CommonShape.ts"
export * as Completions from "./Completions.ts"
export * as Generation from "./Generation.ts"
export * as JsonResponse from "./JsonResponse.ts"
export * as Metrics from "./Metrics.ts"
export * as OpenAiSchema from "./OpenAiSchema.ts"
export * as Prompts from "./Prompts.ts"
export * as Routes from "./Routes.ts"
export * as Sampling from "./Sampling.ts"
export * as Server from "./Server.ts"
export * as ServerConfig from "./ServerConfig.ts"
export * as ServerError from "./ServerError.ts"
export * as ServerState from "./ServerState.ts"
export * as Sse from "./Sse.ts"
export * as Workers from "./Workers.ts"
