/**
 * Where a fleet's coordinators come from when they come and go: a file of addresses, read again
 * when it changes and on SIGHUP, or a DNS name whose `A` and `AAAA` records are the coordinators
 * (a Kubernetes headless Service), resolved again every interval. Each is a {@link Membership}:
 * the set now, and a `Stream` of the sets after it, each emitted only when it differs from the
 * last one.
 *
 * At the start a source that gives no set fails (`MembershipUnavailable`): there is nothing to
 * serve. After it, bad input (the file unreadable, malformed or empty; the name unresolvable or
 * without an address) is one warning per distinct problem, and the last good set stays: nothing
 * is emitted until a good set comes again.
 *
 * @example
 * ```ts
 * import { Membership } from "@mcore-effect/client"
 * import { Effect, Stream } from "effect"
 *
 * const program = Effect.gen(function*() {
 *   const members = yield* Membership.dns("coordinators.inference.svc.cluster.local", 5555, { interval: "10 seconds" })
 *   yield* Effect.log(`coordinators: ${members.initial.join(", ")}`)
 *   yield* Stream.runForEach(members.changes, (set) => Effect.log(`now: ${set.join(", ")}`))
 * }).pipe(Effect.scoped)
 * ```
 *
 * @since 0.2.0
 */
import type * as Cause from "effect/Cause"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Queue from "effect/Queue"
import * as Result from "effect/Result"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as Dns from "node:dns"
import * as Fs from "node:fs"
import * as Net from "node:net"
import * as Path from "node:path"
import { type ClientError, clientError, MembershipUnavailable } from "./ClientError.ts"
import { addressProblem } from "./internal/zeroMqAddress.ts"

/**
 * A source's coordinators: the set now and the sets after it.
 *
 * @category models
 * @since 0.2.0
 */
export interface Membership {
  /** Where they come from, for messages: `file PATH`, `dns NAME:PORT`. */
  readonly source: string
  /** The coordinators now (addresses, each once). */
  readonly initial: ReadonlyArray<string>
  /** Each later set, when it differs from the one before; it ends with the scope. */
  readonly changes: Stream.Stream<ReadonlyArray<string>>
}

/**
 * Options of {@link file}.
 *
 * @category models
 * @since 0.2.0
 */
export interface FileOptions {
  /** How often the file is read when nothing says it changed (a missed watch event). Default 2 s. */
  readonly interval?: Duration.Input | undefined
  /** Read it again on SIGHUP. Default true. */
  readonly onSighup?: boolean | undefined
}

/**
 * Options of {@link dns}.
 *
 * @category models
 * @since 0.2.0
 */
export interface DnsOptions {
  /** How often the name is resolved. Default 5 s. */
  readonly interval?: Duration.Input | undefined
  /** The DNS servers asked (`host:port`), instead of the system's. */
  readonly servers?: ReadonlyArray<string> | undefined
}

/**
 * The coordinators a file lists: one address per line (`tcp://host:port`, `ipc://path`), blank
 * lines and lines starting with `#` skipped, an address listed twice taken once; or why not
 * (the line and what is wrong with it, or that it lists none).
 *
 * @example
 * ```ts
 * import { Membership } from "@mcore-effect/client"
 *
 * Membership.parseList("# pool a\ntcp://10.0.0.1:5555\ntcp://10.0.0.2:5555\n") // Result.succeed([...two])
 * Membership.parseList("tcp://10.0.0.1") // Result.fail("line 1: tcp:// needs host:port")
 * ```
 *
 * @category parsing
 * @since 0.2.0
 */
export const parseList = (text: string): Result.Result<ReadonlyArray<string>, string> => {
  const seen = new Set<string>()
  const lines = text.split(/\r?\n/)
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim()
    if (line === "" || line.startsWith("#")) continue
    const problem = addressProblem(line)
    if (problem !== undefined) return Result.fail(`line ${i + 1}: ${problem}`)
    seen.add(line)
  }
  return seen.size === 0 ? Result.fail("it lists no coordinator") : Result.succeed([...seen])
}

/**
 * `dns:NAME:PORT` read: the name and the port, or `undefined` when `spec` is not one.
 *
 * @example
 * ```ts
 * import { Membership } from "@mcore-effect/client"
 *
 * Membership.parseDns("dns:coordinators.svc:5555") // { name: "coordinators.svc", port: 5555 }
 * Membership.parseDns("tcp://10.0.0.1:5555") // undefined
 * ```
 *
 * @category parsing
 * @since 0.2.0
 */
export const parseDns = (spec: string): { readonly name: string; readonly port: number } | undefined => {
  const match = /^dns:([A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?\.?):([0-9]{1,5})$/.exec(spec)
  if (match === null) return undefined
  const port = Number(match[2])
  return port >= 1 && port <= 65535 ? { name: match[1]!, port } : undefined
}

const sameSet = (a: ReadonlyArray<string>, b: ReadonlyArray<string>): boolean =>
  a.length === b.length && a.every((x, i) => x === b[i])

const unavailable = (source: string, why: string): ClientError => clientError(new MembershipUnavailable({ source, why }))

/**
 * The loop behind every source: `read` once now (failing the start), then whenever `poke` is
 * offered or `interval` passes; a new set goes to `changes`, a problem is logged once until a
 * good read comes.
 */
const watched = (
  source: string,
  read: Effect.Effect<Result.Result<ReadonlyArray<string>, string>>,
  interval: Duration.Duration,
  pokes: Queue.Queue<void>
): Effect.Effect<Membership, ClientError, Scope.Scope> =>
  Effect.gen(function*() {
    const first = yield* read
    if (Result.isFailure(first)) return yield* Effect.fail(unavailable(source, first.failure))
    const out = yield* Queue.unbounded<ReadonlyArray<string>, Cause.Done>()
    let last = first.success
    let problem: string | undefined
    const check = Effect.flatMap(read, (now) => {
      if (Result.isFailure(now)) {
        if (now.failure === problem) return Effect.void
        problem = now.failure
        return Effect.logWarning(`coordinators from ${source}: ${now.failure}; keeping the last good set (${last.length})`)
      }
      problem = undefined
      if (sameSet(now.success, last)) return Effect.void
      last = now.success
      return Effect.asVoid(Queue.offer(out, now.success))
    })
    yield* Effect.forkScoped(Effect.forever(
      Effect.andThen(Effect.raceFirst(Queue.take(pokes), Effect.sleep(interval)), check)
    ))
    yield* Effect.addFinalizer(() => Queue.end(out))
    return { source, initial: first.success, changes: Stream.fromQueue(out) }
  })

/**
 * The coordinators listed in the file at `path` ({@link parseList}), read again when the file
 * changes (its directory is watched, so a file replaced by a rename is seen), every `interval`
 * and on SIGHUP. The watchers end with the scope.
 *
 * @category constructors
 * @since 0.2.0
 */
export const file = (path: string, options?: FileOptions): Effect.Effect<Membership, ClientError, Scope.Scope> =>
  Effect.gen(function*() {
    const source = `file ${path}`
    const interval = Duration.fromInputUnsafe(options?.interval ?? "2 seconds")
    const pokes = yield* Queue.sliding<void>(1)
    const poke = () => void Queue.offerUnsafe(pokes, undefined)
    const name = Path.basename(path)
    yield* Effect.acquireRelease(
      Effect.sync(() => {
        let watcher: Fs.FSWatcher | undefined
        try {
          watcher = Fs.watch(Path.dirname(path), (_, changed) => {
            if (changed === null || changed === name) poke()
          })
          // A directory that goes away ends the watch; the interval still reads.
          watcher.on("error", () => watcher?.close())
        } catch {
          // No watch (the directory is missing): the interval reads.
        }
        if (options?.onSighup !== false) process.on("SIGHUP", poke)
        return watcher
      }),
      (watcher) =>
        Effect.sync(() => {
          watcher?.close()
          process.off("SIGHUP", poke)
        })
    )
    const read = Effect.map(
      Effect.result(Effect.tryPromise(() => Fs.promises.readFile(path, "utf8"))),
      (text) => Result.isFailure(text) ? Result.fail(`cannot read it: ${String((text.failure.cause as Error)?.message ?? text.failure)}`) : parseList(text.success)
    )
    return yield* watched(source, read, interval, pokes)
  })

/** The coordinators at `name`'s addresses now, sorted, or why there are none. */
const resolveAll = (resolver: Dns.promises.Resolver, name: string, port: number): Effect.Effect<Result.Result<ReadonlyArray<string>, string>> =>
  Effect.promise(async () => {
    const family = (lookup: Promise<Array<string>>) =>
      lookup.then((found) => ({ found, code: undefined as string | undefined }), (error: NodeJS.ErrnoException) => ({ found: [] as Array<string>, code: error.code }))
    const [v4, v6] = await Promise.all([family(resolver.resolve4(name)), family(resolver.resolve6(name))])
    const addresses = [...v4.found, ...v6.found].sort()
    if (addresses.length > 0) return Result.succeed(addresses.map((ip) => Net.isIPv6(ip) ? `tcp://[${ip}]:${port}` : `tcp://${ip}:${port}`))
    const codes = [v4.code, v6.code].filter((c) => c !== undefined && c !== "ENODATA")
    return Result.fail(
      codes.includes("ENOTFOUND")
        ? `${name} does not resolve (NXDOMAIN)`
        : codes.length > 0
        ? `resolving ${name} failed (${[...new Set(codes)].join(", ")})`
        : `${name} has no address`
    )
  })

/**
 * The coordinators at `name`'s `A` and `AAAA` records, each `tcp://ADDRESS:port` (sorted),
 * resolved every `interval` (of `servers`, else the system's DNS servers).
 *
 * @category constructors
 * @since 0.2.0
 */
export const dns = (name: string, port: number, options?: DnsOptions): Effect.Effect<Membership, ClientError, Scope.Scope> =>
  Effect.gen(function*() {
    const source = `dns ${name}:${port}`
    if (parseDns(`dns:${name}:${port}`) === undefined) {
      return yield* Effect.fail(unavailable(source, "expected a host name and a port from 1 to 65535"))
    }
    const resolver = new Dns.promises.Resolver({ timeout: 2_000, tries: 2 })
    if (options?.servers !== undefined) {
      const set = Result.try(() => resolver.setServers([...options.servers!]))
      if (Result.isFailure(set)) return yield* Effect.fail(unavailable(source, `bad DNS servers: ${String(set.failure)}`))
    }
    yield* Effect.addFinalizer(() => Effect.sync(() => resolver.cancel()))
    const pokes = yield* Queue.sliding<void>(1)
    return yield* watched(source, resolveAll(resolver, name, port), Duration.fromInputUnsafe(options?.interval ?? "5 seconds"), pokes)
  })
