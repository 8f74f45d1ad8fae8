/**
 * A decode engine's KV imports, as Megatron-LM main's engine takes a SUBMIT_REQUEST_WITH_KV
 * (`inference_state_handoff.py`, `add_request_with_kv_handoff`). It checks, outside any `try`,
 * so that each violation kills the engine: `resume_tokens` holding `num_speculative_tokens + 1`
 * tokens (`:702`), no log probs (`NotImplementedError`, `:709`), token ids for a prompt (a text
 * prompt fails `torch.tensor`), and ceil(prompt / block size) source blocks. The import is then
 * pending: the request is not in `requests` yet, so an ABORT for it is ignored (`:973`). At the
 * next step it is admitted (`_finalize_kv_handoff_import`): its prompt blocks join the prefix
 * cache (`:956`), the first resume token is its first generated token (counted in
 * `num_tokens_to_generate`, `:995-1014`), and it completes at once when that is all it was to
 * generate, or generates on from there.
 *
 * @since 0.2.0
 * @internal
 */
import type { EngineRequest } from "./engineRequest.ts"
import * as TransferAgents from "./transferAgents.ts"

/** An import begun and not yet admitted. */
interface Pending {
  readonly request: EngineRequest
  readonly resumeToken: number
}

const int = (v: unknown): number => (typeof v === "number" && Number.isSafeInteger(v) ? v : 0)

/**
 * What Megatron's `add_request_with_kv_handoff` raises for this submission, in its order, or
 * `undefined` when it would take it.
 */
export const refusal = (
  prompt: string | ReadonlyArray<number>,
  samplingParams: Readonly<Record<string, unknown>>,
  kvMeta: unknown,
  srcBlockIds: ReadonlyArray<number>,
  config: { readonly blockSizeTokens: number; readonly numSpeculativeTokens: number }
): string | undefined => {
  const resume = resumeTokensOf(kvMeta)
  const expected = config.numSpeculativeTokens + 1
  if (resume.length !== expected) {
    return "RuntimeError: Decode-only handoff requires one sampled token plus the configured MTP proposals: " +
      `expected ${expected}, got ${resume.length}`
  }
  if (samplingParams.return_log_probs === true || int(samplingParams.top_n_logprobs) > 0) {
    return "NotImplementedError: Decode-only handoff does not yet transfer prompt or first-token log probabilities"
  }
  if (typeof prompt === "string") return "TypeError: a decode-side KV import needs token ids; torch.tensor() of a text prompt fails"
  const blocks = Math.ceil(prompt.length / config.blockSizeTokens)
  if (srcBlockIds.length !== blocks) {
    return "RuntimeError: Decode-only handoff requires every prompt KV block, including the partial tail: " +
      `expected ${blocks}, got ${srcBlockIds.length}`
  }
  return undefined
}

/** `kv_meta["resume_tokens"]` as Megatron reads it: `[]` when `kv_meta` is not a mapping. */
export const resumeTokensOf = (kvMeta: unknown): ReadonlyArray<number> => {
  if (typeof kvMeta !== "object" || kvMeta === null || Array.isArray(kvMeta)) return []
  const tokens = (kvMeta as Record<string, unknown>).resume_tokens
  return Array.isArray(tokens) ? tokens.map((t) => Number(t)) : []
}

/** @internal */
export class HandoffImports {
  /** Imports begun, not yet admitted, by request id (arrival order). */
  readonly pending = new Map<number, Pending>()
  /** Admitted or pending imports whose first output has not been produced, and how to tell their prefill. */
  private readonly reads = new Map<number, (end: TransferAgents.ReadEnd) => void>()

  /** Begins an import (its checks passed): the prefill's agent, if a test engine's, learns of the read. */
  begin(request: EngineRequest, kvMeta: unknown, srcBlockIds: ReadonlyArray<number>): void {
    this.pending.set(request.requestId, { request, resumeToken: resumeTokensOf(kvMeta)[0]! })
    const end = TransferAgents.lookup(kvMeta)?.beginRead(srcBlockIds)
    if (end !== undefined) this.reads.set(request.requestId, end)
  }

  /** Whether some import still waits for its first output (the step loop says so only then). */
  get awaitingOutput(): boolean {
    return this.reads.size > 0
  }

  /**
   * Admits every pending import: `cache` takes its prompt blocks, its first token is the resume
   * token. Returns those that are finished already, and those that generate on.
   */
  admit(now: number, cache: (request: EngineRequest) => void): { finished: Array<EngineRequest>; admitted: Array<EngineRequest> } {
    const finished: Array<EngineRequest> = []
    const admitted: Array<EngineRequest> = []
    for (const { request, resumeToken } of this.pending.values()) {
      cache(request)
      if (request.resume(resumeToken, now)) finished.push(request)
      else admitted.push(request)
    }
    this.pending.clear()
    return { finished, admitted }
  }

  /** The request produced output (a partial or its final reply): its prefill's blocks were read. */
  produced(requestId: number): void {
    const end = this.reads.get(requestId)
    if (end === undefined) return
    this.reads.delete(requestId)
    end("output")
  }

  /** The engine is gone: reads not finished end as failures (their blocks may be released now). */
  fail(): void {
    for (const end of this.reads.values()) end("failed")
    this.reads.clear()
    this.pending.clear()
  }
}
