/**
 * The flags of declared options: `mcore serve --help` and `mcore generate --help` show every
 * server and client option that declares a flag, each with the default its declaration states.
 */
import { ClientConfig } from "@mcore-effect/client"
import { ServerConfig } from "@mcore-effect/server"
import { beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { help } from "../src/SettingFlags.ts"
import { ensureBuilt } from "./support/Build.ts"
import * as Mcore from "./support/Mcore.ts"

const flagged = (settings: Record<string, { readonly flag: { readonly name: string } | undefined }>) =>
  Object.values(settings).flatMap((setting) => setting.flag === undefined ? [] : [setting as never as Parameters<typeof help>[0]])

beforeAll(ensureBuilt, 300_000)

describe("flags of declared options", () => {
  it("help text states the declared default and variable", () => {
    expect(help(ServerConfig.settings.maxBodyBytes)).toBe("Largest request body, in bytes (default 4 MiB)")
    expect(help(ServerConfig.settings.requestTimeout)).toBe("Deadline of a generation request; 504 and aborted after it (default 10m)")
    expect(help(ClientConfig.settings.connectTimeout)).toBe("How long to wait for the coordinator to answer CONNECT (default 10s; env MCORE_CONNECT_TIMEOUT)")
  })

  it.live("mcore serve --help lists every server option's flag with its help", () =>
    Effect.gen(function*() {
      const ended = yield* Mcore.run(["serve", "--help"])
      expect(ended.code).toBe(0)
      const text = ended.stdout.replace(/\s+/g, " ")
      const settings = [...flagged(ServerConfig.settings), ...flagged(ClientConfig.settings).filter((s) => s.flag?.name !== "address")]
      expect(settings.length).toBeGreaterThan(15)
      for (const setting of settings) {
        expect(text).toContain(`--${setting.flag!.name} `)
        expect(text).toContain(help(setting))
      }
    }), 60_000)

  it.live("a declared bound refuses a value as a bad flag (exit code 2), before anything starts", () =>
    Effect.gen(function*() {
      const ended = yield* Mcore.run(["serve", "--embedded", "--port", "70000"])
      expect(ended.code).toBe(2)
      expect(ended.stderr).toBe("mcore serve: invalid value \"70000\" for --port: expected an integer 0..65535; see mcore serve --help\n")
    }), 60_000)
})
