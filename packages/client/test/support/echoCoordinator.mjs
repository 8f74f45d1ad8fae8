/**
 * A coordinator stand-in in a process of its own (so tests can kill it or stop it like a real
 * one): a ROUTER on loopback that answers CONNECT with CONNECT_ACK and every SUBMIT_REQUEST at
 * once with a reply echoing the request id and the prompt frame. Plain JavaScript with the few
 * msgpack bytes it needs written by hand, so it starts in a blink. Prints its address to the
 * parent over IPC. Run by `ChildCoordinator.ts`; `argv[2]` is the address to bind (default an
 * ephemeral loopback port).
 */
import { Router } from "zeromq"

const router = new Router({ linger: 0, sendHighWaterMark: 0, receiveHighWaterMark: 0 })
await router.bind(process.argv[2] ?? "tcp://127.0.0.1:0")
process.send?.({ address: router.lastEndpoint })
// The parent going away takes this process with it.
process.on("disconnect", () => process.exit(0))

const CONNECT_ACK = Buffer.of(0x91, 0x01)
const KEY_REQUEST_ID = Buffer.from([0xaa, ...Buffer.from("request_id")])
const KEY_ECHO = Buffer.from([0xa4, ...Buffer.from("echo")])

/** A non-negative integer as msgpack writes it. */
const uint = (n) =>
  n < 0x80 ? Buffer.of(n)
  : n < 0x100 ? Buffer.of(0xcc, n)
  : n < 0x10000 ? Buffer.of(0xcd, n >> 8, n & 0xff)
  : Buffer.of(0xce, n >>> 24, (n >> 16) & 0xff, (n >> 8) & 0xff, n & 0xff)

/** Reads `[header, request_id, ...]` from a metadata frame: [header, id] or undefined. */
const head = (frame) => {
  if (frame.length < 2 || (frame[0] & 0xf0) !== 0x90) return undefined
  const header = frame[1]
  if (header >= 0x80) return undefined
  if (frame.length < 3) return [header, undefined]
  const b = frame[2]
  const id = b < 0x80 ? b
    : b === 0xcc ? frame[3]
    : b === 0xcd ? frame.readUInt16BE(3)
    : b === 0xce ? frame.readUInt32BE(3)
    : undefined
  return [header, id]
}

let queue = []
let sending = false
const send = (frames) => {
  queue.push(frames)
  if (sending) return
  sending = true
  void (async () => {
    while (queue.length > 0) {
      const batch = queue
      queue = []
      for (const message of batch) await router.send(message)
    }
    sending = false
  })()
}

for await (const [identity, metadata, prompt] of router) {
  const [header, id] = head(metadata) ?? []
  if (header === 0) send([identity, CONNECT_ACK])
  else if (header === 20 && id !== undefined && prompt !== undefined) {
    const idBytes = uint(id)
    // {"request_id": id, "echo": <the prompt frame as sent>}
    const body = Buffer.concat([Buffer.of(0x82), KEY_REQUEST_ID, idBytes, KEY_ECHO, prompt])
    send([identity, Buffer.concat([Buffer.of(0x92, 0x15), idBytes]), body])
  }
}
