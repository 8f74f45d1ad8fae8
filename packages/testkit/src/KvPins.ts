/**
 * What test engines did with the KV they pinned for prefill/decode hand-off, counted so that a
 * test can assert every pinned block was released exactly once, and never while a decode was
 * still reading it.
 *
 * As Megatron-LM main's engines do it (`disaggregation/inference_state_handoff.py`): a prefill
 * with `do_kv_handoff` pins its prompt's ceil(prompt / block size) KV blocks and says where they
 * are in its reply's `disaggregated_params` (`request_id`, `block_ids`, `kv_meta` with the
 * `resume_tokens`); RELEASE_KV with that request id frees them; a RELEASE_KV for anything else is
 * a no-op there, counted here. The coordinator broadcasts RELEASE_KV to every engine, so an
 * engine's own `foreign` count also holds the releases of its neighbours' pins: {@link sum}
 * counts a release as foreign only when no engine of the coordinator ever pinned its id.
 *
 * @since 0.2.0
 */

/**
 * The hand-off counts of one engine, or of one coordinator's engines together ({@link sum}).
 *
 * @category models
 * @since 0.2.0
 */
export interface Stats {
  /** Prefills whose KV was pinned (`do_kv_handoff`). */
  readonly pinned: number
  /** Pins freed by RELEASE_KV. */
  readonly released: number
  /** RELEASE_KV for a pin released already (the same id again). */
  readonly repeated: number
  /** RELEASE_KV for an id that never held a pin (on this engine; with {@link sum}: on any engine). */
  readonly foreign: number
  /**
   * Releases that came while a decode engine reading the pin had neither produced its first
   * output (partial or final) nor failed: it may still have been reading the blocks.
   */
  readonly releasedBeforeFirstOutput: number
  /** Decode imports that began after their pin had been released (they read freed blocks). */
  readonly importsAfterRelease: number
  /** Blocks pinned, all pins together; `blocksPinned - blocksReleased` are held now. */
  readonly blocksPinned: number
  readonly blocksReleased: number
}

/**
 * One engine's counts, with the ids that {@link sum} needs to tell foreign releases apart.
 *
 * @category models
 * @since 0.2.0
 */
export interface EngineStats extends Stats {
  /** Every request id this engine pinned (held now or released), in pin order. */
  readonly pinnedIds: ReadonlyArray<number>
  /** The id of each RELEASE_KV this engine never pinned, one entry per message, in arrival order. */
  readonly foreignIds: ReadonlyArray<number>
}

/**
 * No pins, no releases.
 *
 * @category constructors
 * @since 0.2.0
 */
export const empty: Stats = {
  pinned: 0,
  released: 0,
  repeated: 0,
  foreign: 0,
  releasedBeforeFirstOutput: 0,
  importsAfterRelease: 0,
  blocksPinned: 0,
  blocksReleased: 0
}

/**
 * The counts of one coordinator's engines together. Every engine sees every RELEASE_KV (the
 * coordinator broadcasts it), so a release is foreign only when no engine pinned its id: each
 * such message is counted once, not once per engine.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { KvPins, TestCluster } from "@mcore-effect/testkit"
 *
 * const program = Effect.gen(function*() {
 *   const cluster = yield* TestCluster.make({ engines: 2 })
 *   // ... prefills with do_kv_handoff, decodes, RELEASE_KV ...
 *   const stats = yield* cluster.kvPins
 *   return KvPins.balanced(stats) // every pin released once, none early, nothing foreign
 * }).pipe(Effect.scoped)
 * ```
 *
 * @category utils
 * @since 0.2.0
 */
export const sum = (engines: ReadonlyArray<EngineStats>): Stats => {
  const pinnedAnywhere = new Set(engines.flatMap((e) => e.pinnedIds))
  // One engine's list holds each foreign message once; the longest list holds every message
  // that reached all of them (an engine that registered later missed the earlier ones).
  let foreign = 0
  for (const e of engines) {
    const count = e.foreignIds.filter((id) => !pinnedAnywhere.has(id)).length
    foreign = Math.max(foreign, count)
  }
  const total = (key: keyof Stats) => engines.reduce((n, e) => n + e[key], 0)
  return {
    pinned: total("pinned"),
    released: total("released"),
    repeated: total("repeated"),
    foreign,
    releasedBeforeFirstOutput: total("releasedBeforeFirstOutput"),
    importsAfterRelease: total("importsAfterRelease"),
    blocksPinned: total("blocksPinned"),
    blocksReleased: total("blocksReleased")
  }
}

/**
 * Whether the hand-offs are clean: every pin released, none twice, none foreign, none while a
 * decode may still have been reading it, no import of freed blocks.
 *
 * @category utils
 * @since 0.2.0
 */
export const balanced = (stats: Stats): boolean =>
  stats.pinned === stats.released && stats.blocksPinned === stats.blocksReleased && stats.repeated === 0 &&
  stats.foreign === 0 && stats.releasedBeforeFirstOutput === 0 && stats.importsAfterRelease === 0
