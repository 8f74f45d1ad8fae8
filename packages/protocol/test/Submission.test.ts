import { describe, expect, it } from "@effect/vitest"
import { Result } from "effect"
import { BlockHashes, Media, Messages, Msgpack, PrefixHashing, Submission } from "../src/index.ts"

const prefixConfig = { blockSizeTokens: 4, prefixCachingPolicy: "longest_prefix" } as const

const reasonOf = <A>(result: Result.Result<A, { readonly reason: { readonly _tag: string } }>) =>
  Result.isFailure(result) ? result.failure.reason : undefined

describe("PrefixHashing.hashesFor: whether to hash", () => {
  const tokens = [1, 2, 3, 4, 5, 6, 7, 8, 9]

  it("hashes a token prompt when the block size is set and the policy routes on prefixes", () => {
    for (const policy of ["longest_prefix", "first_prefix_block"] as const) {
      const hashes = PrefixHashing.hashesFor(tokens, { blockSizeTokens: 4, prefixCachingPolicy: policy })
      expect(hashes).toEqual(BlockHashes.blockHashes(tokens, 4))
      expect(hashes?.length).toBe(2)
    }
  })

  it("says [] (hashed, shorter than a block), not null, for a short token prompt", () => {
    const hashes = PrefixHashing.hashesFor([1, 2, 3], prefixConfig)
    expect(hashes).not.toBeNull()
    expect(hashes?.length).toBe(0)
  })

  it("says null (did not hash) without a block size, without a prefix policy, or for text", () => {
    expect(PrefixHashing.hashesFor(tokens, {})).toBeNull()
    expect(PrefixHashing.hashesFor(tokens, { blockSizeTokens: 4 })).toBeNull()
    expect(PrefixHashing.hashesFor(tokens, { prefixCachingPolicy: "longest_prefix" })).toBeNull()
    expect(PrefixHashing.hashesFor(tokens, { blockSizeTokens: 4, prefixCachingPolicy: "load_balanced" })).toBeNull()
    expect(PrefixHashing.hashesFor("a text prompt", prefixConfig)).toBeNull()
  })

  it("salts with the media cache key", () => {
    const key = "ab".repeat(32)
    expect(PrefixHashing.hashesFor(tokens, prefixConfig, key)).toEqual(BlockHashes.blockHashes(tokens, 4, key))
    expect(PrefixHashing.hashesFor(tokens, prefixConfig, key)).not.toEqual(PrefixHashing.hashesFor(tokens, prefixConfig))
  })
})

describe("Submission.submitRequest", () => {
  it("builds the five frames: params with defaults, hashes, nil media and offload", () => {
    const message = Result.getOrThrow(
      Submission.submitRequest({ requestId: 5, prompt: new Int32Array([1, 2, 3, 4, 5]) }, prefixConfig)
    )
    const frames = Result.getOrThrow(Messages.Client.encode(message))
    expect(frames.length).toBe(5)
    const head = Msgpack.decode(frames[0]!) as Array<unknown>
    expect(head[0]).toBe(20)
    expect(head[1]).toBe(5)
    expect(head[3]).toBeNull()
    expect(Msgpack.decode(frames[1]!)).toEqual([1, 2, 3, 4, 5])
    expect(frames[1]![0]).toBe(0x95) // an int array, not bin
    expect((Msgpack.decode(frames[2]!) as Array<unknown>).length).toBe(1)
    expect(Array.from(frames[3]!)).toEqual([0xc0])
    expect(Array.from(frames[4]!)).toEqual([0xc0])
  })

  it("forces streaming for stream submissions without touching the caller's params", () => {
    const input = { num_tokens_to_generate: 3 }
    const message = Result.getOrThrow(Submission.submitRequest({ requestId: 0, prompt: "x", samplingParams: input, streaming: true }, {}))
    expect(message.samplingParams.streaming).toBe(true)
    expect(input).toEqual({ num_tokens_to_generate: 3 })
  })

  it("carries media: descriptor in frame 0, the exact hashed bytes as frame 3, hashes salted by its key", () => {
    const image = new Uint8Array([1, 2, 3])
    const message = Result.getOrThrow(
      Submission.submitRequest({ requestId: 1, prompt: [1, 2, 3, 4], multiModalData: { image } }, prefixConfig)
    )
    const prepared = Result.getOrThrow(Media.prepare({ image }))!
    expect(message.mediaDescriptor).toEqual({ media_cache_key: prepared.cacheKey, modalities: { image: 1 } })
    const frames = Result.getOrThrow(Messages.Client.encode(message))
    expect(Buffer.from(frames[3]!).equals(Buffer.from(prepared.frame))).toBe(true)
    expect(Media.mediaCacheKey(frames[3]!)).toBe(prepared.cacheKey)
    expect(message.blockHashes).toEqual(BlockHashes.blockHashes([1, 2, 3, 4], 4, prepared.cacheKey))
  })

  it("fails typed before any frame exists: bad prompt, bad params, unsupported modality", () => {
    expect(reasonOf(Submission.submitRequest({ requestId: 0, prompt: [1, -2] }, {}))?._tag).toBe("InvalidPrompt")
    expect(reasonOf(Submission.submitRequest({ requestId: 0, prompt: { text: "x" } }, {}))?._tag).toBe("InvalidPrompt")
    expect(reasonOf(Submission.submitRequest({ requestId: 0, prompt: "" }, {}))?._tag).toBe("InvalidPrompt")
    expect(reasonOf(Submission.submitRequest({ requestId: 0, prompt: [] }, {}))?._tag).toBe("InvalidPrompt")
    expect(reasonOf(Submission.submitRequestWithKv({ requestId: 0, prompt: [], kvMeta: {}, srcBlockIds: [] }))?._tag).toBe(
      "InvalidPrompt"
    )
    expect(
      reasonOf(Submission.submitRequest({ requestId: 0, prompt: "x", samplingParams: { top_p: 2 } }, {}))?._tag
    ).toBe("InvalidSamplingParams")
    expect(
      reasonOf(
        Submission.submitRequest(
          { requestId: 0, prompt: "x", multiModalData: { audio: new Uint8Array([1]) } as Media.MultiModalData },
          {}
        )
      )
    ).toMatchObject({ _tag: "UnsupportedModality", modality: "audio" })
  })

  it("offload params that msgpack cannot hold fail at encode, as NotEncodable", () => {
    for (const offloadParams of [() => 1, Symbol("x"), { when: new Date() }, 2n ** 70n]) {
      const message = Result.getOrThrow(Submission.submitRequest({ requestId: 0, prompt: "x", offloadParams }, {}))
      expect(reasonOf(Messages.Client.encode(message))?._tag).toBe("NotEncodable")
    }
  })
})

describe("Submission.submitRequestWithKv", () => {
  it("builds the three frames with kv_meta in frame 0 and the block ids as a body", () => {
    const message = Result.getOrThrow(
      Submission.submitRequestWithKv({ requestId: 3, prompt: [1, 2], kvMeta: { agent: "prefill-0" }, srcBlockIds: [7, 8] })
    )
    const frames = Result.getOrThrow(Messages.Client.encode(message))
    expect(frames.length).toBe(3)
    expect((Msgpack.decode(frames[0]!) as Array<unknown>)[3]).toEqual({ agent: "prefill-0" })
    expect(Msgpack.decode(frames[2]!)).toEqual([7, 8])
  })

  it("refuses a kv_meta that is not a map and block ids that are not ids", () => {
    expect(
      reasonOf(Submission.submitRequestWithKv({ requestId: 0, prompt: [1], kvMeta: [] as never, srcBlockIds: [] }))
    ).toMatchObject({ _tag: "InvalidKvHandoff", field: "kv_meta" })
    expect(
      reasonOf(Submission.submitRequestWithKv({ requestId: 0, prompt: [1], kvMeta: {}, srcBlockIds: [1.5] }))
    ).toMatchObject({ _tag: "InvalidKvHandoff", field: "src_block_ids" })
  })
})
