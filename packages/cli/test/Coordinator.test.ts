/**
 * `mcore coordinator` as a subprocess, and `mcore generate` and `mcore control` against it, each a
 * subprocess too: what a person testing their own client would run.
 */
import { beforeAll, describe, expect, it } from "@effect/vitest"
import { InferenceClient } from "@mcore-effect/client"
import { Generation, TestEngine, Vocabulary, WordTokenizer } from "@mcore-effect/testkit"
import { Effect, Fiber, Schedule } from "effect"
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { ensureBuilt } from "./support/Build.ts"
import * as Mcore from "./support/Mcore.ts"

beforeAll(ensureBuilt, 300_000)

const prompt = "the quick fox jumps over the old stone"
const expectedTokens = (n: number) => Generation.tokens(Vocabulary.tokenize(prompt), n)

describe("mcore coordinator", () => {
  it.live("prints its bound loopback address first, its dialect second (its own unless told), then its engines", () =>
    Effect.gen(function*() {
      const { address, process, protocol } = yield* Mcore.coordinator(["--engines", "3"])
      expect(address).toMatch(/^tcp:\/\/127\.0\.0\.1:\d+$/)
      expect(protocol).toBe("reference")
      expect(process.stdout().split("\n").slice(0, 2)).toEqual([address, "protocol reference"])
      yield* process.line("the engines", (l) => l.includes("3 engine(s) (mp-coord-0, mp-coord-1, mp-coord-2)"))
    }), 120_000)

  it.live("SIGTERM closes the sockets and ends the process (143); the address can be bound again; SIGINT ends it with 130", () =>
    Effect.gen(function*() {
      const dir = yield* Effect.acquireRelease(
        Effect.sync(() => mkdtempSync(join(tmpdir(), "mcore-coordinator-"))),
        (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
      )
      const addressFile = join(dir, "address")
      const first = yield* Mcore.coordinator(["--address-file", addressFile])
      // Written before the engines line is printed.
      yield* first.process.line("the engines", (l) => l.startsWith("test coordinator: "))
      expect(readFileSync(addressFile, "utf8")).toBe(`${first.address}\n`)
      yield* first.process.kill("SIGTERM")
      const ended = yield* first.process.exited()
      expect(ended.stdout.split("\n").at(-2)).toBe("closed")
      expect(ended.code).toBe(143)
      expect(existsSync(addressFile)).toBe(false)
      expect(ended.stderr).toBe("")
      const again = yield* Mcore.coordinator(["--listen", first.address])
      expect(again.address).toBe(first.address)
      yield* again.process.kill("SIGINT")
      const interrupted = yield* again.process.exited()
      expect(interrupted.stdout.split("\n").at(-2)).toBe("closed")
      expect(interrupted.code).toBe(130)
    }), 120_000)

  it.live("--metrics-port: Prometheus text at /metrics, scraped while requests run, its figures moving with them", () =>
    Effect.gen(function*() {
      const { address, process, protocol } = yield* Mcore.coordinator(["--metrics-port", "0", "--step-ms", "25"])
      const url = (yield* process.line("the metrics URL", (l) => l.startsWith("metrics "))).slice("metrics ".length)
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/)
      const scrape = (path = url) =>
        Effect.promise(async () => {
          const response = await fetch(path)
          return { status: response.status, type: response.headers.get("content-type"), text: await response.text() }
        })
      /** A sample's value: `name{labels} value` (labels as written), or undefined when absent. */
      const value = (text: string, series: string) => {
        const line = text.split("\n").find((l) => l.startsWith(`${series} `))
        return line === undefined ? undefined : Number(line.slice(series.length + 1))
      }
      const first = yield* scrape()
      expect(first.status).toBe(200)
      expect(first.type).toContain("text/plain; version=0.0.4")
      expect(first.text).toContain("# TYPE mcore_coordinator_requests_routed_total counter")
      expect(value(first.text, "mcore_coordinator_engines")).toBe(2)
      expect(value(first.text, "mcore_coordinator_requests_routed_total")).toBe(0)
      expect(value(first.text, `mcore_coordinator_state{state="RUNNING"}`)).toBe(1)
      // Six requests of 20 steps of 25 ms each: in flight for half a second.
      expect(protocol).toBe("reference")
      const client = yield* InferenceClient.make({ address, protocol: "reference" })
      const running = yield* Effect.forkChild(
        Effect.forEach(Array.from({ length: 6 }, (_, i) => [i + 1, i + 2]), (p) => client.submit(p, { num_tokens_to_generate: 20 }), {
          concurrency: "unbounded"
        })
      )
      const during = yield* scrape().pipe(
        Effect.repeat({ until: (s) => value(s.text, "mcore_coordinator_requests_in_flight") === 6, schedule: Schedule.spaced("10 millis") }),
        Effect.timeout("5 seconds")
      )
      const perEngine = (text: string, name: string) =>
        ["mp-coord-0", "mp-coord-1"].map((e) => value(text, `${name}{engine="${e}"}`) ?? 0)
      expect(perEngine(during.text, "mcore_coordinator_engine_requests_in_flight").reduce((a, b) => a + b)).toBe(6)
      expect(value(during.text, "mcore_coordinator_clients")).toBe(1)
      yield* Fiber.join(running)
      const after = (yield* scrape()).text
      expect(value(after, "mcore_coordinator_requests_in_flight")).toBe(0)
      expect(value(after, "mcore_coordinator_requests_routed_total")).toBe(6)
      expect(perEngine(after, "mcore_coordinator_engine_requests_routed_total")).toEqual([3, 3])
      expect(value(after, `mcore_coordinator_messages_refused_total{reason="malformed"}`)).toBe(0)
      expect(value(after, "process_cpu_seconds_total")).toBeGreaterThan(value(first.text, "process_cpu_seconds_total")!)
      expect((yield* scrape(url.replace("/metrics", "/other"))).status).toBe(404)
    }).pipe(Effect.scoped), 120_000)

  it.live("SHUTDOWN from a client ends it with exit code 0", () =>
    Effect.gen(function*() {
      const { address, process, protocol } = yield* Mcore.coordinator()
      expect(yield* Mcore.ok(["control", "shutdown", "--address", address, "--protocol", protocol])).toBe(
        `SHUTDOWN sent to ${address}; the coordinator does not confirm\n`
      )
      const ended = yield* process.exited()
      expect(ended.code).toBe(0)
      expect(ended.stdout).toContain("SHUTDOWN received\nclosed\n")
    }), 120_000)

  it.live("with test engines, refuses to bind anything but loopback, in one line: a bad value of --listen (exit code 2)", () =>
    Effect.gen(function*() {
      const ended = yield* Mcore.run(["coordinator", "--listen", "tcp://192.0.2.1:0"])
      expect(ended.code).toBe(2)
      expect(ended.stdout).toBe("")
      expect(ended.stderr).toBe(
        `mcore: invalid value "tcp://192.0.2.1:0" for --listen: test engines bind on loopback only ` +
          `(tcp://127.0.0.1:PORT, tcp://[::1]:PORT or ipc://PATH); --external-engines binds anywhere\n`
      )
    }), 60_000)
})

describe("mcore coordinator --external-engines", () => {
  /**
   * A model's tokenizer that is not the test vocabulary the test engines generate in: the same
   * ids, every word in capitals. A reply's text then shows which tokenizer detokenized it.
   */
  const capitalsTokenizer = Effect.acquireRelease(
    Effect.sync(() => {
      const dir = mkdtempSync(join(tmpdir(), "mcore-capitals-"))
      const json = WordTokenizer.tokenizerJson() as { model: { vocab: Record<string, number> }; added_tokens: Array<{ id: number }> }
      const special = new Set(json.added_tokens.map((t) => t.id))
      json.model.vocab = Object.fromEntries(
        Object.entries(json.model.vocab).map(([word, id]) => [special.has(id) ? word : word.toUpperCase(), id])
      )
      writeFileSync(join(dir, "tokenizer.json"), JSON.stringify(json))
      writeFileSync(join(dir, "tokenizer_config.json"), JSON.stringify(WordTokenizer.tokenizerConfig()))
      return dir
    }),
    (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
  )

  it.live("waits for engines that dial it as Megatron-LM's do, serves a client that came first, shows engines leaving on STOP", () =>
    Effect.gen(function*() {
      const tokenizer = yield* capitalsTokenizer
      const { address, process, protocol } = yield* Mcore.coordinator(["--protocol", "main", "--external-engines", "2", "--tokenizer", tokenizer])
      expect(protocol).toBe("main")
      yield* process.line("the wait", (l) => l === "coordinator: waiting for 2 engine(s) to register (policy load_balanced, protocol main); stop with Ctrl-C")
      // A client before any engine: its request waits for one, then is answered.
      const early = yield* Mcore.start(["generate", "--address", address, "--protocol", protocol, "--tokens", "6", prompt])
      yield* process.line("the client", (l) => l === "clients 1")
      // Megatron's engines: DEALERs with identities mp-coord-<rank>, registering with one empty message.
      yield* TestEngine.make({ coordinatorAddress: address, protocol: "main", rank: 0, stepMs: 0 })
      yield* process.line("the first engine", (l) => l === "engine mp-coord-0 registered")
      expect(process.stdout()).not.toContain("serving")
      yield* TestEngine.make({ coordinatorAddress: address, protocol: "main", rank: 1, stepMs: 0 })
      yield* process.line("both engines", (l) => l === "coordinator: 2 engine(s) registered (mp-coord-0, mp-coord-1), serving")
      const answered = yield* early.exited()
      // Detokenized by the coordinator with the tokenizer it was given.
      expect(answered).toMatchObject({ code: 0, stdout: `${Vocabulary.detokenize(expectedTokens(6)).toUpperCase()}\n`, stderr: "" })
      expect(yield* Mcore.ok(["generate", "-a", address, "--protocol", protocol, "-n", "3", prompt])).toBe(
        `${Vocabulary.detokenize(expectedTokens(3)).toUpperCase()}\n`
      )
      // PAUSE then STOP: each engine sends DISCONNECT and leaves the pool.
      yield* Mcore.ok(["control", "pause", "--address", address, "--protocol", protocol])
      yield* Mcore.ok(["control", "stop", "--address", address, "--protocol", protocol])
      yield* process.line("the first engine gone", (l) => l === "engine mp-coord-0 gone")
      yield* process.line("the second engine gone", (l) => l === "engine mp-coord-1 gone")
      yield* process.kill("SIGTERM")
      const ended = yield* process.exited()
      expect(ended.code).toBe(143)
      expect(ended.stdout.split("\n").at(-2)).toBe("closed")
      // The log (standard error) says why each left, and nothing else went wrong.
      expect(ended.stderr.trimEnd().split("\n").map((l) => l.replace(/^\S+ WARN \(#\d+\): /, ""))).toEqual([
        "coordinator: engine mp-coord-0 removed: it sent DISCONNECT (1 left)",
        "coordinator: engine mp-coord-1 removed: it sent DISCONNECT (0 left)"
      ])
    }).pipe(Effect.scoped), 120_000)

  it.live("--allow-from: an engine dialing from outside it is refused and logged once; one from inside serves", () =>
    Effect.gen(function*() {
      const tokenizer = yield* capitalsTokenizer
      const { address, process, protocol } = yield* Mcore.coordinator([
        "--protocol", "main", "--external-engines", "1", "--tokenizer", tokenizer, "--allow-from", "127.0.0.1/32"
      ])
      // From 127.0.0.2 (libzmq's source address form): closed as it connects, and it dials again.
      yield* TestEngine.make({ coordinatorAddress: address.replace("tcp://", "tcp://127.0.0.2:0;"), protocol: "main", rank: 1, stepMs: 0 })
      yield* TestEngine.make({ coordinatorAddress: address, protocol: "main", rank: 0, stepMs: 0 })
      yield* process.line("the engine inside", (l) => l === "coordinator: 1 engine(s) registered (mp-coord-0), serving")
      expect(yield* Mcore.ok(["generate", "-a", address, "--protocol", protocol, "-n", "3", prompt])).toBe(
        `${Vocabulary.detokenize(expectedTokens(3)).toUpperCase()}\n`
      )
      yield* process.kill("SIGTERM")
      const ended = yield* process.exited()
      expect(ended.stdout).not.toContain("mp-coord-1")
      expect(ended.stderr.trimEnd().split("\n").map((l) => l.replace(/^\S+ WARN \(#\d+\): /, ""))).toEqual([
        "a connection from 127.0.0.2 was refused: not in the allowlist (said once per address; counted as not-allowed)"
      ])
    }).pipe(Effect.scoped), 120_000)

  it.live("needs --protocol and --tokenizer, and refuses --engines beside it (exit code 2, nothing bound); a bad tokenizer is one line", () =>
    Effect.gen(function*() {
      const tokenizer = yield* capitalsTokenizer
      const bare = yield* Mcore.run(["coordinator", "--external-engines", "2", "--tokenizer", "/nonexistent"])
      expect(bare.code).toBe(2)
      expect(bare.stdout).toBe("")
      expect(bare.stderr).toMatch(/^mcore: missing --protocol \(needed with --external-engines: the dialect the engines speak; one of main, /)
      const both = yield* Mcore.run(["coordinator", "--protocol", "main", "--external-engines", "2", "--engines", "1"])
      expect(both.code).toBe(2)
      expect(both.stdout).toBe("")
      expect(both.stderr).toContain("--engines starts test engines, --external-engines waits for real ones: give one of them")
      const untokenized = yield* Mcore.run(["coordinator", "--protocol", "main", "--external-engines", "2"])
      expect(untokenized).toMatchObject({ code: 2, stdout: "" })
      expect(untokenized.stderr).toContain("missing --tokenizer DIR (needed with --external-engines: the model's tokenizer")
      const testEngines = yield* Mcore.run(["coordinator", "--tokenizer", "/nonexistent"])
      expect(testEngines).toMatchObject({ code: 2, stdout: "" })
      expect(testEngines.stderr).toContain("--tokenizer goes with --external-engines")
      // Flags that go with another, each refused alone before anything is bound.
      for (
        const [flag, value, why] of [
          ["--alpha", "0.7", "--alpha goes with --external-engines"],
          ["--metrics-host", "127.0.0.1", "--metrics-host goes with --metrics-port"],
          ["--allow-from", "127.0.0.1", "--allow-from goes with --external-engines (the test coordinator binds on loopback only)"]
        ]
      ) {
        const alone = yield* Mcore.run(["coordinator", flag!, value!])
        expect(alone).toMatchObject({ code: 2, stdout: "" })
        expect(alone.stderr).toContain(why)
      }
      for (
        const [flag, value, why] of [
          ["--alpha", "2", "invalid option alpha: must be a number from 0 to 1"],
          ["--allow-from", "10.0.0.0/40", "invalid option allowFrom: 10.0.0.0/40: the prefix length should be 0 to 32"]
        ]
      ) {
        const bad = yield* Mcore.run(["coordinator", "--protocol", "main", "--external-engines", "2", "--tokenizer", tokenizer, flag!, value!])
        expect(bad).toMatchObject({ code: 1, stdout: "" })
        expect(bad.stderr).toContain(why)
      }
      const missing = yield* Mcore.run(["coordinator", "--protocol", "main", "--external-engines", "2", "--tokenizer", "/nonexistent"])
      expect(missing).toMatchObject({ code: 1, stdout: "" })
      expect(missing.stderr).toMatch(/^mcore: TokenizerUnusable: cannot load the tokenizer in \/nonexistent: .+\n$/)
    }), 60_000)
})

describe("mcore generate against mcore coordinator", () => {
  it.live("prints the generated text (detokenized by the coordinator)", () =>
    Effect.gen(function*() {
      const { address, protocol } = yield* Mcore.coordinator()
      const stdout = yield* Mcore.ok(["generate", "--address", address, "--protocol", protocol, "--tokens", "6", prompt])
      expect(stdout).toBe(`${Vocabulary.detokenize(expectedTokens(6))}\n`)
    }), 120_000)

  it.live("--transport zeromq on either side: zeromq.js's ROUTER and DEALER in place of ours, the same answer", () =>
    Effect.gen(function*() {
      const { address, protocol } = yield* Mcore.coordinator(["--transport", "zeromq"])
      for (const transport of ["zeromq", "zmtp"]) {
        const stdout = yield* Mcore.ok(["generate", "--address", address, "--protocol", protocol, "--transport", transport, "--tokens", "4", prompt])
        expect(stdout).toBe(`${Vocabulary.detokenize(expectedTokens(4))}\n`)
      }
      const refused = yield* Mcore.run(["generate", "--address", address, "--protocol", protocol, "--transport", "nng", prompt])
      expect(refused.code).toBe(2)
      expect(refused.stderr).toContain("--transport")
    }), 120_000)

  it.live("--json prints the reply map, the flags in its sampling params", () =>
    Effect.gen(function*() {
      const { address, protocol } = yield* Mcore.coordinator()
      const stdout = yield* Mcore.ok([
        "generate", "-a", address, "--protocol", protocol, "-n", "5", "--json",
        "--temperature", "0.5", "--top-k", "3", "--top-p", "0.9", "--termination-id", "9999",
        "--stop", "moonless", "--stop", "sunless", "--set", "top_n_logprobs=2", "--set", "note=\"x\"",
        prompt
      ])
      expect(stdout.split("\n").length).toBe(2)
      const reply = JSON.parse(stdout) as Record<string, unknown>
      expect(reply.generated_tokens).toEqual(expectedTokens(5))
      expect(reply.generated_text).toBe(Vocabulary.detokenize(expectedTokens(5)))
      expect(reply.status).toBe("COMPLETED")
      expect(typeof reply.latency).toBe("number")
      expect(reply.sampling_params).toMatchObject({
        num_tokens_to_generate: 5,
        temperature: 0.5,
        top_k: 3,
        top_p: 0.9,
        termination_id: 9999,
        stop_words: ["moonless", "sunless"],
        top_n_logprobs: 2,
        note: "x",
        streaming: false
      })
    }), 120_000)

  it.live("--stream prints token ids as they arrive, then the text", () =>
    Effect.gen(function*() {
      const { address, protocol } = yield* Mcore.coordinator()
      const tokens = expectedTokens(7)
      const stdout = yield* Mcore.ok(["generate", "-a", address, "--protocol", protocol, "-n", "7", "--stream", prompt])
      expect(stdout).toBe(` ${tokens.join(" ")}\n${Vocabulary.detokenize(tokens)}\n`)
      const words = yield* Mcore.ok(["generate", "-a", address, "--protocol", protocol, "-n", "7", "--stream", "--test-vocabulary", prompt])
      expect(words).toBe(` ${Vocabulary.detokenize(tokens)}\n`)
    }), 120_000)

  it.live("--stream --json prints one JSON line per event, each naming which request id is which", () =>
    Effect.gen(function*() {
      const { address, protocol } = yield* Mcore.coordinator()
      // An earlier request moves the coordinator's own numbering on; the client's starts at 0 again.
      yield* Mcore.ok(["generate", "-a", address, "--protocol", protocol, "-n", "1", prompt])
      const stdout = yield* Mcore.ok(["generate", "-a", address, "--protocol", protocol, "-n", "4", "--stream", "--json", prompt])
      const events = stdout.trim().split("\n").map((line) => JSON.parse(line) as Record<string, any>)
      const partials = events.slice(0, -1)
      expect(partials.length).toBeGreaterThan(0)
      for (const event of partials) expect(Object.keys(event)).toEqual(["client_request_id", "partial"])
      for (const event of partials) expect(event.client_request_id).toBe(0)
      const streamed = partials.flatMap((event) => event.partial.new_tokens as Array<number>)
      expect(streamed).toEqual(expectedTokens(4).slice(0, streamed.length))
      const final = events.at(-1)!
      expect(final).toMatchObject({ client_request_id: 0, coordinator_request_id: 1 })
      expect(final.final.request_id).toBe(1)
      expect(final.final.generated_tokens).toEqual(expectedTokens(4))
      expect(final.final.sampling_params.streaming).toBe(true)
    }), 120_000)

  it.live("--token-ids sends the prompt as token ids", () =>
    Effect.gen(function*() {
      const { address, protocol } = yield* Mcore.coordinator()
      const ids = Vocabulary.tokenize(prompt)
      const stdout = yield* Mcore.ok(["generate", "-a", address, "--protocol", protocol, "-n", "3", "--json", "--token-ids", ids.join(",")])
      expect((JSON.parse(stdout) as Record<string, unknown>).generated_tokens).toEqual(expectedTokens(3))
    }), 120_000)

  it.live("a request the client would refuse is a usage error (exit code 2), found before connecting", () =>
    Effect.gen(function*() {
      const { address, process, protocol } = yield* Mcore.coordinator()
      const refused = (args: ReadonlyArray<string>) =>
        Effect.map(Mcore.run(["generate", "-a", address, "--protocol", protocol, ...args]), (ended) => {
          expect(ended.code, ended.stderr).toBe(2)
          expect(ended.stdout).toBe("")
          return ended.stderr
        })
      expect(yield* refused(["--temperature", "-1", prompt])).toBe(
        `mcore generate: invalid value "-1" for --temperature: expected a finite number >= 0; see mcore generate --help\n`
      )
      expect(yield* refused(["--token-ids", "1 two 3"])).toMatch(
        /^mcore generate: invalid value "1 two 3" for <prompt>: "two" \(at index 1\) is not a token id; /
      )
      expect(yield* refused([""])).toMatch(/^mcore generate: invalid value "" for <prompt>: it is empty; /)
      // Nothing reached the coordinator: it never saw a client.
      expect(process.stdout()).not.toContain("clients 1")
    }), 120_000)

  it.live("--timeout aborts a request that does not finish in time", () =>
    Effect.gen(function*() {
      const { address, protocol } = yield* Mcore.coordinator(["--step-ms", "50"])
      const ended = yield* Mcore.run(["generate", "-a", address, "--protocol", protocol, "-n", "100000", "--timeout", "200ms", prompt])
      expect(ended.code).toBe(1)
      expect(ended.stderr).toBe("mcore: RequestTimeout: request 0 did not finish within 200 ms (aborted)\n")
    }), 120_000)
})

describe("mcore control against mcore coordinator", () => {
  it.live("each signal reaches the coordinator and its engines", () =>
    Effect.gen(function*() {
      const { address, process, protocol } = yield* Mcore.coordinator()
      const send = (...signal: Array<string>) => Mcore.ok(["control", ...signal, "--address", address, "--protocol", protocol])
      // The coordinator prints each change of control state and each signal an engine receives.
      const engines = (header: string) =>
        Effect.all(["mp-coord-0", "mp-coord-1"].map((engine) =>
          process.line(`${engine} receiving ${header}`, (l) => l === `engine ${engine} ${header}`)
        ))

      expect(yield* send("pause")).toBe(`PAUSE sent to ${address}; the coordinator does not confirm (it acts on PAUSE only when RUNNING)\n`)
      yield* process.line("state PAUSED", (l) => l === "state PAUSED")
      yield* engines("PAUSE")
      yield* send("suspend")
      yield* process.line("state SUSPENDED", (l) => l === "state SUSPENDED")
      yield* engines("SUSPEND")
      yield* send("resume")
      yield* engines("RESUME")
      yield* send("unpause")
      yield* engines("UNPAUSE")
      expect(yield* send("epoch", "7")).toBe(`SET_GENERATION_EPOCH 7 sent to ${address}; the coordinator does not confirm\n`)
      yield* engines("SET_GENERATION_EPOCH (epoch now 7)")
      yield* send("profiler", "start")
      yield* engines("START_CUDA_PROFILER")
      yield* send("profiler", "stop")
      yield* engines("STOP_CUDA_PROFILER")
      // Last: STOP ends the engines (they leave the coordinator), as Megatron's do.
      yield* send("pause")
      yield* send("stop")
      yield* engines("STOP")
      yield* process.line("state RUNNING after STOP", (l) => l === "state RUNNING" && process.stdout().includes("STOP\n"))
      const states = process.stdout().split("\n").filter((l) => l.startsWith("state "))
      expect(states).toEqual(["state PAUSED", "state SUSPENDED", "state PAUSED", "state RUNNING", "state PAUSED", "state RUNNING"])
    }), 180_000)
})

describe("mcore coordinator --protocol: a Megatron-LM ref's wire, without Megatron", () => {
  it.live("main: mcore generate --protocol main gets its text and its stream; a reference client is refused and the coordinator goes on", () =>
    Effect.gen(function*() {
      const { address, process, protocol } = yield* Mcore.coordinator(["--protocol", "main"])
      expect(protocol).toBe("main")
      yield* process.line("the banner", (l) => l.startsWith("test coordinator: ") && l.includes(", protocol main, "))
      const main = ["--address", address, "--protocol", "main"]
      expect(yield* Mcore.ok(["generate", ...main, "--tokens", "6", prompt])).toBe(`${Vocabulary.detokenize(expectedTokens(6))}\n`)
      const events = (yield* Mcore.ok(["generate", ...main, "-n", "4", "--stream", "--json", prompt]))
        .trim().split("\n").map((line) => JSON.parse(line) as Record<string, any>)
      const streamed = events.slice(0, -1).flatMap((event) => event.partial.new_tokens as Array<number>)
      expect(streamed).toEqual(expectedTokens(4).slice(0, streamed.length))
      // main's engines re-serialize main's SamplingParams: no reference-only keys in the reply.
      expect(Object.keys(events.at(-1)!.final.sampling_params)).not.toContain("detokenize_generations")
      expect(yield* Mcore.ok(["control", "pause", ...main])).toContain("PAUSE sent to")
      yield* process.line("state PAUSED", (l) => l === "state PAUSED")
      yield* Mcore.ok(["control", "unpause", ...main])
      yield* process.line("state RUNNING", (l) => l === "state RUNNING")
      // The reference protocol's five-frame SUBMIT is not main's: dropped (logged), never answered.
      const wrong = yield* Mcore.run(["generate", "--address", address, "--protocol", "reference", "-n", "2", "--timeout", "500ms", prompt])
      expect(wrong.code).toBe(1)
      expect(wrong.stderr).toContain("RequestTimeout")
      expect(yield* Mcore.ok(["generate", ...main, "-n", "2", prompt])).toBe(`${Vocabulary.detokenize(expectedTokens(2))}\n`)
    }), 180_000)

  it.live("core_v0.16: the reply is the request's record (--json prints it whole, the text is its request's); pause and unpause", () =>
    Effect.gen(function*() {
      const { address } = yield* Mcore.coordinator(["--protocol", "core_v0.16"])
      const v016 = ["--address", address, "--protocol", "core_v0.16"]
      const record = JSON.parse(yield* Mcore.ok(["generate", ...v016, "-n", "3", "--json", prompt])) as Record<string, any>
      expect(Object.keys(record)).toEqual(["requests", "latency"])
      expect(record.requests[0].generated_tokens).toEqual(expectedTokens(3))
      expect(yield* Mcore.ok(["generate", ...v016, "-n", "2", prompt])).toBe(`${Vocabulary.detokenize(expectedTokens(2))}\n`)
      yield* Mcore.ok(["control", "pause", ...v016])
      yield* Mcore.ok(["control", "unpause", ...v016])
      expect(yield* Mcore.ok(["generate", ...v016, "-n", "2", prompt])).toBe(`${Vocabulary.detokenize(expectedTokens(2))}\n`)
    }), 180_000)

  it.live("core_v0.17: headers from 1; a token prompt comes back with its text; a stream is refused before anything is sent", () =>
    Effect.gen(function*() {
      const { address } = yield* Mcore.coordinator(["--protocol", "core_v0.17"])
      const v017 = ["--address", address, "--protocol", "core_v0.17"]
      const ids = Vocabulary.tokenize(prompt)
      const reply = JSON.parse(yield* Mcore.ok(["generate", ...v017, "-n", "3", "--json", "--token-ids", ids.join(",")])) as Record<string, any>
      expect(reply.generated_tokens).toEqual(expectedTokens(3))
      expect(reply.prompt).toBe(prompt)
      expect(reply.generated_text).toBe(Vocabulary.detokenize(expectedTokens(3)))
      const refused = yield* Mcore.run(["generate", ...v017, "-n", "3", "--stream", prompt])
      expect(refused.code).toBe(1)
      expect(refused.stderr).toBe(
        "mcore: InvalidRequest: UnsupportedByDialect: the core_v0.17 protocol does not support streaming: " +
          "Megatron-LM core_v0.17 sends no partial replies; nothing was sent\n"
      )
    }), 180_000)
})
