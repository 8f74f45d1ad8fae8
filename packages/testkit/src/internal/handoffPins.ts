/**
 * A prefill engine's KV pinned for hand-off, as Megatron-LM main's engine pins it
 * (`inference_state_handoff.py`): a finished `do_kv_handoff` request keeps its prompt's
 * ceil(prompt / block size) blocks (`_prepare_handoff_metadata_batch`) and says where they are in
 * its reply's `disaggregated_params`: its request id, the block ids and `kv_meta` (this engine's
 * transfer agent, and `resume_tokens`: the token sampled at the finishing step plus the
 * `num_speculative_tokens` proposals, `:702`). RELEASE_KV with the request id frees them; any
 * other id is a no-op there (`release_handoff_blocks`), counted here as repeated or foreign. A
 * decode reading the blocks (`TransferAgents`) is tracked until its first output, so that a
 * release during the read is counted.
 *
 * @since 0.2.0
 * @internal
 */
import { randomUUID } from "node:crypto"
import * as Generation from "../Generation.ts"
import * as KvPins from "../KvPins.ts"
import type { EngineConfig } from "./engineConfig.ts"
import type { EngineRequest } from "./engineRequest.ts"
import * as TransferAgents from "./transferAgents.ts"

interface Pin {
  readonly blockIds: ReadonlyArray<number>
  /** Decodes reading the blocks that have not yet produced their first output. */
  openReads: number
}

type Counts = { -readonly [K in keyof KvPins.Stats]: number }

/** @internal */
export class HandoffPins implements TransferAgents.Agent {
  /** This engine's transfer agent, named in every `kv_meta` it hands out. */
  readonly agentName = `testkit-${randomUUID().slice(0, 8)}`
  /** Pins held now, by request id. */
  readonly pinned = new Map<number, Pin>()
  /** Request ids released, in order. */
  readonly released: Array<number> = []
  private readonly everPinned: Array<number> = []
  private readonly foreignIds: Array<number> = []
  private readonly releasedIds = new Set<number>()
  /** Held blocks' owners: a decode names blocks, not requests. */
  private readonly owners = new Map<number, number>()
  private readonly counts: Counts = { ...KvPins.empty }
  private nextBlockId = 0
  private registered = false

  constructor(private readonly config: Pick<EngineConfig, "identity" | "blockSizeTokens" | "numSpeculativeTokens">) {}

  /**
   * Pins a finished prefill's prompt blocks and sets its `disaggregated_params`; a message when
   * there is nothing to pin (an empty prompt: Megatron raises, and its engine dies).
   */
  pin(request: EngineRequest): string | undefined {
    const prompt = request.init.promptTokens
    const blocks = Math.ceil(prompt.length / this.config.blockSizeTokens)
    if (blocks === 0) return "Cannot create a decode-only handoff without the prompt KV state"
    if (!this.registered) {
      TransferAgents.register(this.agentName, this)
      this.registered = true
    }
    const blockIds = Array.from({ length: blocks }, () => this.nextBlockId++)
    for (const id of blockIds) this.owners.set(id, request.requestId)
    this.pinned.set(request.requestId, { blockIds, openReads: 0 })
    this.everPinned.push(request.requestId)
    this.counts.pinned++
    this.counts.blocksPinned += blocks
    request.disaggregatedParams = {
      request_id: request.requestId,
      block_ids: blockIds,
      kv_meta: { agent_name: this.agentName, engine: this.config.identity, resume_tokens: this.resumeTokens(request) }
    }
    return undefined
  }

  /** RELEASE_KV: frees the pin; false when this engine holds none under `requestId`. */
  release(requestId: number): boolean {
    const pin = this.pinned.get(requestId)
    if (pin === undefined) {
      if (this.releasedIds.has(requestId)) this.counts.repeated++
      else {
        this.counts.foreign++
        this.foreignIds.push(requestId)
      }
      return false
    }
    this.pinned.delete(requestId)
    for (const id of pin.blockIds) this.owners.delete(id)
    this.released.push(requestId)
    this.releasedIds.add(requestId)
    this.counts.released++
    this.counts.blocksReleased += pin.blockIds.length
    if (pin.openReads > 0) this.counts.releasedBeforeFirstOutput++
    return true
  }

  beginRead(blockIds: ReadonlyArray<number>): ((end: TransferAgents.ReadEnd) => void) | undefined {
    const owner = blockIds.length === 0 ? undefined : this.owners.get(blockIds[0]!)
    const pin = owner === undefined ? undefined : this.pinned.get(owner)
    if (pin === undefined) {
      this.counts.importsAfterRelease++
      return undefined
    }
    pin.openReads++
    let open = true
    return () => {
      if (!open) return
      open = false
      pin.openReads--
    }
  }

  stats(): KvPins.EngineStats {
    return { ...this.counts, pinnedIds: this.everPinned.slice(), foreignIds: this.foreignIds.slice() }
  }

  /** The engine closed: its agent is gone with it. */
  close(): void {
    if (this.registered) TransferAgents.unregister(this.agentName)
    this.registered = false
  }

  /**
   * The token sampled at the finishing step (the last generated one, or the stream's first when
   * the prefill generated none, as with `num_tokens_to_generate: 0`), then the speculative
   * proposals that follow it.
   */
  private resumeTokens(request: EngineRequest): Array<number> {
    const seed = Generation.seedOf(request.init.promptTokens)
    const at = (i: number) => request.tokenAt(i) ?? Generation.tokenAt(seed, i)
    const g = request.generated
    const position = Math.max(0, g.length - 1)
    const first = g.length > 0 ? g[g.length - 1]! : at(0)
    return [first, ...Array.from({ length: this.config.numSpeculativeTokens }, (_, i) => at(position + 1 + i))]
  }
}
