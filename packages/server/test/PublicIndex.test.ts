/**
 * The server's public surface, held so that it does not grow back: the index exports at most
 * eight modules and none from `src/internal/`. Import circles and long files are held for every
 * package by `packages/protocol/test/Architecture.test.ts`.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Fs from "node:fs"
import * as Path from "node:path"

const src = Path.join(import.meta.dirname, "..", "src")

/** The modules `index.ts` re-exports, relative to `src`. */
const exported = (): Array<string> =>
  [...Fs.readFileSync(Path.join(src, "index.ts"), "utf8").matchAll(/^export\b[^;]*?from "\.\/([^"]+)"/gm)].map(
    (match) => match[1]!
  )

describe("the server's public index", () => {
  it("exports at most eight modules, none of them internal", () => {
    const modules = exported()
    expect(modules.length).toBeGreaterThan(0)
    expect(modules.length).toBeLessThanOrEqual(8)
    expect(modules.filter((file) => file.startsWith("internal"))).toEqual([])
  })
})
