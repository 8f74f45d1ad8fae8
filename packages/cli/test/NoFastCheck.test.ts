/**
 * The `mcore` command runs the testkit's cluster (`mcore coordinator`, `--embedded`) but never
 * its fast-check arbitraries, which live behind their own entry point
 * (`@mcore-effect/testkit/arbitraries`) so that the command does not load fast-check.
 *
 * Proven on the built output: a Node process whose module resolution refuses any file of the
 * fast-check package imports the CLI's whole module graph (`dist/Cli.js`, what `dist/main.js`
 * runs) and the runtime testkit entry. The same process importing the arbitraries entry is
 * refused, so the check can fail.
 */
import { execFile } from "node:child_process"
import { beforeAll, describe, expect, it } from "vitest"
import { ensureBuilt } from "./support/Build.ts"

beforeAll(ensureBuilt, 300_000)

const built = (path: string) => new URL(`../../../${path}`, import.meta.url).href

// A module resolution hook (Node's `module.register`) that fails any import landing in fast-check.
const hooks = `
export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context)
  if (resolved.url.includes("/node_modules/fast-check/"))
    throw new Error("fast-check loaded: " + specifier + " imported by " + context.parentURL)
  return resolved
}
`
const register = `import { register } from "node:module"
register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(hooks)}`)})`

/** Imports `urls` in order in a fresh Node process that refuses fast-check; how it ended. */
const importRefusingFastCheck = (urls: ReadonlyArray<string>) =>
  new Promise<{ readonly code: number | null; readonly stdout: string; readonly stderr: string }>((resolve) => {
    const child = execFile(
      process.execPath,
      [
        "--import",
        `data:text/javascript,${encodeURIComponent(register)}`,
        "--input-type=module",
        "-e",
        `for (const url of JSON.parse(process.env.MCORE_IMPORTS)) await import(url)\nconsole.log("imported")`
      ],
      { env: { ...process.env, MCORE_IMPORTS: JSON.stringify(urls) }, timeout: 60_000 },
      (_error, stdout, stderr) => resolve({ code: child.exitCode, stdout, stderr })
    )
  })

describe("the CLI loads no fast-check", () => {
  it("imports the CLI's module graph and the runtime testkit without fast-check", async () => {
    const ended = await importRefusingFastCheck([
      built("packages/cli/dist/Cli.js"),
      built("packages/testkit/dist/index.js")
    ])
    expect(ended.stderr).toBe("")
    expect(ended.stdout).toBe("imported\n")
    expect(ended.code).toBe(0)
  }, 60_000)

  it("the check refuses the arbitraries entry, which does load fast-check", async () => {
    const ended = await importRefusingFastCheck([built("packages/testkit/dist/arbitraries/index.js")])
    expect(ended.code).not.toBe(0)
    expect(ended.stderr).toContain("fast-check loaded: fast-check imported by ")
    expect(ended.stderr).toContain(built("packages/testkit/dist/"))
  }, 60_000)
})
