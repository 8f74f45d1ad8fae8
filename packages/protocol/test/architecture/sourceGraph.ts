/**
 * The shape checks behind `Architecture.test.ts`, usable on their own:
 * `node --import tsx packages/protocol/test/architecture/sourceGraph.ts` prints every import
 * circle and every long file in each package's `src`, allowlisted or not.
 *
 * The import graph is read from the text of each file (no compiler): `import`/`export ... from`
 * statements, type-only ones included (a type circle is still a circle between concepts), bare
 * `import "x"` and `import("x")`. Only relative specifiers are followed; they resolve to the `.ts`
 * file inside the same `src`. Examples in TSDoc comments are not imports: every such line starts
 * with `*`, and only statements that begin a line are read.
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"

/** The most lines a `src` file may have; past ~400 a file usually holds two concepts. */
export const maxLines = 450

/** The repository's root, found from this file's place in it. */
export const repoRoot = Path.resolve(Path.dirname(fileURLToPath(import.meta.url)), "../../../..")

/** Every `packages/<name>/src` directory, as `packages/<name>`. */
export const packageDirs = (root: string = repoRoot): ReadonlyArray<string> =>
  Fs.readdirSync(Path.join(root, "packages"), { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && Fs.existsSync(Path.join(root, "packages", entry.name, "src")))
    .map((entry) => `packages/${entry.name}`)
    .sort()

/** Every `.ts` file under `dir`, relative to `root`, with forward slashes, sorted. */
export const sourceFiles = (root: string, dir: string): ReadonlyArray<string> => {
  const out: Array<string> = []
  const walk = (relative: string): void => {
    for (const entry of Fs.readdirSync(Path.join(root, relative), { withFileTypes: true })) {
      const child = `${relative}/${entry.name}`
      if (entry.isDirectory()) walk(child)
      else if (entry.isFile() && entry.name.endsWith(".ts")) out.push(child)
    }
  }
  walk(dir)
  return out.sort()
}

const statement = /^[ \t]*(?:import|export)\s+(?:type\s+)?(?:[^;"'`]*?\sfrom\s*)?["']([^"'\n]+)["']/gm
const dynamic = /^[^*\n]*?\bimport\(\s*["']([^"'\n]+)["']\s*\)/gm

/** The module specifiers a TypeScript source text imports or re-exports. */
export const specifiers = (text: string): ReadonlyArray<string> => {
  const found: Array<string> = []
  for (const match of text.matchAll(statement)) found.push(match[1]!)
  for (const match of text.matchAll(dynamic)) {
    const line = match[0].trimStart()
    if (!line.startsWith("//")) found.push(match[1]!)
  }
  return found
}

/** The file a relative specifier names, relative to `root`; `undefined` when it is not a relative one. */
export const resolveRelative = (root: string, from: string, specifier: string): string | undefined => {
  if (!specifier.startsWith("./") && !specifier.startsWith("../")) return undefined
  const target = Path.posix.normalize(Path.posix.join(Path.posix.dirname(from), specifier))
  const candidates = [target, target.replace(/\.js$/, ".ts"), `${target}.ts`, `${target}/index.ts`]
  return candidates.find((candidate) => candidate.endsWith(".ts") && Fs.existsSync(Path.join(root, candidate)))
    ?? target
}

/** Each file's relative imports (resolved, deduplicated) within the given files. */
export const importGraph = (root: string, files: ReadonlyArray<string>): ReadonlyMap<string, ReadonlyArray<string>> => {
  const known = new Set(files)
  const graph = new Map<string, ReadonlyArray<string>>()
  for (const file of files) {
    const text = Fs.readFileSync(Path.join(root, file), "utf8")
    const targets = new Set<string>()
    for (const specifier of specifiers(text)) {
      const target = resolveRelative(root, file, specifier)
      if (target !== undefined && known.has(target)) targets.add(target)
    }
    graph.set(file, [...targets].sort())
  }
  return graph
}

/**
 * The import circles of a graph: its strongly connected components with more than one file (or
 * one file importing itself), each as a sorted list of files, sorted by first file (Tarjan).
 */
export const circles = (graph: ReadonlyMap<string, ReadonlyArray<string>>): ReadonlyArray<ReadonlyArray<string>> => {
  let next = 0
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: Array<string> = []
  const onStack = new Set<string>()
  const found: Array<ReadonlyArray<string>> = []
  const visit = (file: string): void => {
    index.set(file, next)
    low.set(file, next)
    next++
    stack.push(file)
    onStack.add(file)
    for (const target of graph.get(file) ?? []) {
      if (!index.has(target)) {
        visit(target)
        low.set(file, Math.min(low.get(file)!, low.get(target)!))
      } else if (onStack.has(target)) {
        low.set(file, Math.min(low.get(file)!, index.get(target)!))
      }
    }
    if (low.get(file) === index.get(file)) {
      const component: Array<string> = []
      let member: string
      do {
        member = stack.pop()!
        onStack.delete(member)
        component.push(member)
      } while (member !== file)
      if (component.length > 1 || (graph.get(file) ?? []).includes(file)) found.push(component.sort())
    }
  }
  for (const file of [...graph.keys()].sort()) if (!index.has(file)) visit(file)
  return found.sort((a, b) => a[0]!.localeCompare(b[0]!))
}

/** A file with more lines than `maxLines`. */
export interface LongFile {
  readonly file: string
  readonly lines: number
}

/** The number of lines of a text, as `wc -l` counts them for a file ending in a newline. */
export const lineCount = (text: string): number => text.length === 0 ? 0 : text.split("\n").length - (text.endsWith("\n") ? 1 : 0)

/** The files of `files` longer than `limit` lines. */
export const longFiles = (root: string, files: ReadonlyArray<string>, limit: number = maxLines): ReadonlyArray<LongFile> =>
  files
    .map((file) => ({ file, lines: lineCount(Fs.readFileSync(Path.join(root, file), "utf8")) }))
    .filter((entry) => entry.lines > limit)

/** What the checks find in one package's `src`. */
export interface PackageReport {
  readonly pkg: string
  readonly circles: ReadonlyArray<ReadonlyArray<string>>
  readonly longFiles: ReadonlyArray<LongFile>
}

/** Runs both checks on every package. */
export const inspect = (root: string = repoRoot): ReadonlyArray<PackageReport> =>
  packageDirs(root).map((pkg) => {
    const files = sourceFiles(root, `${pkg}/src`)
    return { pkg, circles: circles(importGraph(root, files)), longFiles: longFiles(root, files) }
  })

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === Path.resolve(process.argv[1])) {
  for (const report of inspect()) {
    for (const circle of report.circles) console.log(`circle (${circle.length} files): ${circle.join(" ")}`)
    for (const long of report.longFiles) console.log(`long file: ${long.file} (${long.lines} lines)`)
  }
}
