/**
 * An OpenAI-compatible HTTP server on the inference client.
 *
 * @since 0.1.0
 */
export {}
