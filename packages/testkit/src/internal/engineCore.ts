/**
 * A test engine's machinery: one DEALER (ZeroMQ's or in-memory: `EngineSocket`), its reader, a
 * step loop that advances every active request by one token per step, and one writer; and the
 * engine's life: started, registered on every (re)connection, closed. `TestEngine` wraps it as a
 * scoped Effect resource.
 *
 * Behaviour follows Megatron's engine (`engines/dynamic_engine.py` and its coordinator mixin):
 * it registers by sending one empty frame (again after every reconnection, so a restarted
 * coordinator learns it), replies are batched per step as `[21, [[id, needs_detokenize], ...]]`
 * plus one body per entry, partials as `[22, [id, ...]]` plus one body per id, an ABORT finishes
 * the request at the next step with what it has, SET_GENERATION_EPOCH stamps every active
 * request, STOP ends the engine (it sends DISCONNECT and stops), PAUSE outside RUNNING is ignored.
 *
 * It speaks one dialect (`DialectWire`): what the coordinator forwards is read with the dialect's
 * client codec, replies are shaped as that ref's engine shapes them (`ReplyShapes`) and batched
 * in its layout (main and the releases: `[21, [reply, ...]]` in one frame; core_v0.16: each reply
 * in a record, PAUSE and STOP acknowledged, no control states).
 *
 * The parts, one concept each: the state they share `EngineShared`; one message's handling
 * `EngineInbox`; a request's arrival and abort `EngineAdmission`; control signals
 * `engineControl.ts`; the step loop and what it sends `EngineStepper`; the hand-off's pinned KV
 * `HandoffPins` and its imports `HandoffImports`; the faults, the send path through them and the gated reader, shared with the
 * coordinator, `FaultedPeer`.
 *
 * @since 0.1.0
 * @internal
 */
import { FrameSocket, Messages } from "@mcore-effect/protocol"
import type * as Faults from "../Faults.ts"
import { EngineAdmission } from "./engineAdmission.ts"
import type { EngineConfig } from "./engineConfig.ts"
import { EngineInbox } from "./engineInbox.ts"
import { EngineShared } from "./engineShared.ts"
import * as EngineSocket from "./engineSocket.ts"
import { EngineStepper } from "./engineStepper.ts"
import { FaultedPeer } from "./faultedPeer.ts"

/**
 * @internal
 */
export class EngineCore {
  /** What the engine holds and records (read by `TestEngine`'s snapshot). */
  readonly shared: EngineShared
  private readonly writer: FrameSocket.Writer
  private readonly peer: FaultedPeer
  private readonly inbox: EngineInbox
  private readonly stepper: EngineStepper

  /** The socket (ZeroMQ or in-memory: see `EngineSocket`), and how to stop hearing of its connections. */
  private readonly dealer: EngineSocket.Connected["socket"]
  private readonly unobserve: () => void

  private constructor(readonly config: EngineConfig, connector: EngineSocket.Connector) {
    // Register on every (re)connection: a coordinator that restarted has forgotten us.
    const { socket, unobserve } = connector(config, () => {
      this.shared.registrations++
      this.writer.send(Messages.engineRegistration)
    })
    this.dealer = socket
    this.unobserve = unobserve
    this.writer = new FrameSocket.Writer(socket, (error) => {
      this.shared.counters.unsent++
      config.log("Warn", `engine ${config.identity}: send failed: ${String(error)}`)
    })
    this.peer = new FaultedPeer(this.writer, {
      single: config.wire.single,
      addressFrames: 0,
      short: (message) => message.slice(0, -1)
    })
    this.shared = new EngineShared(config, this.writer, this.peer, () => this.close())
    const admission = new EngineAdmission(this.shared)
    this.inbox = new EngineInbox(this.shared, admission)
    this.stepper = new EngineStepper(this.shared, admission)
  }

  /**
   * Connects to the coordinator (a ZeroMQ DEALER unless `connector` says otherwise) and starts
   * the loops. Throws on a malformed address.
   */
  static start(config: EngineConfig, connector: EngineSocket.Connector = EngineSocket.zeromq): EngineCore {
    const core = new EngineCore(config, connector)
    core.startReading()
    void core.stepper.run()
    return core
  }

  get faults(): Faults.Switchboard {
    return this.peer.faults
  }

  onChange(listener: () => void): () => void {
    return this.peer.onChange(listener)
  }

  close(): void {
    const e = this.shared
    if (!e.running && this.dealer.closed) return
    e.running = false
    this.writer.close()
    this.unobserve()
    if (!this.dealer.closed) this.dealer.close()
    // Let loops parked on a hang or between steps see that the engine is gone.
    this.peer.closed()
    // Its agent is gone, and the reads it had not answered end (their pins may be released now).
    e.pins.close()
    e.imports.fail()
    this.stepper.interrupt()
    e.wake()
    this.peer.notify()
  }

  injectFault(fault: Faults.Fault): void {
    this.peer.inject(fault)
  }

  clearFaults(tag?: Faults.FaultTag): void {
    if (this.peer.clear(tag)) this.shared.wake()
    if (this.peer.faults.reorderWindow === 0) this.stepper.flushHeldPartials()
  }

  private startReading(): void {
    const e = this.shared
    this.peer.read(this.dealer, {
      onMessage: (frames) => {
        if (e.running) this.inbox.handle(frames)
      },
      onHandlerError: (error) => {
        e.counters.malformed++
        this.config.log("Error", `engine ${this.config.identity}: dropped a message after an unexpected error: ${String(error)}`)
      },
      onReceiveError: (error) => {
        this.config.log("Error", `engine ${this.config.identity}: receive failed: ${String(error)}`)
      }
    })
  }
}
