import { describe, expect, it } from "@effect/vitest"
import { Result } from "effect"
import * as Headers from "../src/Headers.ts"

describe("Headers", () => {
  it("has every header of the protocol with its wire value and category", () => {
    expect(Object.entries(Headers.table).map(([name, h]) => [name, h.value, h.category])).toEqual([
      ["CONNECT", 0, "connection"],
      ["CONNECT_ACK", 1, "connection"],
      ["SUBMIT_REQUEST", 20, "request"],
      ["ENGINE_REPLY", 21, "request"],
      ["ENGINE_REPLY_PARTIAL", 22, "request"],
      ["ABORT_REQUEST", 23, "request"],
      ["SUBMIT_REQUEST_WITH_KV", 24, "request"],
      ["RELEASE_KV", 25, "request"],
      ["SEND_KV", 26, "request"],
      ["PAUSE", 40, "control"],
      ["UNPAUSE", 41, "control"],
      ["SUSPEND", 42, "control"],
      ["RESUME", 43, "control"],
      ["SET_GENERATION_EPOCH", 44, "control"],
      ["STOP", 45, "control"],
      ["START_CUDA_PROFILER", 46, "control"],
      ["STOP_CUDA_PROFILER", 47, "control"],
      ["DISCONNECT", 60, "lifecycle"],
      ["SHUTDOWN", 61, "lifecycle"],
      ["TP_BROADCAST", 80, "transport"],
      ["KV_HANDOFF_COMPLETE", 81, "transport"]
    ])
  })

  it("names and categorises every value, and round-trips through decode", () => {
    for (const [name, { value, category }] of Object.entries(Headers.table)) {
      expect(Headers.nameOf(value)).toBe(name)
      expect(Headers.categoryOf(value)).toBe(category)
      expect(Headers.values[name as Headers.HeaderName]).toBe(value)
      expect(Result.getOrThrow(Headers.decode(value))).toBe(value)
    }
  })

  it.each([2, 19, 27, 99, -1, 1.5, "20", null, 20n, 2 ** 40])("decodes %s as a typed UnknownHeader", (value) => {
    const decoded = Headers.decode(value)
    expect(Result.isFailure(decoded)).toBe(true)
    if (Result.isFailure(decoded)) {
      expect(decoded.failure.reason._tag).toBe("UnknownHeader")
      expect(decoded.failure.message).toMatch(/^UnknownHeader: unknown header/)
    }
  })
})
