/**
 * The pieces of chat images that need no server: `data:` URLs decoded or refused with a reason,
 * image signatures, and the address guard's verdict on every range it refuses (and on public
 * addresses, which it must let through), IPv4-mapped forms included.
 */
import { describe, expect, it } from "@effect/vitest"
import { Result } from "effect"
import { readFileSync } from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import * as AddressGuard from "../src/internal/media/AddressGuard.ts"
import * as DataUrl from "../src/internal/media/DataUrl.ts"
import * as ImageFormat from "../src/internal/media/ImageFormat.ts"

const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
const pngBytes = Buffer.from(png, "base64")

const why = (url: string, max = 1024) => {
  const decoded = DataUrl.decode(url, max)
  return Result.isFailure(decoded) ? decoded.failure : undefined
}

describe("DataUrl.decode", () => {
  it("decodes a base64 image exactly, in any case, unpadded or wrapped", () => {
    for (const url of [
      `data:image/png;base64,${png}`,
      `DATA:IMAGE/PNG;BASE64,${png}`,
      `data:image/png;base64,${png.replace(/=+$/, "")}`,
      `data:image/png;charset=binary;base64,${png.slice(0, 40)}\n${png.slice(40)}`
    ]) {
      const decoded = DataUrl.decode(url, 1024)
      expect(Result.isSuccess(decoded), url).toBe(true)
      expect(Buffer.from(Result.getOrThrow(decoded)).equals(pngBytes)).toBe(true)
    }
  })

  it("refuses, saying why: another media type, not base64, not an image, too large, empty", () => {
    expect(why(`data:text/plain;base64,${png}`)).toContain("\"text/plain\" is not an image's")
    expect(why(`data:;base64,${png}`)).toContain("is not an image's")
    expect(why(`data:image/png,${png}`)).toContain("only base64")
    expect(why("data:image/png;base64")).toContain("comma")
    expect(why("data:image/png;base64,")).toContain("empty")
    expect(why("data:image/png;base64,iVBO*w0K")).toContain("not base64")
    expect(why("data:image/png;base64,iVBORw0KG")).toContain("not base64")
    expect(why("data:image/png;base64,a=bc")).toContain("not base64")
    expect(why(`data:image/png;base64,${Buffer.from("hello, world").toString("base64")}`)).toContain("not an image")
    expect(why(`data:image/png;base64,${png}`, 10)).toBe(`the image is ${pngBytes.length} bytes, more than this server's limit of 10`)
    expect(why("https://example.com/a.png")).toBe("not a data: URL")
  })
})

describe("ImageFormat.sniff", () => {
  it("knows the formats by their signatures, and nothing else", () => {
    const bytes = (...parts: Array<string | ReadonlyArray<number>>) =>
      new Uint8Array(parts.flatMap((p) => typeof p === "string" ? Array.from(p, (c) => c.charCodeAt(0)) : [...p]))
    expect(ImageFormat.sniff(pngBytes)).toBe("png")
    expect(ImageFormat.sniff(bytes([0xff, 0xd8, 0xff, 0xe0]))).toBe("jpeg")
    expect(ImageFormat.sniff(bytes("GIF89a", [1, 0]))).toBe("gif")
    expect(ImageFormat.sniff(bytes("RIFF", [0, 0, 0, 0], "WEBPVP8 "))).toBe("webp")
    expect(ImageFormat.sniff(bytes("BM", new Array(24).fill(0)))).toBe("bmp")
    expect(ImageFormat.sniff(bytes("II*", [0]))).toBe("tiff")
    expect(ImageFormat.sniff(bytes([0, 0, 0, 0x1c], "ftypavif"))).toBe("avif")
    expect(ImageFormat.sniff(bytes([0, 0, 0, 0x1c], "ftypheic"))).toBe("heif")
    expect(ImageFormat.sniff(bytes([0, 0, 0, 0x1c], "ftypisom"))).toBeUndefined()
    expect(ImageFormat.sniff(bytes("<html><body>not found"))).toBeUndefined()
    expect(ImageFormat.sniff(bytes("RIFF", [0, 0, 0, 0], "WAVE"))).toBeUndefined()
    expect(ImageFormat.sniff(new Uint8Array())).toBeUndefined()
  })
})

/** The guard's table of verdicts (a fixture: nothing binds or connects to these addresses). */
const addresses: { readonly refused: ReadonlyArray<string>; readonly allowed: ReadonlyArray<string> } = JSON.parse(
  readFileSync(Path.join(Path.dirname(fileURLToPath(import.meta.url)), "fixtures", "guard_addresses.json"), "utf8")
)

describe("AddressGuard", () => {
  it("refuses loopback, private, link-local, metadata, reserved and mapped addresses", () => {
    for (const address of addresses.refused) expect(AddressGuard.refuses(address), address).toBe(true)
  })

  it("lets public addresses through", () => {
    for (const address of addresses.allowed) expect(AddressGuard.refuses(address), address).toBe(false)
  })

  it("checks every address a name resolves to, in the lookup the connection uses; exempt addresses pass", async () => {
    const lookup = (guard: AddressGuard.Guard, all: boolean) =>
      new Promise<unknown>((resolve) =>
        (guard.lookup as unknown as (h: string, o: object, cb: (...args: Array<unknown>) => void) => void)(
          "localhost",
          { all, family: 4 },
          (error, address) => resolve(error ?? address)
        )
      )
    const refused = await lookup(AddressGuard.make(new Set()), false)
    expect(refused).toBeInstanceOf(AddressGuard.RefusedAddress)
    expect((refused as Error).message).toBe("localhost resolves to 127.0.0.1, a loopback, private, link-local or reserved address")
    expect(await lookup(AddressGuard.make(new Set(["127.0.0.1"])), false)).toBe("127.0.0.1")
    expect(await lookup(AddressGuard.make(new Set(["127.0.0.1"])), true)).toEqual([{ address: "127.0.0.1", family: 4 }])
    expect(AddressGuard.make(new Set()).literal("10.0.0.1")?.message).toBe("10.0.0.1 is a loopback, private, link-local or reserved address")
    expect(AddressGuard.make(new Set(["10.0.0.1"])).literal("10.0.0.1")).toBeUndefined()
  })
})
