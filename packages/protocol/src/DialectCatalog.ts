/**
 * The catalog of protocol dialects: which Megatron-LM speaks which, looked up by name.
 *
 * | your Megatron-LM | dialect | framing | streaming | abort | KV hand-off | media |
 * |---|---|---|---|---|---|---|
 * | main (d98e8a64dd, after core_v0.19) | `main` | one frame | yes | yes | yes | yes |
 * | PR 6497 (refs/pull/6497/head) | `pr-6497` | metadata + prompt frames | yes | yes | yes | no |
 * | core_v0.19.x | `core_v0.19` | one frame | no | no | no | no |
 * | core_v0.18.x | `core_v0.18` | one frame, headers from 1 | no | no | no | no |
 * | core_v0.17.x | `core_v0.17` | one frame, headers from 1 | no | no | no | no |
 * | core_v0.16.x | `core_v0.16` | one frame, headers from 1, replies are records, PAUSE/STOP acked | no | no | no | no |
 * | the reference protocol (no Megatron-LM) | `reference` | five frames | yes | yes | yes | yes |
 *
 * There is no default dialect: a message a coordinator cannot parse kills it, so every client of
 * a coordinator the project did not start names its dialect.
 *
 * @since 0.2.0
 */
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import { type Dialect, type Name, names } from "./Dialect.ts"
import { coreV016 } from "./internal/dialects/coreV016.ts"
import { main } from "./internal/dialects/main.ts"
import { pr6497 } from "./internal/dialects/pr6497.ts"
import { reference } from "./internal/dialects/reference.ts"
import { coreV017, coreV018, coreV019 } from "./internal/dialects/releases.ts"

const byName: Readonly<Record<Name, Dialect>> = {
  reference,
  "pr-6497": pr6497,
  main,
  "core_v0.19": coreV019,
  "core_v0.18": coreV018,
  "core_v0.17": coreV017,
  "core_v0.16": coreV016
}

/**
 * Every dialect, in the order of {@link Dialect.names}.
 *
 * @category catalog
 * @since 0.2.0
 */
export const all: ReadonlyArray<Dialect> = names.map((name) => byName[name])

/**
 * The dialect of a name.
 *
 * @example
 * ```ts
 * import { DialectCatalog } from "@mcore-effect/protocol"
 *
 * DialectCatalog.get("core_v0.19").framing // "single"
 * ```
 *
 * @category catalog
 * @since 0.2.0
 */
export const get = (name: Name): Dialect => byName[name]

/**
 * A dialect's name as configuration takes it (a flag, an environment variable).
 *
 * @category catalog
 * @since 0.2.0
 */
export const DialectName = Schema.Literals(names)

/**
 * The dialect of a name read from outside, or why there is none.
 *
 * @example
 * ```ts
 * import { DialectCatalog } from "@mcore-effect/protocol"
 *
 * DialectCatalog.parse("core_v0.19") // Result.succeed(the core_v0.19 dialect)
 * DialectCatalog.parse("v0.19") // Result.fail("unknown protocol "v0.19": one of main, pr-6497, ...")
 * ```
 *
 * @category catalog
 * @since 0.2.0
 */
export const parse = (name: string): Result.Result<Dialect, string> =>
  Object.hasOwn(byName, name)
    ? Result.succeed(byName[name as Name])
    : Result.fail(`unknown protocol ${JSON.stringify(name)}: one of ${names.join(", ")}`)
