/**
 * `pnpm bench server --heap`: where the heap of an open stream goes. For each subject (bare
 * `node:http`, Effect's `HttpRouter` on `NodeHttpServer` with a one-record stream body, and the
 * server itself with the stand-in answering nothing), in its own process: a few streams opened and
 * closed to warm it up, a heap snapshot, `--streams` (default 1,000) streams opened and held, a
 * second snapshot; then what the second holds more, by owner ({@link diff}), per open stream, and
 * heapUsed after a full GC the same way (what the benchmark's row measures).
 *
 * `--top N` rows per subject (default 40); `--subjects node,effect,server` to choose; `--keep` keeps
 * the snapshots (their directory is printed).
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import * as Path from "node:path"
import { diff } from "./heapDiff.ts"
import { type Child, closeStreams, openStreams, spawn, startStandIn } from "./harness.ts"

const arg = (name: string): string | undefined => {
  const at = process.argv.indexOf(name)
  return at >= 0 ? process.argv[at + 1] : undefined
}

/** Opens `count` streams (see {@link openStreams}). */
const open = async (url: string, count: number): Promise<Array<AbortController>> => {
  const controllers = await openStreams(url, count)
  if (controllers === undefined) throw new Error("a stream did not open")
  return controllers
}

const measure = async (name: string, subject: Child, url: string, streams: number, top: number, dir: string) => {
  await closeStreams(await open(url, 50))
  await closeStreams(await open(url, 50))
  const heapBefore = (await subject.call("heap")).heapUsed as number
  const before = (await subject.call("snapshot", { path: Path.join(dir, `${name}-before.heapsnapshot`) })).path as string
  const controllers = await open(url, streams)
  const heapDuring = (await subject.call("heap")).heapUsed as number
  const after = (await subject.call("snapshot", { path: Path.join(dir, `${name}-after.heapsnapshot`) })).path as string
  await closeStreams(controllers)
  const { rows, total } = diff(before, after)
  const per = (bytes: number) => (bytes / streams).toFixed(0).padStart(7)
  console.log(
    `${name}: heapUsed ${((heapDuring - heapBefore) / streams).toFixed(0)} B per open stream; ` +
      `new objects in the snapshot ${(total / streams).toFixed(0)} B per open stream (${streams} open)`
  )
  console.log(`  ${"B/stream".padStart(7)}  ${"obj/stream".padStart(10)}  owner`)
  for (const row of rows.slice(0, top)) {
    console.log(`  ${per(row.bytes)}  ${(row.objects / streams).toFixed(2).padStart(10)}  ${row.owner}`)
  }
}

export const run = async (): Promise<void> => {
  const streams = Number(arg("--streams") ?? 1_000)
  const top = Number(arg("--top") ?? 40)
  const subjects = (arg("--subjects") ?? "node,effect,server").split(",")
  const dir = mkdtempSync(Path.join(tmpdir(), "mcore-heap-"))
  const children: Array<Child> = []
  try {
    for (const kind of ["node", "effect"]) {
      if (!subjects.includes(kind)) continue
      const floor = spawn(`${kind} floor`, "./floorSubject.ts", [kind, "stream"])
      children.push(floor)
      const { url } = await floor.ready()
      await measure(kind === "node" ? "bare node:http" : "Effect HttpRouter on NodeHttpServer", floor, url, streams, top, dir)
      await floor.stop()
    }
    if (subjects.includes("server")) {
      const { standIn, port } = await startStandIn()
      children.push(standIn)
      const server = spawn("server", "./serverSubject.ts", [`tcp://127.0.0.1:${port}`, "1"])
      children.push(server)
      const { url } = await server.ready()
      // Whole streams first (the stand-in answering), then held ones.
      await closeStreams(await open(url, 50))
      await standIn.call("hold")
      await measure("the server (stand-in answering nothing)", server, url, streams, top, dir)
      await standIn.call("release")
    }
  } finally {
    // The stand-in last: stopped before the servers, it made each of them log that it lost the coordinator.
    for (const child of children.reverse()) await child.stop()
    if (process.argv.includes("--keep")) console.log(`snapshots kept in ${dir}`)
    else rmSync(dir, { recursive: true, force: true })
  }
}
