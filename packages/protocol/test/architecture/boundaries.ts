/**
 * The boundary checks behind `Architecture.test.ts`, beside the shape checks of `sourceGraph.ts`:
 *
 * - **Crossings**: a file of one package (its `src`, `test` or `bench`) reaches another package
 *   only through an entry point that package declares in its `package.json` `exports` (`.`,
 *   `./internal` of the coordinator, `./arbitraries` of the testkit): never by a subpath it does
 *   not declare (`@mcore-effect/client/src/internal/connection.ts`) and never by a relative path
 *   out of its own folder (`../../server/src/...`).
 * - **Shared helpers**: a helper written once for a package ({@link SharedHelper}) is defined in
 *   its home file and nowhere else in that package.
 *
 * `node --import tsx packages/protocol/test/architecture/boundaries.ts` prints what they find.
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { packageDirs, repoRoot, sourceFiles, specifiers } from "./sourceGraph.ts"

/** The folders of a package whose files are read. */
const folders = ["src", "test", "bench"] as const

/** A package's files in {@link folders}, relative to `root`. */
const packageFiles = (root: string, pkg: string): ReadonlyArray<string> =>
  folders.flatMap((folder) => (Fs.existsSync(Path.join(root, pkg, folder)) ? sourceFiles(root, `${pkg}/${folder}`) : []))

/** A package's name (`@mcore-effect/client`) and the subpaths it exports (`.`, `./internal`). */
interface Manifest {
  readonly dir: string
  readonly name: string
  readonly exports: ReadonlySet<string>
}

const manifests = (root: string): ReadonlyArray<Manifest> =>
  packageDirs(root).flatMap((dir) => {
    const file = Path.join(root, dir, "package.json")
    if (!Fs.existsSync(file)) return []
    const json = JSON.parse(Fs.readFileSync(file, "utf8")) as { name?: string; exports?: unknown }
    if (json.name === undefined) return []
    const exports = typeof json.exports === "object" && json.exports !== null ? Object.keys(json.exports) : ["."]
    return [{ dir, name: json.name, exports: new Set(exports.filter((key) => key.startsWith("."))) }]
  })

/** An import that crosses into another package other than through one of its entry points. */
export interface Crossing {
  readonly file: string
  readonly specifier: string
  readonly why: string
}

/** Every {@link Crossing} in every package under `root`. */
export const crossings = (root: string = repoRoot): ReadonlyArray<Crossing> => {
  const known = manifests(root)
  const found: Array<Crossing> = []
  for (const { dir } of known) {
    for (const file of packageFiles(root, dir)) {
      for (const specifier of specifiers(Fs.readFileSync(Path.join(root, file), "utf8"))) {
        if (specifier.startsWith("./") || specifier.startsWith("../")) {
          const target = Path.posix.normalize(Path.posix.join(Path.posix.dirname(file), specifier))
          if (!target.startsWith(`${dir}/`)) {
            found.push({ file, specifier, why: `reaches ${target}, outside ${dir}: import the package by its name` })
          }
          continue
        }
        const target = known.find((manifest) => specifier === manifest.name || specifier.startsWith(`${manifest.name}/`))
        if (target === undefined || specifier === target.name) continue
        const subpath = `.${specifier.slice(target.name.length)}`
        if (!target.exports.has(subpath)) {
          found.push({
            file,
            specifier,
            why: `${target.name} does not export ${subpath} (its entry points: ${[...target.exports].join(", ")})`
          })
        }
      }
    }
  }
  return found
}

/** A helper written once: its name, the file that defines it, and whether it serves every package or only its own. */
export interface SharedHelper {
  readonly name: string
  readonly home: string
  /** Every package's files are read for a second definition, not only its home package's. */
  readonly everywhere?: boolean | undefined
}

/** A definition of a shared helper outside its home file, in its package. */
export interface SecondDefinition {
  readonly name: string
  readonly home: string
  readonly file: string
  readonly line: number
}

/** The package folder (`packages/client`) a file of it lies in. */
const packageOf = (file: string): string => file.split("/").slice(0, 2).join("/")

/**
 * Every definition (`const`, `let`, `var`, `function`, `class`) of a helper of `helpers` outside
 * its home file, in its package (or in any, for one that serves `everywhere`).
 */
export const secondDefinitions = (helpers: ReadonlyArray<SharedHelper>, root: string = repoRoot): ReadonlyArray<SecondDefinition> => {
  const found: Array<SecondDefinition> = []
  const byPackage = new Map<string, Array<SharedHelper>>()
  for (const helper of helpers) {
    for (const pkg of helper.everywhere === true ? packageDirs(root) : [packageOf(helper.home)]) {
      byPackage.set(pkg, [...(byPackage.get(pkg) ?? []), helper])
    }
  }
  for (const [pkg, list] of byPackage) {
    const patterns = list.map((helper) => ({
      helper,
      pattern: new RegExp(`^[ \\t]*(?:export\\s+)?(?:const|let|var|function\\*?|class)\\s+${helper.name}\\b`, "m")
    }))
    for (const file of packageFiles(root, pkg)) {
      const lines = Fs.readFileSync(Path.join(root, file), "utf8").split("\n")
      for (const { helper, pattern } of patterns) {
        if (file === helper.home) continue
        const at = lines.findIndex((text) => pattern.test(text))
        if (at >= 0) found.push({ name: helper.name, home: helper.home, file, line: at + 1 })
      }
    }
  }
  return found
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === Path.resolve(process.argv[1])) {
  for (const crossing of crossings()) console.log(`crossing: ${crossing.file} imports ${crossing.specifier}: ${crossing.why}`)
  const { sharedHelpers } = await import("./sharedHelpers.ts")
  for (const second of secondDefinitions(sharedHelpers)) {
    console.log(`second definition: ${second.name} in ${second.file}:${second.line} (its home: ${second.home})`)
  }
}
