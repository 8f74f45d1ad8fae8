/**
 * The package's shape, held so that it does not grow back: no import circle among the files of
 * `src` (type-only imports count), no source file above 450 lines, and a public index of at most
 * eight modules (everything else lives under `src/internal/`).
 */
import { describe, expect, it } from "@effect/vitest"
import * as Fs from "node:fs"
import * as Path from "node:path"

const src = Path.join(import.meta.dirname, "..", "src")

const files = (dir: string): Array<string> =>
  Fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = Path.join(dir, entry.name)
    return entry.isDirectory() ? files(path) : path.endsWith(".ts") ? [path] : []
  })

/** The files `file` imports (or re-exports) by a relative path; comments (examples) left out. */
const importsOf = (file: string): Array<string> => {
  const text = Fs.readFileSync(file, "utf8").replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "")
  const found: Array<string> = []
  for (const match of text.matchAll(/(?:from\s+|import\s*\(\s*|import\s+)["'](\.{1,2}\/[^"']+)["']/g)) {
    found.push(Path.resolve(Path.dirname(file), match[1]!))
  }
  return found
}

/** Every circle of the graph (Tarjan's strongly connected components of more than one file, or a file importing itself). */
const circles = (graph: ReadonlyMap<string, ReadonlyArray<string>>): Array<Array<string>> => {
  let next = 0
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: Array<string> = []
  const onStack = new Set<string>()
  const out: Array<Array<string>> = []
  const visit = (v: string): void => {
    index.set(v, next)
    low.set(v, next)
    next++
    stack.push(v)
    onStack.add(v)
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue
      if (!index.has(w)) {
        visit(w)
        low.set(v, Math.min(low.get(v)!, low.get(w)!))
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!))
    }
    if (low.get(v) !== index.get(v)) return
    const component: Array<string> = []
    let w: string
    do {
      w = stack.pop()!
      onStack.delete(w)
      component.push(w)
    } while (w !== v)
    if (component.length > 1 || graph.get(v)!.includes(v)) out.push(component.map((f) => Path.relative(src, f)).sort())
  }
  for (const v of graph.keys()) if (!index.has(v)) visit(v)
  return out
}

describe("the package's shape", () => {
  const all = files(src)

  it("has no import circle in src", () => {
    const graph = new Map(all.map((file) => [file, importsOf(file)] as const))
    expect(circles(graph)).toEqual([])
  })

  it("finds a circle when there is one (the check itself)", () => {
    const graph = new Map([["/a.ts", ["/b.ts"]], ["/b.ts", ["/c.ts"]], ["/c.ts", ["/a.ts"]], ["/d.ts", ["/a.ts"]]])
    expect(circles(graph).map((c) => c.length)).toEqual([3])
  })

  it("has no source file above 450 lines", () => {
    const long = all
      .map((file) => [Path.relative(src, file), Fs.readFileSync(file, "utf8").split("\n").length - 1] as const)
      .filter(([, lines]) => lines > 450)
    expect(long).toEqual([])
  })

  it("exports at most eight modules, none of them internal", () => {
    const exported = importsOf(Path.join(src, "index.ts")).map((file) => Path.relative(src, file))
    expect(exported.length).toBeLessThanOrEqual(8)
    expect(exported.filter((file) => file.startsWith("internal"))).toEqual([])
  })
})
