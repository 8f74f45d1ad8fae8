/**
 * Reading a tokenizer directory's files: text, or JSON, each optional or required, with the path
 * in every error.
 *
 * @since 0.2.0
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Fs from "node:fs/promises"
import { FileNotFound, MalformedFile, type TextError, textError } from "../TextError.ts"

const describe = (cause: unknown): string => (cause instanceof Error ? cause.message : String(cause))

const malformed = (path: string, why: string): TextError => textError(new MalformedFile({ path, why }))

export const readText = (path: string): Effect.Effect<string | undefined, TextError> =>
  Effect.tryPromise({
    try: () => Fs.readFile(path, "utf8"),
    catch: (cause) => textError(new FileNotFound({ path, why: describe(cause) }))
  }).pipe(
    Effect.catchIf(
      (error) => error.reason._tag === "FileNotFound" && error.reason.why.includes("ENOENT"),
      () => Effect.succeed(undefined)
    )
  )

export const readJson = (path: string, required: boolean): Effect.Effect<unknown, TextError> =>
  readText(path).pipe(
    Effect.flatMap((text) => {
      if (text === undefined) {
        return required
          ? Effect.fail(textError(new FileNotFound({ path, why: "no such file" })))
          : Effect.succeed(undefined)
      }
      try {
        return Effect.succeed(JSON.parse(text) as unknown)
      } catch (cause) {
        return Effect.fail(malformed(path, `not JSON: ${describe(cause)}`))
      }
    })
  )
