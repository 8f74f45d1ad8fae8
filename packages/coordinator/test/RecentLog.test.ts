import { describe, expect, it } from "@effect/vitest"
import { RecentLog } from "../src/internal/recentLog.ts"

describe("RecentLog", () => {
  it("keeps the most recent entries, oldest first, and counts them all", () => {
    const log = new RecentLog<number>(3)
    for (let i = 0; i < 7; i++) log.add(i)
    expect(log.toArray()).toEqual([4, 5, 6])
    expect(log.total).toBe(7)
    const none = new RecentLog<number>(0)
    none.add(1)
    expect([none.toArray(), none.total]).toEqual([[], 1])
  })
})
