/**
 * User mistakes end with one clear line on standard error and a non-zero exit code, never a stack
 * trace or a page of help; `--help` works on every command.
 */
import { beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { createServer } from "node:net"
import { ensureBuilt } from "./support/Build.ts"
import * as Mcore from "./support/Mcore.ts"

beforeAll(ensureBuilt, 300_000)

/** A loopback port nothing listens on (bound, then released). */
const freePort = Effect.promise(() =>
  new Promise<number>((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })
)

/** Runs `mcore ...args`, expecting `code` and exactly one line on stderr (returned), nothing on stdout. */
const oneLine = (args: ReadonlyArray<string>, code: number) =>
  Effect.map(Mcore.run(args), (ended) => {
    expect(ended.code, ended.stderr).toBe(code)
    expect(ended.stdout).toBe("")
    expect(ended.stderr.endsWith("\n")).toBe(true)
    expect(ended.stderr.trimEnd().split("\n")).toHaveLength(1)
    expect(ended.stderr).not.toMatch(/^\s+at /m)
    return ended.stderr.trimEnd()
  })

describe("errors", () => {
  it.live("an unreachable coordinator: the client's ConnectTimeout, after --connect-timeout", () =>
    Effect.gen(function*() {
      const address = `tcp://127.0.0.1:${yield* freePort}`
      expect(yield* oneLine(["generate", "--address", address, "--connect-timeout", "300ms", "hello"], 1)).toBe(
        `mcore: ConnectTimeout: no CONNECT_ACK from ${address} within 300 ms: the connection was refused (ZeroMQ keeps retrying)`
      )
      expect(yield* oneLine(["control", "pause", "-a", address, "--connect-timeout", "0.2 seconds"], 1)).toBe(
        `mcore: ConnectTimeout: no CONNECT_ACK from ${address} within 200 ms: the connection was refused (ZeroMQ keeps retrying)`
      )
    }), 120_000)

  it.live("a malformed address: the client's InvalidAddress", () =>
    Effect.gen(function*() {
      expect(yield* oneLine(["generate", "--address", "localhost:5555", "hello"], 1)).toBe(
        `mcore: InvalidAddress: cannot connect to "localhost:5555": only tcp://host:port and ipc://path are supported`
      )
      expect(yield* oneLine(["control", "shutdown", "--address", "tcp://127.0.0.1:port"], 1)).toMatch(
        /^mcore: InvalidAddress: cannot connect to "tcp:\/\/127\.0\.0\.1:port": /
      )
    }), 120_000)

  it.live("the address from MCORE_COORDINATOR_ADDRESS when --address is not given", () =>
    Effect.gen(function*() {
      const ended = yield* Mcore.run(["generate", "--connect-timeout", "100ms", "hello"], {
        env: { MCORE_COORDINATOR_ADDRESS: "not an address" }
      })
      expect(ended.code).toBe(1)
      expect(ended.stderr).toBe(`mcore: InvalidAddress: cannot connect to "not an address": only tcp://host:port and ipc://path are supported\n`)
    }), 60_000)

  it.live("bad flags, values, arguments and commands: one line naming the mistake, exit code 2", () =>
    Effect.gen(function*() {
      expect(yield* oneLine(["generate", "-a", "tcp://127.0.0.1:1", "--tokenz", "3", "hi"], 2)).toBe(
        "mcore generate: unrecognized flag --tokenz (did you mean --tokens?); see mcore generate --help"
      )
      expect(yield* oneLine(["generate", "-a", "tcp://127.0.0.1:1", "--tokens", "many", "hi"], 2)).toMatch(
        /^mcore generate: Invalid value for flag --tokens: "many"\. .*; see mcore generate --help$/
      )
      expect(yield* oneLine(["generate", "-a", "tcp://127.0.0.1:1", "--tokens", "0", "hi"], 2)).toMatch(
        /^mcore generate: Invalid value for flag --tokens: "0"\. .*an integer >= 1.*$/
      )
      expect(yield* oneLine(["generate", "-a", "tcp://127.0.0.1:1", "--connect-timeout", "soon", "hi"], 2)).toMatch(
        /^mcore generate: Invalid value for flag --connect-timeout: "soon"\. .*a duration such as 500ms/
      )
      expect(yield* oneLine(["generate", "-a", "tcp://127.0.0.1:1"], 2)).toBe(
        "mcore generate: Missing required argument: prompt; see mcore generate --help"
      )
      expect(yield* oneLine(["control", "epoch", "-a", "tcp://127.0.0.1:1", "seven"], 2)).toMatch(
        /^mcore control epoch: Invalid value for argument <epoch>: "seven"\./
      )
      expect(yield* oneLine(["contrl", "pause"], 2)).toBe(
        "mcore: unknown command \"contrl\" (did you mean control?); see mcore --help"
      )
      expect(yield* oneLine(["coordinator", "--policy", "random"], 2)).toMatch(
        /^mcore coordinator: Invalid value for flag --policy: "random"\./
      )
      expect(yield* oneLine(["trace", "replay", "x.trace.jsonl"], 2)).toBe(
        "mcore: give --address ADDR (a coordinator to replay the clients against) or --as-coordinator"
      )
    }), 180_000)

  it.live("a trace file that is missing or not a trace", () =>
    Effect.gen(function*() {
      expect(yield* oneLine(["trace", "show", "/nonexistent/session.trace.jsonl"], 1)).toMatch(
        /^mcore: TraceIoFailed: cannot read \/nonexistent\/session\.trace\.jsonl: ENOENT/
      )
      expect(yield* oneLine(["trace", "show", Mcore.main], 1)).toMatch(/^mcore: InvalidTrace: invalid trace at line 1: /)
    }), 60_000)
})

describe("--help", () => {
  const commands = [
    [],
    ["demo"],
    ["generate"],
    ["control"],
    ["control", "pause"],
    ["control", "unpause"],
    ["control", "suspend"],
    ["control", "resume"],
    ["control", "stop"],
    ["control", "epoch"],
    ["control", "profiler"],
    ["control", "profiler", "start"],
    ["control", "profiler", "stop"],
    ["control", "shutdown"],
    ["coordinator"],
    ["trace"],
    ["trace", "record"],
    ["trace", "show"],
    ["trace", "replay"]
  ]

  it.live("every command has help: its usage and description, exit code 0", () =>
    Effect.forEach(commands, (path) =>
      Effect.map(Mcore.run([...path, "--help"]), (ended) => {
        expect(ended.code, path.join(" ")).toBe(0)
        expect(ended.stderr).toBe("")
        expect(ended.stdout).toContain(`USAGE\n  ${["mcore", ...path].join(" ")}`)
        expect(ended.stdout).toMatch(/DESCRIPTION\n {2}\S/)
      }), { concurrency: 4, discard: true }), 300_000)

  it.live("--version", () =>
    Effect.map(Mcore.run(["--version"]), (ended) => {
      expect(ended.code).toBe(0)
      expect(ended.stdout).toBe("mcore v0.1.0\n")
    }), 60_000)
})
