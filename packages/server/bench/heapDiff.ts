/**
 * What a heap holds more in one V8 heap snapshot than in an earlier one of the same process:
 * the objects whose ids are new, their self sizes summed by owner. An object, a closure or a
 * string owns itself; V8's internal parts (property and element backing stores, contexts of
 * closures, maps, code) belong to the nearest new object or closure that retains them, or are
 * counted as "in old X" when only an object of the first snapshot retains them (a new entry in an
 * old Set's table, say). Contexts and arrays are named after what holds them. Plain objects are named by their first properties, anonymous closures by
 * the variables they capture, so that each row can be traced to the code that made it.
 */
import { readFileSync } from "node:fs"

interface Raw {
  readonly snapshot: {
    readonly meta: {
      readonly node_fields: ReadonlyArray<string>
      readonly node_types: readonly [ReadonlyArray<string>, ...Array<unknown>]
      readonly edge_fields: ReadonlyArray<string>
      readonly edge_types: readonly [ReadonlyArray<string>, ...Array<unknown>]
    }
  }
  readonly nodes: ReadonlyArray<number>
  readonly edges: ReadonlyArray<number>
  readonly strings: ReadonlyArray<string>
}

/** A snapshot, its nodes and edges as V8 writes them (flat arrays of fields). */
class Snapshot {
  readonly nodeFields: number
  readonly edgeFields: number
  readonly count: number
  /** Index of the first edge (in edge records) of each node. */
  readonly firstEdge: Uint32Array
  private readonly nodeTypes: ReadonlyArray<string>
  private readonly edgeTypes: ReadonlyArray<string>
  private readonly f: Record<"type" | "name" | "id" | "self" | "edges", number>
  private readonly e: Record<"type" | "name" | "to", number>

  constructor(readonly raw: Raw) {
    const meta = raw.snapshot.meta
    this.nodeFields = meta.node_fields.length
    this.edgeFields = meta.edge_fields.length
    this.nodeTypes = meta.node_types[0]
    this.edgeTypes = meta.edge_types[0]
    this.f = {
      type: meta.node_fields.indexOf("type"),
      name: meta.node_fields.indexOf("name"),
      id: meta.node_fields.indexOf("id"),
      self: meta.node_fields.indexOf("self_size"),
      edges: meta.node_fields.indexOf("edge_count")
    }
    this.e = {
      type: meta.edge_fields.indexOf("type"),
      name: meta.edge_fields.indexOf("name_or_index"),
      to: meta.edge_fields.indexOf("to_node")
    }
    this.count = raw.nodes.length / this.nodeFields
    this.firstEdge = new Uint32Array(this.count + 1)
    for (let i = 0, edge = 0; i < this.count; i++) {
      this.firstEdge[i] = edge
      edge += raw.nodes[i * this.nodeFields + this.f.edges]!
    }
    this.firstEdge[this.count] = raw.edges.length / this.edgeFields
  }

  type(node: number): string {
    return this.nodeTypes[this.raw.nodes[node * this.nodeFields + this.f.type]!]!
  }
  name(node: number): string {
    return this.raw.strings[this.raw.nodes[node * this.nodeFields + this.f.name]!]!
  }
  id(node: number): number {
    return this.raw.nodes[node * this.nodeFields + this.f.id]!
  }
  self(node: number): number {
    return this.raw.nodes[node * this.nodeFields + this.f.self]!
  }
  edgeType(edge: number): string {
    return this.edgeTypes[this.raw.edges[edge * this.edgeFields + this.e.type]!]!
  }
  edgeName(edge: number): string {
    const type = this.edgeType(edge)
    const value = this.raw.edges[edge * this.edgeFields + this.e.name]!
    return type === "element" || type === "hidden" ? String(value) : this.raw.strings[value]!
  }
  edgeTo(edge: number): number {
    return this.raw.edges[edge * this.edgeFields + this.e.to]! / this.nodeFields
  }
}

const load = (path: string): Snapshot => new Snapshot(JSON.parse(readFileSync(path, "utf8")) as Raw)

const isOwnerType = (type: string): boolean =>
  type === "object" || type === "closure" || type === "string" || type === "concatenated string" ||
  type === "sliced string" || type === "regexp" || type === "bigint" || type === "symbol"

/** A name for an owner: its constructor, a plain object's first properties, a closure's captures. */
const label = (s: Snapshot, node: number): string => {
  const type = s.type(node)
  const name = s.name(node)
  if (type.endsWith("string")) return "(string)"
  if (type === "closure") {
    if (name !== "") return `closure ${name}`
    // The variables of its context say which closure it is.
    for (let e = s.firstEdge[node]!; e < s.firstEdge[node + 1]!; e++) {
      if (s.edgeType(e) === "internal" && s.edgeName(e) === "context") {
        const context = s.edgeTo(e)
        const vars: Array<string> = []
        for (let c = s.firstEdge[context]!; c < s.firstEdge[context + 1]! && vars.length < 4; c++) {
          if (s.edgeType(c) === "context") vars.push(s.edgeName(c))
        }
        return `closure (anonymous, captures ${vars.join(",")})`
      }
    }
    return "closure (anonymous)"
  }
  if (type === "object" && name === "Object") {
    const props: Array<string> = []
    for (let e = s.firstEdge[node]!; e < s.firstEdge[node + 1]! && props.length < 4; e++) {
      if (s.edgeType(e) === "property") {
        const prop = s.edgeName(e)
        if (prop !== "__proto__") props.push(prop)
      }
    }
    return `Object {${props.join(",")}}`
  }
  return type === "object" ? name : `${type} ${name}`
}

export interface Row {
  readonly owner: string
  readonly bytes: number
  readonly objects: number
}

/**
 * What `after` holds more than `before` (two snapshots of one process), by owner, largest
 * first, with the total.
 */
export const diff = (beforePath: string, afterPath: string): { readonly total: number; readonly rows: ReadonlyArray<Row> } => {
  const old = new Set<number>()
  {
    const before = load(beforePath)
    for (let i = 0; i < before.count; i++) old.add(before.id(i))
  }
  const s = load(afterPath)
  const isNew = new Uint8Array(s.count)
  for (let i = 0; i < s.count; i++) isNew[i] = old.has(s.id(i)) ? 0 : 1
  old.clear()
  // One retainer per new node, a new one when there is any.
  const retainer = new Int32Array(s.count).fill(-1)
  for (let from = 0; from < s.count; from++) {
    for (let e = s.firstEdge[from]!; e < s.firstEdge[from + 1]!; e++) {
      const type = s.edgeType(e)
      if (type === "weak" || type === "shortcut") continue
      const to = s.edgeTo(e)
      if (isNew[to] === 0 || to === from) continue
      if (retainer[to] === -1 || (isNew[retainer[to]!] === 0 && isNew[from] === 1)) retainer[to] = from
    }
  }
  // Contexts and arrays are named after what holds them: "Array in X", "system / Context in Y".
  const isHeld = (node: number): boolean => s.name(node) === "system / Context" || s.name(node) === "Array"
  const oldLabel = (node: number): string =>
    `in old ${isOwnerType(s.type(node)) ? label(s, node) : `${s.type(node)} ${s.name(node)}`}`
  const owner = (node: number, depth = 0): string => {
    const owns = isOwnerType(s.type(node))
    if (owns && !isHeld(node)) return label(s, node)
    const up = retainer[node]!
    if (depth > 12 || up === -1) return owns ? label(s, node) : `${s.type(node)} ${s.name(node)}`
    const above = isNew[up] === 1 ? owner(up, depth + 1) : oldLabel(up)
    return isHeld(node) ? `${s.name(node)} in ${above.startsWith("in old ") ? above.slice(3) : above}` : above
  }
  const rows = new Map<string, { bytes: number; objects: number }>()
  let total = 0
  for (let i = 0; i < s.count; i++) {
    if (isNew[i] === 0) continue
    const size = s.self(i)
    total += size
    const key = owner(i)
    const row = rows.get(key) ?? { bytes: 0, objects: 0 }
    row.bytes += size
    if (isOwnerType(s.type(i))) row.objects++
    rows.set(key, row)
  }
  return {
    total,
    rows: [...rows].map(([key, row]) => ({ owner: key, ...row })).sort((a, b) => b.bytes - a.bytes)
  }
}
