/**
 * The coordinator stand-in of the server benchmark, run in its own process (forked by
 * `server.bench.ts`). A bare zeromq.js ROUTER: it answers CONNECT with CONNECT_ACK and every
 * SUBMIT_REQUEST at once, a plain one with ENGINE_REPLY, a streaming one with a partial per
 * generated token (ENGINE_REPLY_PARTIAL, as an engine stepping once per token sends them) and
 * then ENGINE_REPLY (which carries the last token only there, as engines do).
 *
 * It shares the machine's cores with the processes being measured, so it does as little as it can
 * per request: every body is encoded once by the parent (the protocol's own encoder) and reused;
 * a reply's frame 0 (`pack([21, id])`, `pack([22, id])`) is the request's own frame 0 with its
 * first two bytes rewritten and the id's bytes kept; a request is streaming when its frame 0
 * holds the key `streaming` (`0xa9 "streaming"`) followed by `true` (`0xc3`).
 *
 * IPC from the parent: `{ op: "init", reply, partials, ack }` (base64 bodies), answered with
 * `{ port }` once bound; then `{ id, op }` with op `hold` (answer nothing until `release`),
 * `release`, or `cpu` (this process's CPU time and requests answered), each answered `{ id, ... }`.
 */
import { createRequire } from "node:module"

/**
 * zeromq.js, reached through the client package that depends on it (this package does not, and
 * needs it only here), with the few members used here.
 */
interface RouterSocket {
  bind(address: string): Promise<void>
  readonly lastEndpoint: string | null
  send(message: ReadonlyArray<Buffer>): Promise<void>
  receive(): Promise<Array<Buffer>>
}
const { Router } = createRequire(createRequire(import.meta.url).resolve("@mcore-effect/client"))("zeromq") as {
  readonly Router: new(options: Record<string, number>) => RouterSocket
}

type Message = Array<Buffer>

const CONNECT = 0x00
const SUBMIT_REQUEST = 0x14
const ENGINE_REPLY = 0x15
const ENGINE_REPLY_PARTIAL = 0x16
const STREAMING_KEY = Buffer.concat([Buffer.from([0xa9]), Buffer.from("streaming")])

/** Bytes taken by the msgpack uint that starts with `first` (the request id), or 0. */
const uintLength = (first: number): number =>
  first < 0x80 ? 1 : first === 0xcc ? 2 : first === 0xcd ? 3 : first === 0xce ? 5 : first === 0xcf ? 9 : 0

const isStreaming = (head: Buffer): boolean => {
  const at = head.indexOf(STREAMING_KEY)
  return at >= 0 && head[at + STREAMING_KEY.length] === 0xc3
}

const answer = (message: { readonly id?: number }, fields: Record<string, unknown>) => process.send?.({ id: message.id, ...fields })

const main = async (reply: Buffer, partials: ReadonlyArray<Buffer>, ack: Buffer): Promise<void> => {
  const router = new Router({ sendHighWaterMark: 0, receiveHighWaterMark: 0, linger: 0 })
  await router.bind("tcp://127.0.0.1:0")
  const port = Number(/:(\d+)$/.exec(router.lastEndpoint ?? "")?.[1])

  let queue: Array<Message> = []
  let holding = false
  let answered = 0
  let wake: (() => void) | undefined

  const enqueue = (message: Message): void => {
    queue.push(message)
    if (wake !== undefined) {
      const w = wake
      wake = undefined
      w()
    }
  }

  const writer = async (): Promise<void> => {
    for (;;) {
      if (queue.length === 0) await new Promise<void>((resolve) => (wake = resolve))
      const batch = queue
      queue = []
      for (let i = 0; i < batch.length; i++) await router.send(batch[i]!)
    }
  }

  const receiver = async (): Promise<void> => {
    for (;;) {
      const frames = await router.receive()
      const identity = frames[0]!
      const head = frames[1]
      if (head === undefined) continue
      if (frames.length === 6 && head[0] === 0x94 && head[1] === SUBMIT_REQUEST) {
        if (holding) continue
        const n = uintLength(head[2]!)
        if (n === 0) continue
        const streaming = isStreaming(head)
        const id = head.subarray(2, 2 + n)
        answered++
        if (streaming) {
          for (const partial of partials) enqueue([identity, Buffer.concat([Buffer.from([0x92, ENGINE_REPLY_PARTIAL]), id]), partial])
        }
        enqueue([identity, Buffer.concat([Buffer.from([0x92, ENGINE_REPLY]), id]), reply])
      } else if (frames.length === 2 && head.length === 2 && head[0] === 0x91 && head[1] === CONNECT) {
        enqueue([identity, ack])
      }
      // Anything else (an abort, a disconnect) needs no answer here.
    }
  }

  process.on("message", (message: { readonly id?: number; readonly op?: string }) => {
    switch (message.op) {
      case "hold":
        holding = true
        return answer(message, {})
      case "release":
        holding = false
        return answer(message, {})
      case "cpu": {
        const cpu = process.cpuUsage()
        return answer(message, { cpuUs: cpu.user + cpu.system, answered })
      }
    }
  })

  writer().catch(fail)
  receiver().catch(fail)
  process.send?.({ port })
}

const fail = (error: unknown): never => {
  console.error("coordinator stand-in failed:", error)
  process.exit(1)
}

process.on("disconnect", () => process.exit(0))
process.once(
  "message",
  (init: { readonly op?: string; readonly reply?: string; readonly partials?: ReadonlyArray<string>; readonly ack?: string }) => {
    if (init.op !== "init" || init.reply === undefined || init.partials === undefined || init.ack === undefined) {
      fail(new Error("expected init"))
    }
    main(
      Buffer.from(init.reply!, "base64"),
      init.partials!.map((p) => Buffer.from(p, "base64")),
      Buffer.from(init.ack!, "base64")
    ).catch(fail)
  }
)
