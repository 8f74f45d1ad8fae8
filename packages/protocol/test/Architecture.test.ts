/**
 * The guard of issue 26's Verification: no import circle inside any package's `src` (type-only
 * imports count) and no `src` file above 450 lines, in every package of the repository. Today's
 * known offenders outside `protocol` and `text` are listed in `architecture/allowlist.ts`, which
 * may only shrink. The checks themselves are tested first on a scratch tree, so a check that
 * stopped seeing anything would fail here rather than pass quietly.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { knownCircles, knownLongFiles } from "./architecture/allowlist.ts"
import { inspect, maxLines } from "./architecture/sourceGraph.ts"

const key = (files: ReadonlyArray<string>): string => `circle of ${files.length} files: ${files.join(", ")}`

describe("the checks", () => {
  const scratch = (files: Record<string, string>): string => {
    const root = Fs.mkdtempSync(Path.join(Os.tmpdir(), "mcore-architecture-"))
    for (const [file, text] of Object.entries(files)) {
      Fs.mkdirSync(Path.dirname(Path.join(root, file)), { recursive: true })
      Fs.writeFileSync(Path.join(root, file), text)
    }
    return root
  }

  it("finds a circle closed by a type-only import, across folders, and names its files", () => {
    const root = scratch({
      "packages/a/src/A.ts": `import { b } from "./internal/b.ts"\nexport const a = b\n`,
      "packages/a/src/internal/b.ts": `import type { C } from "../C.ts"\nexport const b: C = 1\n`,
      "packages/a/src/C.ts": `import {\n  type A\n} from "./A.ts"\nexport type C = number\nexport type { A }\n`,
      "packages/a/src/D.ts": `/**\n * @example\n * import { a } from "./A.ts"\n */\nexport * from "./C.ts"\n`,
      "packages/b/src/E.ts": `export const e = () => import("./F.ts")\n`,
      "packages/b/src/F.ts": `export * as E from "./E.ts"\n`
    })
    try {
      const reports = inspect(root)
      expect(reports.map((report) => report.circles)).toEqual([
        [["packages/a/src/A.ts", "packages/a/src/C.ts", "packages/a/src/internal/b.ts"]],
        [["packages/b/src/E.ts", "packages/b/src/F.ts"]]
      ])
    } finally {
      Fs.rmSync(root, { recursive: true, force: true })
    }
  })

  it("finds a file above the limit, with its line count, and passes one at the limit", () => {
    const root = scratch({
      "packages/a/src/Long.ts": "export {}\n".repeat(maxLines + 1),
      "packages/a/src/AtLimit.ts": "export {}\n".repeat(maxLines)
    })
    try {
      expect(inspect(root)[0]!.longFiles).toEqual([{ file: "packages/a/src/Long.ts", lines: maxLines + 1 }])
    } finally {
      Fs.rmSync(root, { recursive: true, force: true })
    }
  })
})

describe("every package's src", () => {
  const reports = inspect()

  it("is inspected for every package", () => {
    expect(reports.map((report) => report.pkg)).toEqual(
      expect.arrayContaining(["packages/client", "packages/protocol", "packages/server", "packages/testkit", "packages/text"])
    )
  })

  it("has no import circle but the allowlisted ones, and every allowlisted one still exists", () => {
    const found = reports.flatMap((report) => report.circles).map(key)
    const allowed = knownCircles.map(key)
    expect({
      new: found.filter((circle) => !allowed.includes(circle)),
      gone: allowed.filter((circle) => !found.includes(circle))
    }).toEqual({ new: [], gone: [] })
  })

  it(`has no file above ${maxLines} lines but the allowlisted ones, none grown, and every allowlisted one still long`, () => {
    const found = reports.flatMap((report) => report.longFiles)
    const allowed = new Map(knownLongFiles.map((entry) => [entry.file, entry.lines]))
    expect({
      new: found.filter((entry) => !allowed.has(entry.file)).map((entry) => `${entry.file} (${entry.lines} lines)`),
      grown: found
        .filter((entry) => (allowed.get(entry.file) ?? Infinity) < entry.lines)
        .map((entry) => `${entry.file} (${entry.lines} lines, allowlisted at ${allowed.get(entry.file)})`),
      gone: knownLongFiles.filter((entry) => !found.some((long) => long.file === entry.file)).map((entry) => entry.file)
    }).toEqual({ new: [], grown: [], gone: [] })
  })

  it("allowlists nothing in protocol or text", () => {
    const listed = [...knownCircles.flat(), ...knownLongFiles.map((entry) => entry.file)]
    expect(listed.filter((file) => /^packages\/(protocol|text)\//.test(file))).toEqual([])
  })
})
