/**
 * The fleet's `prefix` router on its own, members given as loads: conversations that start short
 * stay where they started while the load bound holds (a fast-check property over random
 * conversations, loads and traffic between their turns), a routing key places the same way in
 * two routers that share nothing, and what must not follow a short prompt does not.
 */
import { describe, expect, it } from "@effect/vitest"
import * as fc from "fast-check"
import { type Candidate, MIN_SHORT_TOKENS, Router } from "../src/internal/fleet/router.ts"

const BLOCK = 64

const routerOver = (members: number, loadSlack = 0): Router =>
  new Router({
    policy: "prefix",
    addresses: Array.from({ length: members }, (_, i) => `tcp://127.0.0.1:${7000 + i}`),
    blockSizeTokens: BLOCK,
    maxBlocks: 256,
    loadFactor: 1.25,
    loadSlack,
    tableCapacity: 65_536
  })

const candidates = (loads: ReadonlyArray<number>): Array<Candidate> => loads.map((load) => ({ load, routable: true }))

/** Whether member `i` is within the load bound for a new request (the router's own test). */
const fits = (loads: ReadonlyArray<number>, i: number, slack: number): boolean => {
  const total = loads.reduce((a, b) => a + b, 0)
  return loads[i]! + 1 <= Math.ceil(1.25 * (total + 1) / loads.length) + slack
}

/** A deterministic token stream for a seed (the conversations' and the other traffic's words). */
const words = (seed: number, count: number): Array<number> => {
  let x = (seed * 2654435761) >>> 0 || 1
  return Array.from({ length: count }, () => {
    x ^= x << 13
    x >>>= 0
    x ^= x >>> 17
    x ^= x << 5
    x >>>= 0
    return 1 + (x % 50_000)
  })
}

/** A chat template's opening, the same for every conversation: what new short prompts share. */
const OPENING = [151644, 872, 198]

const turn = fc.record({
  /** The answer and the next user message, appended to the previous prompt. */
  added: fc.integer({ min: 1, max: 120 }),
  loads: fc.array(fc.integer({ min: 0, max: 12 }), { minLength: 6, maxLength: 6 }),
  /** Other prompts placed between this turn and the previous one. */
  between: fc.array(fc.record({ seed: fc.integer({ min: 1, max: 1 << 30 }), length: fc.integer({ min: 1, max: 300 }) }), {
    maxLength: 4
  })
})

describe("Fleet router", () => {
  it("property: a conversation's turns stay on its member while that member is within the load bound", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 2, max: 6 }),
        fc.integer({ min: 0, max: 6 }),
        fc.integer({ min: 1, max: 1 << 30 }),
        fc.integer({ min: MIN_SHORT_TOKENS - OPENING.length, max: 150 }),
        fc.boolean(),
        fc.array(fc.integer({ min: 0, max: 12 }), { minLength: 6, maxLength: 6 }),
        fc.array(turn, { minLength: 1, maxLength: 8 }),
        (n, slack, seed, firstLength, asText, firstLoads, turns) => {
          const router = routerOver(n, slack)
          const stream = [...OPENING, ...words(seed, firstLength + turns.reduce((a, t) => a + t.added, 0))]
          // As text: four characters per token (the router reads text in blocks of four characters a token).
          const promptOf = (length: number) => {
            const tokens = stream.slice(0, length)
            return asText ? tokens.map((t) => String.fromCharCode(0x4e00 + (t % 20_000)).repeat(4)).join("") : tokens
          }
          let length = OPENING.length + firstLength
          let member = router.pick(promptOf(length), candidates(firstLoads.slice(0, n)), undefined)
          expect(member).toBeGreaterThanOrEqual(0)
          for (const t of turns) {
            for (const other of t.between) {
              router.pick(words(other.seed, other.length), candidates(t.loads.slice(0, n)), undefined)
            }
            length += t.added
            const loads = t.loads.slice(0, n)
            const next = router.pick(promptOf(length), candidates(loads), undefined)
            // Within the bound it stays; over it, it moves to a member within the bound.
            if (fits(loads, member, slack)) expect(next).toBe(member)
            else expect(fits(loads, next, slack)).toBe(true)
            member = next
          }
        }
      ),
      { numRuns: 300 }
    )
  })

  it("a routing key places alike in two routers that share nothing, whatever either placed before", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 2, max: 6 }),
        fc.string({ minLength: 1, maxLength: 40 }),
        fc.array(fc.integer({ min: 1, max: 1 << 30 }), { maxLength: 20 }),
        (n, key, history) => {
          const a = routerOver(n)
          const b = routerOver(n)
          const idle = candidates(Array.from({ length: n }, () => 0))
          for (const seed of history) a.pick(words(seed, 100), idle, undefined)
          const one = a.pick(words(1, 20), idle, undefined, key)
          const other = b.pick(words(2, 300), idle, undefined, key)
          expect(one).toBe(other)
          // Over its bound (twice the prompt's: 2 x 1.25 x 51 / n < 51 from 3 members on), the
          // next in the key's order: never the loaded one.
          const loaded = Array.from({ length: n }, (_, i) => (i === one ? 50 : 0))
          const again = b.pick(words(3, 10), candidates(loaded), undefined, key)
          if (n >= 3) expect(again).not.toBe(one)
          else expect(again).toBe(one)
        }
      ),
      { numRuns: 200 }
    )
  })

  it("keys spread over the members", () => {
    const router = routerOver(3)
    const idle = candidates([0, 0, 0])
    const counts = [0, 0, 0]
    for (let i = 0; i < 3000; i++) counts[router.pick([1, 2, 3], idle, undefined, `session-${i}`)]!++
    for (const c of counts) expect(c).toBeGreaterThan(850)
  })

  it("a prompt of fewer than 8 tokens is not followed; distinct short prompts sharing a template's opening do not follow each other", () => {
    const router = routerOver(3)
    // A 4-token prompt placed on member 2 (the others loaded).
    expect(router.pick([...OPENING, 9], candidates([5, 5, 0]), undefined)).toBe(2)
    // A longer prompt beginning with it, all idle: the least loaded (0), not 2.
    expect(router.pick([...OPENING, 9, ...words(5, 20)], candidates([0, 0, 0]), undefined)).toBe(0)
    // Two distinct conversations' first turns: the second is not placed by the first's opening.
    expect(router.pick([...OPENING, ...words(6, 20)], candidates([4, 0, 4]), undefined)).toBe(1)
    expect(router.pick([...OPENING, ...words(7, 20)], candidates([0, 0, 0]), undefined)).toBe(0)
    // Each one's next turn follows it.
    expect(router.pick([...OPENING, ...words(6, 20), ...words(8, 30)], candidates([0, 0, 0]), undefined)).toBe(1)
    expect(router.pick([...OPENING, ...words(7, 20), ...words(9, 70)], candidates([0, 1, 1]), undefined)).toBe(0)
  })

  it("a longer prefix of its own wins over the short prompt it began with", () => {
    const router = routerOver(3)
    const first = [...OPENING, ...words(11, 30)]
    expect(router.pick(first, candidates([0, 3, 3]), undefined)).toBe(0)
    // Moved by load at its second turn (a block and more): that block now names where it went.
    const second = [...first, ...words(12, 60)]
    const moved = router.pick(second, candidates([9, 0, 3]), undefined)
    expect(moved).not.toBe(0)
    // Its third turn follows the block there, not its first turn's short key to 0.
    expect(router.pick([...second, ...words(13, 40)], candidates([0, 0, 0]), undefined)).toBe(moved)
  })
})
