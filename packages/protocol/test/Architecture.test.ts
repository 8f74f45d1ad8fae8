/**
 * The guard of issue 26's Verification: no import circle inside any package's `src` (type-only
 * imports count) and no `src` file above 450 lines, in every package of the repository. Today's
 * known offenders outside `protocol` and `text` are listed in `architecture/allowlist.ts`, which
 * may only shrink. And since issue 39 (`architecture/boundaries.ts`): no package reaches
 * another but through an entry point it exports (never its `internal/` or its files), and no
 * helper made shared (`architecture/sharedHelpers.ts`) is defined a second time. The checks
 * themselves are tested first on a scratch tree, so a check that stopped seeing anything would
 * fail here rather than pass quietly.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { knownCircles, knownLongFiles } from "./architecture/allowlist.ts"
import { crossings, secondDefinitions } from "./architecture/boundaries.ts"
import { sharedHelpers } from "./architecture/sharedHelpers.ts"
import { inspect, maxLines, repoRoot } from "./architecture/sourceGraph.ts"

const key = (files: ReadonlyArray<string>): string => `circle of ${files.length} files: ${files.join(", ")}`

/** A scratch repository holding `files`, for the checks to be tested on. */
const scratch = (files: Record<string, string>): string => {
  const root = Fs.mkdtempSync(Path.join(Os.tmpdir(), "mcore-architecture-"))
  for (const [file, text] of Object.entries(files)) {
    Fs.mkdirSync(Path.dirname(Path.join(root, file)), { recursive: true })
    Fs.writeFileSync(Path.join(root, file), text)
  }
  return root
}

describe("the checks", () => {

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

describe("the boundary checks", () => {
  const manifest = (name: string, exports?: ReadonlyArray<string>) =>
    JSON.stringify({ name, ...(exports === undefined ? {} : { exports: Object.fromEntries(exports.map((key) => [key, "./x.js"])) }) })

  it("finds an import of another package's internal/ or of a subpath it does not export, and of its files by a relative path; passes declared entry points", () => {
    const root = scratch({
      "packages/a/package.json": manifest("@x/a", [".", "./internal"]),
      "packages/a/src/index.ts": "export {}\n",
      "packages/b/package.json": manifest("@x/b"),
      "packages/b/src/index.ts": [
        `import { a } from "@x/a"`,
        `import * as Internal from "@x/a/internal"`,
        `import { c } from "@x/a/src/internal/c.ts"`,
        `export * from "../../a/src/index.ts"`,
        `import { own } from "./own.ts"`
      ].join("\n") + "\n",
      "packages/b/test/b.test.ts": `import { d } from "@x/b/internal/d.ts"\n`
    })
    try {
      expect(crossings(root).map((crossing) => `${crossing.file} -> ${crossing.specifier}`)).toEqual([
        "packages/b/src/index.ts -> @x/a/src/internal/c.ts",
        "packages/b/src/index.ts -> ../../a/src/index.ts",
        "packages/b/test/b.test.ts -> @x/b/internal/d.ts"
      ])
    } finally {
      Fs.rmSync(root, { recursive: true, force: true })
    }
  })

  it("finds a second definition of a shared helper in its package (or in any, for one that serves everywhere), never its home", () => {
    const root = scratch({
      "packages/a/package.json": manifest("@x/a"),
      "packages/a/src/internal/helpers.ts": "export const check = () => 1\nexport function measure() {}\n",
      "packages/a/src/Other.ts": "import { check } from './internal/helpers.ts'\n  const check2 = check\nexport const check = () => 2\n",
      "packages/a/bench/b.ts": "function* measure() {}\n",
      "packages/b/package.json": manifest("@x/b"),
      "packages/b/src/index.ts": "const check = 3\nexport function measure() {}\n"
    })
    try {
      const helpers = [
        { name: "check", home: "packages/a/src/internal/helpers.ts" },
        { name: "measure", home: "packages/a/src/internal/helpers.ts", everywhere: true }
      ]
      expect(secondDefinitions(helpers, root).map((second) => `${second.name} ${second.file}:${second.line}`).sort()).toEqual([
        "check packages/a/src/Other.ts:3",
        "measure packages/a/bench/b.ts:1",
        "measure packages/b/src/index.ts:2"
      ])
    } finally {
      Fs.rmSync(root, { recursive: true, force: true })
    }
  })
})

describe("every package", () => {
  it("reaches another package only through an entry point it exports", () => {
    expect(crossings().map((crossing) => `${crossing.file} imports ${crossing.specifier}: ${crossing.why}`)).toEqual([])
  })

  it("defines each shared helper once, in its home", () => {
    for (const helper of sharedHelpers) {
      expect(Fs.readFileSync(Path.join(repoRoot, helper.home), "utf8")).toMatch(new RegExp(`\\b${helper.name}\\b`))
    }
    expect(secondDefinitions(sharedHelpers).map((second) => `${second.name} in ${second.file}:${second.line} (home: ${second.home})`))
      .toEqual([])
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
