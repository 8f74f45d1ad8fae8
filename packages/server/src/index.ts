/**
 * An OpenAI-compatible HTTP server on the inference client: the server as a `Layer`
 * ({@link Server}), its options ({@link ServerConfig}), its one error type ({@link ServerError}),
 * the request bodies it takes as Schema ({@link OpenAiSchema}, {@link ResponsesRequest}), the
 * `--workers` processes ({@link Workers}), and what `/health` and `/metrics` may add
 * ({@link HealthReport}, {@link ExtraMetrics}). Everything else is under `src/internal/`: not part of
 * the package's API.
 *
 * @since 0.1.0
 */

/**
 * Prometheus text `/metrics` serves after the server's own, when something provides it (the
 * coordinator in the server's process).
 *
 * @since 0.2.0
 * @category services
 */
export * as ExtraMetrics from "./ExtraMetrics.ts"

/**
 * What `/health` says beyond the server's own state, when something provides it (the engines of
 * a coordinator in the server's process).
 *
 * @since 0.2.0
 * @category services
 */
export * as HealthReport from "./HealthReport.ts"

/**
 * The request bodies of `/v1/chat/completions` and `/v1/completions` as Schema, and the shapes of
 * the answers.
 *
 * @since 0.1.0
 * @category schemas
 */
export * as OpenAiSchema from "./OpenAiSchema.ts"

/**
 * The request body of `/v1/responses` (OpenAI's Responses API, as vLLM serves it) as Schema.
 *
 * @since 0.2.0
 * @category schemas
 */
export * as ResponsesRequest from "./ResponsesRequest.ts"

/**
 * The server as a `Layer` over an `InferenceClient` and a `Tokenizer`.
 *
 * @since 0.1.0
 * @category layers
 */
export * as Server from "./Server.ts"

/**
 * The server's options, their defaults and their validation.
 *
 * @since 0.1.0
 * @category config
 */
export * as ServerConfig from "./ServerConfig.ts"

/**
 * The server's one error type (a reason union) and OpenAI's error body.
 *
 * @since 0.1.0
 * @category errors
 */
export * as ServerError from "./ServerError.ts"

/**
 * Several server processes on one port (`--workers`), Node's `cluster`.
 *
 * @since 0.1.0
 * @category layers
 */
export * as Workers from "./Workers.ts"
