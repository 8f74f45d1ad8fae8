/**
 * The coordinator's engines: the ones registered, ordered by identity as Megatron ranks
 * them (so routing ties do not depend on who connected first), the ones removed (whose late
 * replies are still delivered), and the one way a message reaches an engine, recorded for
 * inspection. `requestDispatch.ts` routes over it.
 *
 * @since 0.2.0
 * @internal
 */
import type { FrameSocket, Headers } from "@mcore-effect/protocol"
import type { CoordinatorConfig } from "./coordinatorConfig.ts"
import type { Delivery, EngineEntry } from "./coordinatorRecords.ts"
import { RecentLog } from "./recentLog.ts"
import { identityKey, showIdentity } from "./wireFrames.ts"

/**
 * What to do with a submission its engine turned out to be unreachable for (`EHOSTUNREACH`):
 * route it to another engine, as Megatron-LM main's coordinator does (`handlers.py:129-132`:
 * `_send_to_engine` fails, the engine is removed, the next best rank is tried). Megatron's send
 * fails synchronously; this socket's only after the send, so the request goes on from there.
 *
 * @internal
 */
export type Reroute = () => void

/** @internal */
export class EnginePool {
  /** Registered, ordered by identity. */
  engines: ReadonlyArray<EngineEntry> = []
  private readonly byKey = new Map<string, EngineEntry>()
  private readonly removed = new Set<string>()

  constructor(
    private readonly writer: FrameSocket.Writer<Reroute | undefined>,
    private readonly config: Pick<CoordinatorConfig, "log" | "recordLimit">,
    private readonly nameOf: (header: number) => Headers.HeaderName,
    /** What else goes with an engine that left: what routing knew of it, what it held in flight. */
    private readonly forget: (key: string, name: string, why: string) => void
  ) {}

  get size(): number {
    return this.engines.length
  }

  /** Registered now. */
  has(key: string): boolean {
    return this.byKey.has(key)
  }

  /** Registered now or once: its replies are still an engine's. */
  known(key: string): boolean {
    return this.byKey.has(key) || this.removed.has(key)
  }

  /** Registers an engine; false when it already is. */
  register(identity: Buffer): boolean {
    const key = identityKey(identity)
    if (this.byKey.has(key)) return false
    const entry: EngineEntry = {
      identity: Buffer.from(identity),
      key,
      name: showIdentity(identity),
      load: 0,
      routed: 0,
      received: new RecentLog(this.config.recordLimit)
    }
    this.byKey.set(key, entry)
    this.removed.delete(key)
    this.engines = [...this.engines, entry].sort((a, b) => Buffer.compare(a.identity, b.identity))
    this.config.log("Info", `coordinator: engine ${entry.name} registered (${this.engines.length} engine(s))`)
    return true
  }

  /** Takes an engine out of routing (its hashes with it). */
  remove(key: string, why: string): void {
    const entry = this.byKey.get(key)
    if (entry === undefined) return
    this.byKey.delete(key)
    this.removed.add(key)
    this.engines = this.engines.filter((e) => e !== entry)
    this.forget(key, entry.name, why)
    this.config.log("Warn", `coordinator: engine ${entry.name} removed: ${why} (${this.engines.length} left)`)
  }

  /** Sends a message to one engine, and records it (or counts it, with no record kept). */
  deliver(
    engine: EngineEntry,
    frames: Array<Uint8Array>,
    header: number,
    requestId?: number,
    clientRequestId?: number,
    client?: Uint8Array,
    reroute?: Reroute
  ): void {
    if (this.config.recordLimit > 0) {
      engine.received.add({
        header,
        name: this.nameOf(header),
        requestId,
        clientRequestId,
        client: client === undefined ? undefined : showIdentity(client),
        frames
      })
    } else engine.received.total++
    this.writer.send([engine.identity, ...frames], reroute)
  }

  /** Sends one frame to every engine. */
  broadcast(header: number, frame: Uint8Array): void {
    for (const engine of this.engines) this.deliver(engine, [frame], header)
  }

  /** What a snapshot shows of each engine. */
  views(): ReadonlyArray<{
    readonly identity: string
    readonly load: number
    readonly routedTotal: number
    readonly received: ReadonlyArray<Delivery>
    readonly receivedTotal: number
  }> {
    return this.engines.map((e) => ({
      identity: e.name,
      load: e.load,
      routedTotal: e.routed,
      received: e.received.toArray(),
      receivedTotal: e.received.total
    }))
  }
}
