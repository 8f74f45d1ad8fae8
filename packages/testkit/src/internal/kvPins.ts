/**
 * A prefill engine's KV pinned for a peer to pull (`do_kv_handoff`), said where it is in the
 * reply's `disaggregated_params`, and freed by RELEASE_KV.
 *
 * @since 0.2.0
 * @internal
 */
import * as Generation from "../Generation.ts"
import type { EngineConfig, EngineCounters } from "./engineConfig.ts"
import type { EngineRequest } from "./engineRequest.ts"

/** @internal */
export class KvPins {
  readonly pinned = new Map<number, Readonly<Record<string, unknown>>>()
  readonly released: Array<number> = []
  private nextBlockId = 0

  constructor(
    private readonly config: Pick<EngineConfig, "identity" | "blockSizeTokens">,
    private readonly counters: EngineCounters
  ) {}

  /** Pins a prefill request's KV for a peer to pull, and says where it is (`disaggregated_params`). */
  pin(request: EngineRequest): void {
    const tokens = request.init.promptTokens.length + request.generated.length
    const blocks = Math.max(1, Math.ceil(tokens / this.config.blockSizeTokens))
    const blockIds = Array.from({ length: blocks }, () => this.nextBlockId++)
    // The token the prefill sampled, as Megatron main's `kv_meta.resume_tokens` carries it (no MTP).
    const resumeTokens = Generation.tokens(request.init.promptTokens, 1)
    const params = {
      request_id: request.requestId,
      block_ids: blockIds,
      kv_meta: { engine: this.config.identity, resume_tokens: resumeTokens }
    }
    this.pinned.set(request.requestId, params)
    request.disaggregatedParams = params
  }

  /** RELEASE_KV: frees the pin, or counts a release of something not pinned. */
  release(requestId: number): void {
    if (this.pinned.delete(requestId)) this.released.push(requestId)
    else this.counters.unknownRelease++
  }
}
