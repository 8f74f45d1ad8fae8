/**
 * This package's version: what `GET /version` answers (`{"version": ...}`, vLLM's shape).
 *
 * @since 0.1.0
 */
export const version = "0.1.0"
