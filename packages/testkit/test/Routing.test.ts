import { describe, expect, it } from "@effect/vitest"
import { Routing } from "../src/index.ts"

describe("Routing", () => {
  it("relative load is measured against the fleet mean, the mean floored at 1", () => {
    expect(Routing.relativeLoad(4, 2)).toBe(1)
    expect(Routing.relativeLoad(0, 2)).toBe(-1)
    expect(Routing.relativeLoad(1, 0.5)).toBe(0.5) // floor: not (1 - 0.5) / 0.5
  })

  it("no hashes, or nobody holding the first, falls back to the least-loaded engine (lowest index on ties)", () => {
    expect(Routing.choose({ beta: 0.5, loads: [2, 1, 1], depths: [0, 0, 0], hashCount: 3 })).toEqual({
      engine: 1,
      reason: "least_loaded",
      scores: null
    })
    expect(Routing.choose({ beta: 0.5, loads: [0, 0], depths: [0, 0], hashCount: 0 }).engine).toBe(0)
  })

  it("a shared prefix goes back to its holder unless the holder is far busier", () => {
    // holder at 1 vs 0: 0.75 vs 0.25
    expect(Routing.choose({ beta: 0.5, loads: [1, 0], depths: [1, 0], hashCount: 1 }).engine).toBe(0)
    // holder at 4 vs 0 (mean 2): 1 - 0.5 * 1 = 0.5 vs 0 + 0.5 * 1 = 0.5: tie, the less-loaded engine wins
    expect(Routing.choose({ beta: 0.5, loads: [4, 0], depths: [1, 0], hashCount: 1 }).engine).toBe(1)
    // holder at 7 vs 1 (mean 4): 1 - 0.5 * 0.75 = 0.625 vs 0 + 0.5 * 0.75 = 0.375
    expect(Routing.choose({ beta: 0.5, loads: [7, 1], depths: [1, 0], hashCount: 1 }).engine).toBe(0)
    // a larger beta gives up affinity sooner
    expect(Routing.choose({ beta: 2, loads: [1, 0], depths: [1, 0], hashCount: 1 }).engine).toBe(1)
  })

  it("scores the longest unbroken run: deeper matches beat shallower ones at equal load", () => {
    const decision = Routing.choose({ beta: 0.5, loads: [1, 1, 1], depths: [1, 3, 2], hashCount: 4 })
    expect(decision.engine).toBe(1)
    expect(decision.scores).toEqual([0.25, 0.75, 0.5])
  })

  it("routingHashes: none for load_balanced, the first for first_prefix_block, all for longest_prefix", () => {
    const hashes = [1n, 2n, 3n]
    expect(Routing.routingHashes("load_balanced", hashes)).toEqual([])
    expect(Routing.routingHashes("first_prefix_block", hashes)).toEqual([1n])
    expect(Routing.routingHashes("longest_prefix", hashes)).toEqual(hashes)
  })

  describe("HashOwnership", () => {
    it("depth counts the unbroken run from the first hash; a gap ends it", () => {
      const owners = new Routing.HashOwnership()
      owners.claim("a", [1n, 2n, 3n])
      owners.claim("b", [1n, 3n])
      expect(owners.depths([1n, 2n, 3n], ["a", "b", "c"])).toEqual([3, 1, 0])
      expect(owners.depths([2n, 3n], ["a", "b"])).toEqual([2, 0])
    })

    it("a hash is held while any request carrying it is in flight", () => {
      const owners = new Routing.HashOwnership()
      owners.claim("a", [1n, 2n])
      owners.claim("a", [1n])
      owners.release("a", [1n, 2n])
      expect(owners.holds("a", 1n)).toBe(true)
      expect(owners.holds("a", 2n)).toBe(false)
      owners.release("a", [1n])
      expect(owners.size).toBe(0)
    })

    it("an engine that leaves holds nothing", () => {
      const owners = new Routing.HashOwnership()
      owners.claim("a", [1n])
      owners.claim("b", [1n, 2n])
      owners.dropEngine("b")
      expect(owners.depths([1n, 2n], ["a", "b"])).toEqual([1, 0])
      expect(owners.size).toBe(1)
    })
  })
})
