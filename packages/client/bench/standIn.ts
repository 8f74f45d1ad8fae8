/**
 * The coordinator stand-in of the client benchmark, run in its own process (forked by
 * `client.bench.ts`). A bare zeromq.js ROUTER, nothing else loaded: it answers CONNECT with
 * CONNECT_ACK and every five-frame SUBMIT_REQUEST at once with ENGINE_REPLY.
 *
 * It shares two cores with the process being measured, so it does as little as it can per
 * request: the reply body is encoded once by the parent (with the protocol's own encoder) and the
 * same bytes go out with every reply; frame 0 of a reply (`pack([21, id])`) is the request's own
 * frame 0 rewritten in place (its first two bytes, `0x94 0x14`, become `0x92 0x15`, and the id's
 * bytes that follow are kept), so nothing is decoded or encoded per request. Megatron-LM main's
 * one-frame SUBMIT (`[20, id, prompt, sp]`, first byte `0x94`, or `[20, id, prompt, sp, mm]` with
 * media, first byte `0x95`) is answered in its own framing,
 * `[21, id, reply]` as one frame: `0x93 0x15`, the id's bytes and the same body, concatenated. Replies leave
 * through one writer loop that drains whatever queued up since its last pass (zeromq.js allows
 * one send in flight per socket).
 *
 * IPC from the parent: `{ op: "init", body, ack }` (base64 of the pre-encoded reply body and
 * CONNECT_ACK), answered with `{ port }` once bound; then `{ id, op }` with op `hold` (queue
 * replies instead of sending them), `count` (how many are held), `release` (send the held
 * replies), `cpu` (this process's CPU time and requests answered); each answered `{ id, ... }`.
 */
import { Router } from "zeromq"

type Message = Array<Buffer>

const CONNECT = 0x00
const SUBMIT_REQUEST = 0x14
const ENGINE_REPLY = 0x15
/** `[21, ` of a one-frame reply (Megatron-LM main): a three-element array, ENGINE_REPLY. */
const MAIN_REPLY = Buffer.from([0x93, ENGINE_REPLY])

/** Bytes taken by the msgpack uint that starts with `first` (the request id), or 0. */
const uintLength = (first: number): number =>
  first < 0x80 ? 1 : first === 0xcc ? 2 : first === 0xcd ? 3 : first === 0xce ? 5 : first === 0xcf ? 9 : 0

const reply = (message: { readonly id?: number } & Record<string, unknown>, fields: Record<string, unknown>) =>
  process.send?.({ id: message.id, ...fields })

const main = async (body: Buffer, ack: Buffer): Promise<void> => {
  const router = new Router({ sendHighWaterMark: 0, receiveHighWaterMark: 0, linger: 0 })
  await router.bind("tcp://127.0.0.1:0")
  const port = Number(/:(\d+)$/.exec(router.lastEndpoint ?? "")?.[1])

  let queue: Array<Message> = []
  let held: Array<Message> = []
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
      batch.length = 0
    }
  }

  const receiver = async (): Promise<void> => {
    for (;;) {
      const frames = await router.receive()
      const identity = frames[0]!
      const head = frames[1]
      if (head === undefined) continue
      if (frames.length === 6 && head[0] === 0x94 && head[1] === SUBMIT_REQUEST) {
        const n = uintLength(head[2]!)
        if (n === 0) continue
        head[0] = 0x92
        head[1] = ENGINE_REPLY
        const message = [identity, head.subarray(0, 2 + n), body]
        answered++
        if (holding) held.push(message)
        else enqueue(message)
      } else if (frames.length === 2 && (head[0] === 0x94 || head[0] === 0x95) && head[1] === SUBMIT_REQUEST) {
        const n = uintLength(head[2]!)
        if (n === 0) continue
        const message = [identity, Buffer.concat([MAIN_REPLY, head.subarray(2, 2 + n), body])]
        answered++
        if (holding) held.push(message)
        else enqueue(message)
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
        return reply(message, { held: held.length })
      case "count":
        return reply(message, { held: held.length })
      case "release": {
        holding = false
        const out = held
        held = []
        for (const m of out) enqueue(m)
        return reply(message, { released: out.length })
      }
      case "cpu": {
        const cpu = process.cpuUsage()
        return reply(message, { cpuUs: cpu.user + cpu.system, answered })
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
process.once("message", (init: { readonly op?: string; readonly body?: string; readonly ack?: string }) => {
  if (init.op !== "init" || init.body === undefined || init.ack === undefined) fail(new Error("expected init"))
  main(Buffer.from(init.body!, "base64"), Buffer.from(init.ack!, "base64")).catch(fail)
})
