/**
 * The prefill engines' KV transfer agents by name, process-wide, as a NIXL agent namespace is:
 * a decode engine reads a pin's blocks through the agent its `kv_meta.agent_name` names, without
 * knowing the prefill's request id (Megatron's `kv_meta` carries none; the block ids say which
 * pin). Only the counts travel this way: a test learns from the prefill engine's `KvPins` whether
 * a release came while a decode still read the blocks.
 *
 * @since 0.2.0
 * @internal
 */

/** How a read ends: the decode produced its first output, or it failed (the engine died or closed). */
export type ReadEnd = "output" | "failed"

/** A prefill engine's side of a transfer. */
export interface Agent {
  /**
   * A decode begins reading `blockIds`: returns how to say the read has ended, or `undefined`
   * when this agent holds no pin with those blocks (counted by the agent as a read of freed blocks).
   */
  readonly beginRead: (blockIds: ReadonlyArray<number>) => ((end: ReadEnd) => void) | undefined
}

const agents = new Map<string, Agent>()

/** Makes an agent reachable by name until `unregister`. */
export const register = (name: string, agent: Agent): void => {
  agents.set(name, agent)
}

export const unregister = (name: string): void => {
  agents.delete(name)
}

/** The agent a `kv_meta` names, if it is one of this process's test engines. */
export const lookup = (kvMeta: unknown): Agent | undefined => {
  const name = typeof kvMeta === "object" && kvMeta !== null ? (kvMeta as Record<string, unknown>).agent_name : undefined
  return typeof name === "string" ? agents.get(name) : undefined
}
