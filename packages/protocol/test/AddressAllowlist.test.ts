import { describe, expect, it } from "@effect/vitest"
import { Result } from "effect"
import { AddressAllowlist } from "../src/index.ts"

const parsed = (spec: string | ReadonlyArray<string>) => {
  const result = AddressAllowlist.parse(spec)
  if (Result.isFailure(result)) throw new Error(result.failure)
  return result.success
}
const refusal = (spec: string | ReadonlyArray<string>) => {
  const result = AddressAllowlist.parse(spec)
  return Result.isFailure(result) ? result.failure : undefined
}

describe("AddressAllowlist", () => {
  it("admits addresses in its blocks, IPv4-mapped ones too, and nothing else", () => {
    const list = parsed(["10.0.0.0/8, 127.0.0.1", "fd00::/8"])
    expect(list.entries).toEqual(["10.0.0.0/8", "127.0.0.1/32", "fd00::/8"])
    const admits = (address: string | undefined) => AddressAllowlist.admits(list, address)
    expect(["10.255.0.1", "127.0.0.1", "::ffff:127.0.0.1", "fd00::5"].map(admits)).toEqual([true, true, true, true])
    expect(["11.0.0.1", "127.0.0.2", "::1", undefined, "not an address"].map(admits)).toEqual([false, false, false, false, false])
    expect(AddressAllowlist.admits(parsed("0.0.0.0/0"), "203.0.113.9")).toBe(true)
  })

  it("refuses what is not an address or a block, by entry", () => {
    expect(refusal("10.0.0.0/33")).toContain("0 to 32")
    expect(refusal("fd00::/129")).toContain("0 to 128")
    expect(refusal("10.0.0.0/x")).toContain("10.0.0.0/x")
    expect(refusal("coordinator.internal")).toContain("host names")
    expect(refusal("")).toBe("no address or CIDR block given")
    expect(refusal([])).toBe("no address or CIDR block given")
    expect(refusal("127.0.0.1,,10.0.0.1")).toContain("an empty entry")
  })
})
