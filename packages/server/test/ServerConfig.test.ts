/**
 * The server's options resolve as the client's do: one `Result`, failing with the option's name
 * and why; the defaults are the declared ones.
 */
import { Setting } from "@mcore-effect/client"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Result } from "effect"
import { ServerConfig } from "../src/index.ts"

const problem = (options: ServerConfig.ServerOptions): Setting.Problem | undefined =>
  Result.match(ServerConfig.resolve(options), { onSuccess: () => undefined, onFailure: (p) => p })

describe("ServerConfig", () => {
  it("applies the declared defaults", () => {
    const resolved = Result.getOrThrow(ServerConfig.resolve({ model: "m" }))
    expect(resolved).toMatchObject({
      model: "m",
      host: "127.0.0.1",
      port: 8000,
      apiKey: undefined,
      maxBodyBytes: 4 * 1024 * 1024,
      maxConcurrentRequests: 1024,
      requestTimeoutMillis: 600_000,
      shutdownGraceMillis: 10_000,
      allowedOrigins: [],
      media: { allowedMediaDomains: [], anyMediaDomain: false, maxImageBytes: 20 * 1024 * 1024, maxImagesPerRequest: 16, mediaFetchTimeoutMillis: 5_000 }
    })
    expect(ServerConfig.defaults).toMatchObject({ port: 8000, requestTimeout: Duration.minutes(10), requestTimeoutMillis: 600_000 })
  })

  it("fails with the option's name and why", () => {
    expect(problem({ model: "m", port: 70000 })).toEqual({ name: "port", why: "must be an integer 0..65535, got 70000" })
    expect(problem({ model: "m", maxConcurrentRequests: 0 })).toEqual({ name: "maxConcurrentRequests", why: "must be an integer >= 1, got 0" })
    expect(problem({ model: "m", requestTimeout: 0 })).toEqual({ name: "requestTimeout", why: "must be positive" })
    expect(problem({ model: "m", shutdownGracePeriod: "soon" as never })).toEqual({ name: "shutdownGracePeriod", why: "not a duration: \"soon\"" })
    expect(problem({ model: "m", toolCallParser: "nope" })).toMatchObject({ name: "toolCallParser", why: expect.stringContaining("\"nope\" is not one of hermes") })
    expect(problem({ model: "m", allowedMediaDomains: ["https://x.example/"] })).toEqual({
      name: "allowedMediaDomains",
      why: "\"https://x.example/\" is not a host name (no scheme, port or path)"
    })
    expect(problem({ model: "" })).toEqual({ name: "model", why: "must not be empty" })
  })

  it("resolves names to what they stand for, and normalizes the media hosts", () => {
    const resolved = Result.getOrThrow(ServerConfig.resolve({ model: "m", toolCallParser: "hermes", apiKey: "k", allowedMediaDomains: ["Images.Example.", "*"] }))
    expect(resolved.toolCallParser).toBeDefined()
    expect(resolved.apiKey?.toString()).not.toContain("k")
    expect(resolved.media).toMatchObject({ allowedMediaDomains: ["images.example"], anyMediaDomain: true })
  })
})
