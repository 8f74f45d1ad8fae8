/**
 * The two coordinators `pnpm bench coordinator` compares, each in a process of its own with the
 * same engines dialing it: Megatron-LM's (its unmodified `DataParallelInferenceCoordinator`,
 * staged from a Megatron-LM git dir by `scripts/megatron/stage.sh`, started by
 * `run_coordinator.py` as Megatron's engine starts it) and ours (`mcore coordinator
 * --external-engines 2`, the built CLI). The engines are `scripts/megatron/fake_engine.py`'s:
 * Megatron's own engine methods at that ref (copied verbatim into the stage), no model.
 *
 * Also what the bench reads of a process: its CPU time (`/proc/PID/stat`, every thread, 10 ms
 * ticks; ours reports its own through `--metrics-port`, to the microsecond).
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process"
import { existsSync, mkdtempSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"

const ROOT = fileURLToPath(new URL("../../../", import.meta.url))
const SCRIPTS = join(ROOT, "scripts", "megatron")

/** Clock ticks per second of `/proc/PID/stat` (Linux's USER_HZ, 100 on every platform it runs). */
const TICKS = 100

/** A process's CPU seconds so far (user + system, every thread), or NaN once it is gone. */
export const cpuSeconds = (pid: number): number => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    return (Number(fields[11]) + Number(fields[12])) / TICKS
  } catch {
    return Number.NaN
  }
}

/** A python3 with numpy, msgpack and pyzmq (as `scripts/megatron` needs), or undefined. */
export const findPython = (): string | undefined =>
  [process.env.PYTHON, "/usr/bin/python3", "python3"].find((candidate) =>
    candidate !== undefined && spawnSync(candidate, ["-c", "import numpy, msgpack, zmq"], { stdio: "ignore" }).status === 0
  )

/** What a bench beside Megatron-LM needs from the machine: the git dir, the python and `/proc`. */
export interface Needs {
  readonly megatronGit: string
  readonly python: string
}

/** The machine's {@link Needs}, or the one line that says which is missing. */
export const needs = (): Needs | string => {
  const megatronGit = process.env.MEGATRON_GIT
  if (megatronGit === undefined || megatronGit === "") return "MEGATRON_GIT is not set (a Megatron-LM git dir, see scripts/megatron/README.md)"
  if (!existsSync(megatronGit)) return `MEGATRON_GIT=${megatronGit} does not exist`
  const python = findPython()
  if (python === undefined) return "no python3 with numpy, msgpack and pyzmq"
  if (!existsSync("/proc/self/stat")) return "no /proc to read a process's CPU from"
  return { megatronGit, python }
}

/** Stages `ref` of the Megatron-LM git dir: the stage's path and the commit. */
export const stage = (megatronGit: string, ref: string): { readonly dir: string; readonly commit: string } => {
  const staged = spawnSync(join(SCRIPTS, "stage.sh"), [ref], { env: { ...process.env, MEGATRON_GIT: megatronGit }, encoding: "utf8" })
  if (staged.status !== 0) throw new Error(`stage.sh ${ref} failed: ${staged.stderr}`)
  const dir = staged.stdout.trim().split("\n").at(-1)!
  return { dir, commit: readFileSync(join(dir, ".megatron_commit"), "utf8").trim() }
}

/** The harness's CodepointTokenizer as a tokenizer directory, for our coordinator. */
export const codepointTokenizer = (): string => {
  const dir = mkdtempSync(join(tmpdir(), "mcore-bench-tokenizer-"))
  const made = spawnSync(process.execPath, [join(SCRIPTS, "codepoint_tokenizer.mjs"), dir], { encoding: "utf8" })
  if (made.status !== 0) throw new Error(`codepoint_tokenizer.mjs failed: ${made.stderr}`)
  return dir
}

/** A child process whose standard output and error are kept, and read line by line. */
class Child {
  stdout = ""
  stderr = ""
  constructor(readonly process: ChildProcess, readonly name: string) {
    process.stdout!.setEncoding("utf8").on("data", (chunk: string) => (this.stdout += chunk))
    process.stderr!.setEncoding("utf8").on("data", (chunk: string) => (this.stderr += chunk))
  }

  /** The first whole line of `stream` matching `pattern` (its match), within `millis`. */
  async match(stream: "stdout" | "stderr", pattern: RegExp, millis = 30_000): Promise<RegExpMatchArray> {
    const deadline = Date.now() + millis
    for (;;) {
      for (const line of this[stream].split("\n").slice(0, -1)) {
        const found = line.match(pattern)
        if (found !== null) return found
      }
      if (this.process.exitCode !== null || Date.now() > deadline) {
        throw new Error(`${this.name}: no line matching ${pattern}:\n${this.stdout}\n${this.stderr}`)
      }
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
  }

  stop(): Promise<void> {
    if (this.process.exitCode !== null || this.process.signalCode !== null) return Promise.resolve()
    return new Promise((resolve) => {
      this.process.once("close", () => resolve())
      this.process.kill("SIGTERM")
      setTimeout(() => this.process.kill("SIGKILL"), 5_000).unref()
    })
  }
}

const child = (name: string, command: string, args: ReadonlyArray<string>, stdin: "ignore" | "pipe" = "ignore"): Child =>
  new Child(spawn(command, args, { stdio: [stdin, "pipe", "pipe"] }), name)

/** A coordinator running, with its engines dialing it. */
export interface Running {
  readonly address: string
  /**
   * The coordinator process's CPU seconds so far: ours from its `/metrics`
   * (`process_cpu_seconds_total`, microseconds), Megatron's from `/proc` (10 ms ticks).
   */
  readonly coordinatorCpu: () => Promise<number>
  /** The coordinator's process. */
  readonly coordinatorPid: number
  /** The engines' process (two threads of one Python process). */
  readonly enginesPid: number
  readonly stop: () => Promise<void>
}

/** What a subject is started with. */
export interface Setup {
  readonly python: string
  readonly stageDir: string
  readonly tokenizerDir: string
  readonly stepMs: number
}

const engineArgs = (setup: Setup) => ["--engines", "2", "--step-ms", String(setup.stepMs), "--max-requests", "256"]

/** Megatron-LM's coordinator in its own (spawned) process, the engines in the harness's. */
export const megatron = async (setup: Setup): Promise<Running> => {
  const harness = child("run_coordinator.py", setup.python, [join(SCRIPTS, "run_coordinator.py"), "--stage", setup.stageDir, ...engineArgs(setup)])
  try {
    const [address] = await harness.match("stdout", /^tcp:\/\/\S+$/)
    await harness.match("stdout", /^ready$/)
    const [, pid] = await harness.match("stderr", /coordinator pid (\d+)/)
    return {
      address: address!,
      coordinatorCpu: () => Promise.resolve(cpuSeconds(Number(pid))),
      coordinatorPid: Number(pid),
      enginesPid: harness.process.pid!,
      stop: () => harness.stop()
    }
  } catch (error) {
    await harness.stop()
    throw error
  }
}

/** Ours (`mcore coordinator --external-engines 2`), the same engines dialing it. */
export const ours = async (setup: Setup, extraArgs: ReadonlyArray<string> = []): Promise<Running> => {
  const coordinator = child("mcore coordinator", process.execPath, [
    join(ROOT, "packages", "cli", "dist", "main.js"),
    "coordinator",
    "--protocol",
    "main",
    "--listen",
    "tcp://127.0.0.1:0",
    "--external-engines",
    "2",
    "--tokenizer",
    setup.tokenizerDir,
    "--metrics-port",
    "0",
    ...extraArgs
  ])
  let engines: Child | undefined
  try {
    const [address] = await coordinator.match("stdout", /^tcp:\/\/\S+$/)
    const [, metrics] = await coordinator.match("stdout", /^metrics (\S+)$/)
    engines = child("run_coordinator.py --external", setup.python, [
      join(SCRIPTS, "run_coordinator.py"),
      "--stage",
      setup.stageDir,
      "--external",
      address!,
      ...engineArgs(setup)
    ])
    await coordinator.match("stdout", /^coordinator: 2 engine\(s\) registered/)
    const enginesChild = engines
    return {
      address: address!,
      coordinatorCpu: async () => {
        const text = await (await fetch(metrics!)).text()
        return Number(/^process_cpu_seconds_total (\S+)$/m.exec(text)![1])
      },
      coordinatorPid: coordinator.process.pid!,
      enginesPid: engines.process.pid!,
      stop: async () => {
        await enginesChild.stop()
        await coordinator.stop()
      }
    }
  } catch (error) {
    await engines?.stop()
    await coordinator.stop()
    throw error
  }
}

/**
 * Megatron's Python client, a burst of `burst` requests in flight (`bench_py_client.py`), warmed
 * up first; `during` is read just before the burst and just after it (the coordinator's CPU).
 */
export const pythonBurst = async <A>(
  setup: Setup,
  address: string,
  burst: number,
  tokens: number,
  during: () => Promise<A>
): Promise<{ readonly seconds: number; readonly cpuSeconds: number; readonly ok: number; readonly before: A; readonly after: A }> => {
  const client = child("bench_py_client.py", setup.python, [
    join(SCRIPTS, "bench_py_client.py"),
    "--stage",
    setup.stageDir,
    address,
    "--burst",
    String(burst),
    "--tokens",
    String(tokens)
  ], "pipe")
  try {
    await client.match("stdout", /^warm$/, 60_000)
    const before = await during()
    client.process.stdin!.write("go\n")
    const [line] = await client.match("stdout", /^\{.*\}$/, 120_000)
    const after = await during()
    const result = JSON.parse(line!) as { seconds: number; cpu_seconds: number; ok: number }
    return { seconds: result.seconds, cpuSeconds: result.cpu_seconds, ok: result.ok, before, after }
  } finally {
    await client.stop()
  }
}
