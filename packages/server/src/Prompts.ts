/**
 * Prompts as the engines take them (token ids), from what requests carry: text (tokenized with
 * the served model's tokenizer) or token ids (checked against its vocabulary); a chat is rendered
 * through the text package's `TextGeneration`). Each refusal is a 400 naming the field.
 *
 * @since 0.1.0
 */
import type { Tokenizer } from "@mcore-effect/text"
import * as Result from "effect/Result"
import type * as Choice from "./Choice.ts"
import * as IgnoredFields from "./IgnoredFields.ts"
import type * as Routes from "./Routes.ts"
import { badRequest, ModelNotFound, serverError, type ServerError } from "./ServerError.ts"
import type { State } from "./ServerState.ts"

/**
 * Refuses a request naming another model (404, as OpenAI answers); no name is the served model.
 *
 * @since 0.1.0
 */
export const modelRefusal = (state: State, model: string | undefined): ServerError | undefined =>
  model === undefined || model === state.config.model
    ? undefined
    : serverError(new ModelNotFound({ model, served: state.config.model }))

/**
 * A request's body decoded (`decode`, a 400 naming the field) and naming the served model (404).
 *
 * @since 0.1.0
 */
export const decodeRequest = <A extends { readonly model?: string | undefined }>(
  state: State,
  decode: (input: unknown) => Result.Result<A, ServerError>,
  body: unknown
): Result.Result<A, ServerError> => {
  const decoded = decode(body)
  if (Result.isFailure(decoded)) return decoded
  const refused = modelRefusal(state, decoded.success.model)
  return refused === undefined ? decoded : Result.fail(refused)
}

/**
 * A generation request's body read: the fields that change nothing sifted out by `policy`
 * (`IgnoredFields`: named in `x-ignored-fields`, or a 400 for one that would change the output),
 * the rest decoded (`decode`) and naming the served model ({@link decodeRequest}).
 *
 * @since 0.2.0
 */
export const readRequest = <A extends { readonly model?: string | undefined }>(
  generation: Routes.Generation,
  policy: IgnoredFields.Policy,
  decode: (input: unknown) => Result.Result<A, ServerError>
): Result.Result<A, ServerError> => {
  const sifted = IgnoredFields.sift(policy, generation.state, generation.request, generation.body)
  if (Result.isFailure(sifted)) return Result.fail(sifted.failure)
  return decodeRequest(generation.state, decode, sifted.success)
}

/**
 * A text prompt, tokenized (special tokens added as the tokenizer's post-processor says, unless
 * `addSpecialTokens` is false).
 *
 * @since 0.1.0
 */
export const tokenizePrompt = (
  tokenizer: Tokenizer.Service,
  text: string,
  param: string,
  addSpecialTokens = true
): Result.Result<Choice.Prompt, ServerError> => {
  let ids: Array<number>
  try {
    ids = addSpecialTokens ? tokenizer.encode(text) : tokenizer.encode(text, { addSpecialTokens: false })
  } catch (cause) {
    return Result.fail(badRequest(param, `could not be tokenized: ${String(cause)}`))
  }
  if (ids.length === 0) return Result.fail(badRequest(param, "must not be empty"))
  return Result.succeed({ ids, text })
}

/**
 * A token-id prompt, each id checked (an integer from 0 to the vocabulary's size - 1, else a 400
 * saying which and why); its text (for `echo`) decoded.
 *
 * @since 0.1.0
 */
export const tokenPrompt = (
  tokenizer: Tokenizer.Service,
  ids: ReadonlyArray<number>,
  param: string
): Result.Result<Choice.Prompt, ServerError> => {
  if (ids.length === 0) return Result.fail(badRequest(param, "must not be empty"))
  const size = tokenizer.vocabSize
  for (let i = 0; i < ids.length; i++) {
    const id = ids[i]!
    if (Number.isInteger(id) && id >= 0 && id < size) continue
    const why = !Number.isInteger(id)
      ? `token id ${id} is not an integer`
      : id < 0
      ? `token id ${id} is negative (ids run from 0 to ${size - 1})`
      : `token id ${id} is outside the vocabulary (size ${size}: ids run from 0 to ${size - 1})`
    return Result.fail(badRequest(`${param}[${i}]`, why))
  }
  return Result.succeed({ ids, text: tokenizer.decode(ids) })
}
