import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { hello } from "@mcore-effect/protocol"
describe("smoke", () => {
  it.effect("runs", () => Effect.sync(() => expect(hello).toBe(1)))
})
