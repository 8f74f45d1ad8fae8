/**
 * A request's routing key, for a server over several coordinators (`mcore serve --coordinator A
 * --coordinator B ...`, a `Fleet`): OpenAI's `prompt_cache_key`, else `user`, else the header
 * `--session-header` names; an empty one is none. The client places requests with one key on one
 * coordinator, the same in every server over the same coordinators (`SubmitOptions.routingKey`),
 * so a conversation's KV cache stays where it is. Over one coordinator it changes nothing.
 *
 * The body's two fields were checked as strings (or null) by the endpoint's Schema.
 *
 * @since 0.2.0
 */
import type { Handler } from "./Handler.ts"

const nonEmpty = (value: unknown): string | undefined => typeof value === "string" && value.length > 0 ? value : undefined

/**
 * The routing key of a request (see the module's documentation), or `undefined`.
 *
 * @since 0.2.0
 */
export const of = (handler: Handler): string | undefined => {
  const body = handler.body as { readonly prompt_cache_key?: unknown; readonly user?: unknown }
  const key = nonEmpty(body.prompt_cache_key) ?? nonEmpty(body.user)
  if (key !== undefined) return key
  const header = handler.shared.state.config.sessionHeader
  return header === undefined ? undefined : nonEmpty(handler.request.headers[header])
}
