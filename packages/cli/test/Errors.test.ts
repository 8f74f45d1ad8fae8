/**
 * User mistakes end with one clear line on standard error and a non-zero exit code, never a stack
 * trace or a page of help; `--help` works on every command.
 */
import { beforeAll, describe, expect, it } from "@effect/vitest"
import { TestSupport } from "@mcore-effect/testkit"
import { Effect } from "effect"
import { ensureBuilt } from "./support/Build.ts"
import * as Mcore from "./support/Mcore.ts"

beforeAll(ensureBuilt, 300_000)

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
      const address = yield* TestSupport.refusedAddress
      expect(yield* oneLine(["generate", "--address", address, "--protocol", "main", "--connect-timeout", "300ms", "hello"], 1)).toBe(
        `mcore: ConnectTimeout: no CONNECT_ACK from ${address} within 300 ms: the connection was refused (ZeroMQ keeps retrying)`
      )
      expect(yield* oneLine(["control", "pause", "-a", address, "--protocol", "main", "--connect-timeout", "0.2 seconds"], 1)).toBe(
        `mcore: ConnectTimeout: no CONNECT_ACK from ${address} within 200 ms: the connection was refused (ZeroMQ keeps retrying)`
      )
    }), 120_000)

  it.live("a malformed address: a bad value (exit code 2), by the client's own rule", () =>
    Effect.gen(function*() {
      expect(yield* oneLine(["generate", "--address", "localhost:5555", "--protocol", "main", "hello"], 2)).toBe(
        `mcore generate: invalid value "localhost:5555" for --address: only tcp://host:port and ipc://path are supported; ` +
          `see mcore generate --help`
      )
      expect(yield* oneLine(["control", "shutdown", "--address", "tcp://127.0.0.1:port", "--protocol", "main"], 2)).toBe(
        `mcore control shutdown: invalid value "tcp://127.0.0.1:port" for --address: the port must be a number from 1 to 65535, ` +
          `got "port"; see mcore control shutdown --help`
      )
    }), 120_000)

  it.live("the address from MCORE_COORDINATOR_ADDRESS when --address is not given", () =>
    Effect.gen(function*() {
      const ended = yield* Mcore.run(["generate", "--protocol", "main", "--connect-timeout", "100ms", "hello"], {
        env: { MCORE_COORDINATOR_ADDRESS: "not an address" }
      })
      expect(ended.code).toBe(2)
      expect(ended.stderr).toBe(
        `mcore generate: invalid value "not an address" for --address: only tcp://host:port and ipc://path are supported; ` +
          `see mcore generate --help\n`
      )
    }), 60_000)

  it.live("bad flags, values, arguments and commands: one line naming the mistake, exit code 2", () =>
    Effect.gen(function*() {
      expect(yield* oneLine(["generate", "-a", "tcp://127.0.0.1:1", "--protocol", "main", "--tokenz", "3", "hi"], 2)).toBe(
        "mcore generate: unrecognized flag --tokenz (did you mean --tokens?); see mcore generate --help"
      )
      // Every refused value: exit code 2, one style naming the flag (or argument) and the value as typed.
      const generate = (...args: ReadonlyArray<string>) => oneLine(["generate", "-a", "tcp://127.0.0.1:1", "--protocol", "main", ...args], 2)
      const see = "; see mcore generate --help"
      expect(yield* generate("--tokens", "many", "hi")).toBe(`mcore generate: invalid value "many" for --tokens: expected an integer >= 1${see}`)
      expect(yield* oneLine(["generate", "-a", "tcp://127.0.0.1:1", "--protocol", "v0.19", "hi"], 2)).toBe(
        `mcore generate: invalid value "v0.19" for --protocol: expected one of main, pr-6497, core_v0.19, core_v0.18, ` +
          `core_v0.17, core_v0.16, reference (README.md#against-a-real-megatron-deployment)${see}`
      )
      expect(yield* generate("-n", "0", "hi")).toBe(`mcore generate: invalid value "0" for --tokens: expected an integer >= 1${see}`)
      expect(yield* generate("--top-k", "abc", "hi")).toBe(
        `mcore generate: invalid value "abc" for --top-k: expected a non-negative integer${see}`
      )
      expect(yield* generate("--temperature", "warm", "hi")).toBe(
        `mcore generate: invalid value "warm" for --temperature: expected a number${see}`
      )
      // Values the client would refuse after connecting are refused here first (the address is unreachable).
      expect(yield* generate("--temperature", "-1", "hi")).toBe(
        `mcore generate: invalid value "-1" for --temperature: expected a finite number >= 0${see}`
      )
      expect(yield* generate("--top-p", "2", "hi")).toBe(
        `mcore generate: invalid value "2" for --top-p: expected a number in [0, 1]${see}`
      )
      expect(yield* generate("--set", "bogus", "hi")).toBe(
        `mcore generate: invalid value "bogus" for --set: expected KEY=VALUE, such as top_n_logprobs=3${see}`
      )
      expect(yield* generate("--set", "top_k=-2", "hi")).toBe(
        `mcore generate: invalid value "top_k=-2" for --set: top_k: expected a non-negative integer${see}`
      )
      // A key that is not a SamplingParams field goes to extra on purpose, where Python sets it as an attribute.
      expect(yield* generate("--set", "_private=1", "hi")).toMatch(
        /^mcore generate: invalid value "_private=1" for --set: extra\._private: is not usable as an extra key: /
      )
      expect(yield* generate("--token-ids", "1 2 x")).toBe(
        `mcore generate: invalid value "1 2 x" for <prompt>: "x" (at index 2) is not a token id; with --token-ids, ` +
          `expected non-negative integers such as "1 2 3" or "1,2,3"${see}`
      )
      expect(yield* generate("")).toMatch(/^mcore generate: invalid value "" for <prompt>: it is empty; /)
      expect(yield* generate("--connect-timeout", "soon", "hi")).toBe(
        `mcore generate: invalid value "soon" for --connect-timeout: expected a duration such as 500ms, 2s or "2 seconds"${see}`
      )
      expect(yield* oneLine(["generate", "-a", "tcp://127.0.0.1:1", "--protocol", "main"], 2)).toBe(
        "mcore generate: Missing required argument: prompt; see mcore generate --help"
      )
      // (The test run does not set MCORE_COORDINATOR_ADDRESS.)
      expect(yield* oneLine(["control", "pause", "--protocol", "main"], 2)).toBe(
        "mcore control pause: missing --address (or MCORE_COORDINATOR_ADDRESS in the environment): where the coordinator is; " +
          "see mcore control pause --help"
      )
      expect(yield* oneLine(["control", "epoch", "-a", "tcp://127.0.0.1:1", "--protocol", "main", "seven"], 2)).toBe(
        `mcore control epoch: invalid value "seven" for <epoch>: expected a non-negative integer; see mcore control epoch --help`
      )
      expect(yield* oneLine(["control", "epoch", "-a", "tcp://127.0.0.1:1", "--protocol", "main", "-1"], 2)).toBe(
        `mcore control epoch: invalid value "-1" for <epoch>: expected a non-negative integer; see mcore control epoch --help`
      )
      expect(yield* oneLine(["contrl", "pause"], 2)).toBe(
        "mcore: unknown command \"contrl\" (did you mean control?); see mcore --help"
      )
      expect(yield* oneLine(["coordinator", "--policy", "random"], 2)).toMatch(
        /^mcore coordinator: invalid value "random" for --policy: expected one of "load_balanced" \| "longest_prefix" \| "first_prefix_block"; /
      )
      expect(yield* oneLine(["coordinator", "--engines", "-1"], 2)).toMatch(
        /^mcore coordinator: invalid value "-1" for --engines: expected a non-negative integer; /
      )
      expect(yield* oneLine(["trace", "replay", "x.trace.jsonl", "--address", "nowhere"], 2)).toBe(
        `mcore trace replay: invalid value "nowhere" for --address: only tcp://host:port and ipc://path are supported; ` +
          `see mcore trace replay --help`
      )
      // A documentation address (192.0.2.1): were the check ever lost, nothing could bind it.
      expect(yield* oneLine(["trace", "record", "--upstream", "tcp://127.0.0.1:1", "--out", "x", "--listen", "tcp://192.0.2.1:0"], 2))
        .toMatch(/^mcore trace record: invalid value "tcp:\/\/192\.0\.2\.1:0" for --listen: expected a loopback address/)
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
    ["serve"],
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
