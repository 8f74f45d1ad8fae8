/**
 * Megatron-LM's prefix routing, as `PrefixTable` and `Routing.chooseMegatron` implement it: the
 * match vector and the score by hand, against Megatron's `_match_vector` and
 * `get_best_data_parallel_rank` (core_v0.17 on); the table's bound under random use.
 */
import { describe, expect, it } from "@effect/vitest"
import * as fc from "fast-check"
import { PrefixTable, Routing } from "../src/index.ts"

describe("PrefixTable", () => {
  it("matches the deepest hash any engine holds, not an unbroken run; recency is the assignment counter", () => {
    const table = new PrefixTable.PrefixTable(100)
    table.assign("a", [1n, 2n]) // counter 1
    table.assign("b", [1n, 2n, 3n, 4n]) // counter 2
    table.assign("a", [9n, 4n]) // counter 3: a holds 4 without 3
    // The deepest of [1, 2, 3, 4] held by anyone is 4 (index 3): a and b both, 4/4 each.
    expect(table.match([1n, 2n, 3n, 4n], ["a", "b", "c"])).toEqual({ match: [1, 1, 0], recency: [3, 2, 0] })
    // [1, 2, 5]: 5 unknown, 2 (index 1) held by a and b.
    expect(table.match([1n, 2n, 5n], ["a", "b"])).toEqual({ match: [2 / 3, 2 / 3], recency: [1, 2] })
    expect(table.match([7n], ["a", "b"])).toEqual({ match: [0, 0], recency: [0, 0] })
    // Only the engines asked about count; one that left is forgotten.
    table.dropEngine("b")
    expect(table.match([3n], ["a", "b"])).toEqual({ match: [0, 0], recency: [0, 0] })
    expect(table.size).toBe(4) // 1, 2, 9, 4 (3 went with b)
  })

  it("holds at most its capacity, forgetting the least recently assigned hash first", () => {
    const table = new PrefixTable.PrefixTable(3)
    table.assign("a", [1n, 2n, 3n])
    table.assign("b", [1n]) // 1 is now the most recent
    table.assign("a", [4n]) // 2 goes
    expect(table.size).toBe(3)
    expect(table.match([2n], ["a"]).match).toEqual([0])
    expect(table.match([1n], ["a", "b"]).match).toEqual([1, 1])
    expect(table.match([3n], ["a"]).match).toEqual([1])
    const none = new PrefixTable.PrefixTable(0)
    none.assign("a", [1n])
    expect(none.size).toBe(0)
  })

  it("property: never over capacity; it forgets but never invents; the last assignment is always routable", () => {
    const engines = ["a", "b", "c"]
    const hashes = fc.array(fc.bigInt({ min: 0n, max: 40n }), { minLength: 1, maxLength: 6 })
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 30 }),
        fc.array(fc.tuple(fc.constantFrom(...engines), hashes), { maxLength: 60 }),
        (capacity, steps) => {
          const bounded = new PrefixTable.PrefixTable(capacity)
          const unbounded = new PrefixTable.PrefixTable(Number.MAX_SAFE_INTEGER)
          for (const [engine, hs] of steps) {
            bounded.assign(engine, hs)
            unbounded.assign(engine, hs)
            expect(bounded.size).toBeLessThanOrEqual(capacity)
          }
          // What it keeps of a hash is what an unbounded table holds of it: same engines, same stamps.
          for (let h = 0n; h <= 40n; h++) {
            const kept = bounded.match([h], engines)
            const all = unbounded.match([h], engines)
            engines.forEach((_, i) => {
              if (kept.match[i]! > 0) expect([all.match[i], all.recency[i]]).toEqual([1, kept.recency[i]])
            })
          }
          // The newest request's prefix leads to its engine (when its hashes fit at all).
          const last = steps.at(-1)
          if (last !== undefined && new Set(last[1]).size <= capacity) {
            expect(bounded.match(last[1], engines).match[engines.indexOf(last[0])]).toBe(1)
          }
        }
      )
    )
  })
})

describe("Routing.chooseMegatron", () => {
  it("alpha * match + (1 - alpha) * free / maxRequests; ties to the most recent, then the lowest index", () => {
    // Megatron's own numbers for this case: scores 0.5 and 0.5 + ... = alpha*2/3 + 0.5*128/256.
    const d = Routing.chooseMegatron({ alpha: 0.5, maxRequests: 256, loads: [0, 128], match: [0, 2 / 3], recency: [0, 7] })
    expect(d.engine).toBe(1)
    expect(d.scores![0]).toBeCloseTo(0.5)
    expect(d.scores![1]).toBeCloseTo(0.5 * (2 / 3) + 0.5 * 0.5)
    // A tie in score goes to the more recent assignment, then to the lower index.
    expect(Routing.chooseMegatron({ alpha: 0.5, maxRequests: 8, loads: [1, 1], match: [1, 1], recency: [3, 5] }).engine).toBe(1)
    expect(Routing.chooseMegatron({ alpha: 0.5, maxRequests: 8, loads: [1, 1], match: [0, 0], recency: [0, 0] }).engine).toBe(0)
    // Load over capacity counts as no free slot, not as negative.
    expect(Routing.chooseMegatron({ alpha: 0, maxRequests: 2, loads: [5, 2], match: [0, 0], recency: [0, 0] }).scores).toEqual([0, 0])
  })
})
