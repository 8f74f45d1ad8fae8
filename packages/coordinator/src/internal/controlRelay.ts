/**
 * The coordinator's control signals: the state machine of PAUSE / UNPAUSE / SUSPEND /
 * RESUME / STOP (`ControlState`; a signal not allowed in the state is dropped with a warning, a
 * redundant one silently), each allowed one broadcast to every engine. core_v0.16's coordinator
 * has no states: it forwards every signal, relays its engines' PAUSE_ACK / STOP_ACK once all have
 * acked, ends after the STOP_ACKs, and dies of a second ack from one engine (a second PAUSE
 * before UNPAUSE), as Megatron's does.
 *
 * @since 0.2.0
 * @internal
 */
import { Headers, Msgpack } from "@mcore-effect/protocol"
import * as ControlState from "../ControlState.ts"
import type { CoordinatorState } from "./coordinatorState.ts"
import { packHeader, showIdentity } from "./wireFrames.ts"

const H = Headers.values

/** `[h, engine_identity]`: core_v0.16's relay of its engines' acknowledgements to clients. */
const writeAck = (header: number, identity: Uint8Array): Uint8Array => Msgpack.encode([header, new Uint8Array(identity)])

/** What an engine's acknowledgement leaves the coordinator to do. */
export type AckOutcome = "continue" | "end" | "die"

/** @internal */
export class ControlRelay {
  state: ControlState.State = "RUNNING"
  /** core_v0.16: the engines that acked the standing PAUSE, and the STOP (by identity key). */
  private readonly pauseAcks = new Set<string>()
  private readonly stopAcks = new Set<string>()

  constructor(private readonly s: CoordinatorState) {}

  /** A control signal (its metadata already checked by the codec): a state transition, broadcast. */
  signal(header: Headers.Header, metadataFrame: Uint8Array): void {
    const s = this.s
    if (!s.wire.controlStates) {
      // core_v0.16: forwarded whatever the state; UNPAUSE forgets the PAUSE acks.
      if (header === H.UNPAUSE) this.pauseAcks.clear()
      return s.pool.broadcast(header, metadataFrame)
    }
    const signal = ControlState.signalOf(header)!
    const outcome = ControlState.apply(this.state, signal)
    if (outcome._tag === "Idempotent") {
      s.counters.controlIdempotent++
      return
    }
    if (outcome._tag === "Rejected") {
      s.counters.controlRejected++
      s.config.log("Warn", `coordinator: ignoring ${signal} in state ${this.state}`)
      return
    }
    s.pool.broadcast(header, metadataFrame)
    this.state = outcome.next
  }

  /**
   * core_v0.16's PAUSE_ACK / STOP_ACK from an engine. Once every engine has acked, `[h, identity]`
   * (the last engine's) to every client that connected and `[h]` to every engine; after the
   * STOP_ACKs the loop ends. An engine acking twice (a second PAUSE before an UNPAUSE) fails
   * Megatron's `assert sender_identity not in self.data_parallel_pause_acks`: that coordinator
   * dies, and so does this one.
   */
  ack(identity: Buffer, key: string, signal: "pause" | "stop"): AckOutcome {
    const s = this.s
    const acks = signal === "pause" ? this.pauseAcks : this.stopAcks
    const name = signal === "pause" ? "PAUSE_ACK" : "STOP_ACK"
    if (acks.has(key)) {
      s.counters.internalErrors++
      s.config.log("Error", `coordinator: a second ${name} from engine ${showIdentity(identity)}: Megatron-LM core_v0.16's coordinator dies of it (AssertionError); so does this one`)
      return "die"
    }
    acks.add(key)
    if (acks.size < s.pool.size) return "continue"
    const header = (signal === "pause" ? s.wire.PAUSE_ACK : s.wire.STOP_ACK)!
    const notice = writeAck(header, identity)
    for (const client of s.knownClients) s.writer.send([Buffer.from(client, "latin1"), notice])
    for (const engine of s.pool.engines) s.pool.deliver(engine, [packHeader(header)], signal === "pause" ? H.PAUSE_ACK : H.STOP_ACK)
    return signal === "stop" ? "end" : "continue"
  }
}
