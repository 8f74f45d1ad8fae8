/**
 * A coordinator stand-in in a process of its own (so tests can kill it or stop it like a real
 * one): a ROUTER on loopback that answers CONNECT with CONNECT_ACK and every SUBMIT_REQUEST at
 * once with a reply echoing the request id and the prompt frame. Prints its address to the parent
 * over IPC. Run by `ChildCoordinator.ts`; `argv[2]` is the address to bind (default an ephemeral
 * loopback port).
 */
import { Msgpack } from "@mcore-effect/protocol"
import * as Zmq from "zeromq"

const router = new Zmq.Router({ linger: 0, sendHighWaterMark: 0, receiveHighWaterMark: 0 })
await router.bind(process.argv[2] ?? "tcp://127.0.0.1:0")
process.send?.({ address: router.lastEndpoint })
// The parent going away takes this process with it.
process.on("disconnect", () => process.exit(0))

const ack = Msgpack.encode([1])
const keyRequestId = Msgpack.encode("request_id")
const keyEcho = Msgpack.encode("echo")

let queue: Array<Array<Uint8Array>> = []
let sending = false
const send = (frames: Array<Uint8Array>) => {
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

for await (const [identity, head, prompt] of router) {
  const values = Msgpack.decode(head!) as Array<number>
  if (values[0] === 0) send([identity!, ack])
  else if (values[0] === 20) {
    const id = Msgpack.encode(values[1])
    // {"request_id": id, "echo": <the prompt frame as sent>}, built from bytes already encoded.
    const body = Buffer.concat([Buffer.of(0x82), keyRequestId, id, keyEcho, prompt!])
    send([identity!, Msgpack.encode([21, values[1]]), body])
  }
}
