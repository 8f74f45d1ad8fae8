/**
 * The baseline of the client benchmark, written plainly: a bare zeromq.js DEALER and msgpackr,
 * no Effect. It does what the client does on its hot path and nothing more: five frames per
 * SUBMIT_REQUEST through one writer that awaits each `send`, replies matched by id in a
 * `for await` receive loop, one Promise per request, `latency` added to the decoded reply.
 */
import { Packr } from "msgpackr"
import { Dealer } from "zeromq"
import type { Subject } from "./measured.ts"

/**
 * Records off (a Python peer cannot read them). 64-bit integers the plain way: they decode as a
 * number when exact and as a bigint otherwise ("auto"); an id that outgrew uint32 goes out as a
 * bigint, since msgpackr would write a whole number above 2^32 - 1 as a float64. (Token ids and
 * the ids of this run stay below 2^32.)
 */
const packr = new Packr({ useRecords: false, mapsAsObjects: true, int64AsType: "auto" as "bigint" })

const CONNECT = 0
const CONNECT_ACK = 1
const SUBMIT_REQUEST = 20
const ENGINE_REPLY = 21

interface Pending {
  readonly resolve: (reply: Record<string, unknown>) => void
  readonly submittedAt: number
}

export const make = async (
  address: string,
  prompt: ReadonlyArray<number>,
  samplingParams: Record<string, unknown>
): Promise<Subject> => {
  const socket = new Dealer({ sendHighWaterMark: 0, receiveHighWaterMark: 0, linger: 0 })
  socket.connect(address)
  await socket.send(packr.pack([CONNECT]))
  const [ack] = await socket.receive()
  const decodedAck = packr.unpack(ack!) as Array<number>
  if (decodedAck[0] !== CONNECT_ACK) throw new Error(`expected CONNECT_ACK, got ${JSON.stringify(decodedAck)}`)

  const pending = new Map<number, Pending>()
  let nextId = 0
  let outbox: Array<Array<Uint8Array>> = []
  let wake: (() => void) | undefined

  const writer = async (): Promise<void> => {
    for (;;) {
      if (outbox.length === 0) await new Promise<void>((resolve) => (wake = resolve))
      const batch = outbox
      outbox = []
      for (const frames of batch) await socket.send(frames)
      batch.length = 0 // the loop's frame would otherwise keep the last batch's frames alive
    }
  }

  const listener = async (): Promise<void> => {
    for await (const [head, body] of socket) {
      const [header, id] = packr.unpack(head!) as [number, number]
      if (header !== ENGINE_REPLY) continue
      const entry = pending.get(id)
      if (entry === undefined) continue
      pending.delete(id)
      const reply = packr.unpack(body!) as Record<string, unknown>
      reply.latency = (performance.now() - entry.submittedAt) / 1000
      entry.resolve(reply)
    }
  }

  const ignoreClosed = (error: unknown) => {
    if (!socket.closed) throw error
  }
  writer().catch(ignoreClosed)
  listener().catch(ignoreClosed)

  const submit = (): Promise<Record<string, unknown>> =>
    new Promise((resolve) => {
      const id = nextId++
      pending.set(id, { resolve, submittedAt: performance.now() })
      outbox.push([
        packr.pack([SUBMIT_REQUEST, id < 2 ** 32 ? id : BigInt(id), samplingParams, null]),
        packr.pack(prompt),
        packr.pack(null),
        packr.pack(null),
        packr.pack(null)
      ])
      if (wake !== undefined) {
        const w = wake
        wake = undefined
        w()
      }
    })

  return {
    // Each reply is dropped once its caller has it, as an application consuming replies would; a
    // `Promise.all` would keep all n decoded replies (about half a gigabyte) alive to the end.
    burst: (n) =>
      new Promise<void>((resolve) => {
        let remaining = n
        const done = () => {
          if (--remaining === 0) resolve()
        }
        for (let i = 0; i < n; i++) submit().then(done)
      }),
    sequential: async (n) => {
      const times = new Array<number>(n)
      for (let i = 0; i < n; i++) {
        const start = performance.now()
        await submit()
        times[i] = performance.now() - start
      }
      return times
    },
    close: async () => {
      socket.close()
    }
  }
}
