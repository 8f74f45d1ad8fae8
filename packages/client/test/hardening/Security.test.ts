/**
 * The client connects only where it is told: addresses are checked before any socket is opened
 * (tcp with a host and a port, ipc with a path), with a typed `InvalidAddress` otherwise; and with
 * CurveZMQ keys it talks only to the coordinator whose public key it holds.
 */
import { describe, expect, it } from "@effect/vitest"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Generation, TestCluster, TestCoordinator } from "@mcore-effect/testkit"
import { Effect } from "effect"
import * as Zmq from "zeromq"
import { InferenceClient } from "../../src/index.ts"
import * as Harness from "./support/Harness.ts"

const refused = [
  "",
  "127.0.0.1:5555",
  "tcp://",
  "tcp://127.0.0.1",
  "tcp://127.0.0.1:",
  "tcp://127.0.0.1:0",
  "tcp://127.0.0.1:65536",
  "tcp://127.0.0.1:55x5",
  "tcp://:5555",
  "tcp://127.0.0.1:5555;127.0.0.2:5556",
  "tcp://exa mple:5555",
  "tcp://[::1:5555",
  "ipc://",
  "ipc://*",
  "inproc://coordinator",
  "udp://127.0.0.1:5555",
  "ws://127.0.0.1:5555",
  "pgm://127.0.0.1;239.192.1.1:5555"
]

describe("security: addresses", () => {
  it.live("refuses every address that is not tcp://host:port or ipc://path, with InvalidAddress, at once", () =>
    Effect.gen(function*() {
      for (const address of refused) {
        // A connect timeout far beyond the bound: refusing must not wait for a handshake.
        const error = yield* Effect.flip(Effect.scoped(InferenceClient.make({ address, protocol: "main", connectTimeout: "1 minute" })))
          .pipe(Harness.bounded(`refusing ${JSON.stringify(address)}`, "5 seconds"))
        expect(error.reason, address).toMatchObject({ _tag: "InvalidAddress", address })
      }
    }).pipe(Harness.isolated))

  it.live("connects to a tcp host name and to an ipc path", () =>
    Effect.gen(function*() {
      const cluster = yield* TestCluster.make({ engines: 1 })
      const port = cluster.address.slice(cluster.address.lastIndexOf(":") + 1)
      const byName = yield* InferenceClient.make({ address: `tcp://localhost:${port}`, protocol: cluster.protocol })
      expect((yield* byName.submit([1, 2], { num_tokens_to_generate: 2 })).generated_tokens).toEqual(Generation.tokens([1, 2], 2))

      const dir = mkdtempSync(join(tmpdir(), "mcore-ipc-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
      const ipc = yield* TestCluster.make({ engines: 1, coordinator: { address: `ipc://${join(dir, "coordinator")}` } })
      const overIpc = yield* InferenceClient.make({ address: ipc.address, protocol: ipc.protocol })
      expect((yield* overIpc.submit([3], { num_tokens_to_generate: 1 })).generated_tokens).toEqual(Generation.tokens([3], 1))
    }).pipe(Harness.isolated))

  it.live("talks only to the coordinator it was given", () =>
    Effect.gen(function*() {
      const told = yield* TestCluster.make({ engines: 1 })
      const other = yield* TestCoordinator.make()
      const client = yield* InferenceClient.make({ address: told.address, protocol: told.protocol })
      yield* client.submit([1], { num_tokens_to_generate: 1 })
      expect((yield* told.coordinator.snapshot).clients).toBe(1)
      const untold = yield* other.snapshot
      expect(untold.clients).toBe(0)
      expect(untold.counters.neverConnected).toBe(0)
    }).pipe(Harness.isolated))
})

describe("security: CurveZMQ", () => {
  it.live("a client holding the coordinator's public key is served", () =>
    Effect.gen(function*() {
      const cluster = yield* TestCluster.make({ engines: 1, coordinator: { curve: Zmq.curveKeyPair() } })
      const client = yield* InferenceClient.make({
        address: cluster.address,
        protocol: cluster.protocol,
        curve: { serverKey: cluster.coordinator.curvePublicKey!, ...Zmq.curveKeyPair() }
      })
      expect((yield* client.submit([5, 6], { num_tokens_to_generate: 3 })).generated_tokens).toEqual(Generation.tokens([5, 6], 3))
      // Without a key pair of its own the client makes one.
      const ephemeral = yield* InferenceClient.make({ address: cluster.address, protocol: cluster.protocol, curve: { serverKey: cluster.coordinator.curvePublicKey! } })
      expect((yield* ephemeral.submit([7], { num_tokens_to_generate: 1 })).generated_tokens).toEqual(Generation.tokens([7], 1))
    }).pipe(Harness.isolated))

  it.live("a client holding the wrong key, or none, is refused: ConnectTimeout, and the coordinator never sees it", () =>
    Effect.gen(function*() {
      const cluster = yield* TestCluster.make({ engines: 1, coordinator: { curve: Zmq.curveKeyPair() } })
      const wrongKey = yield* Effect.flip(Effect.scoped(InferenceClient.make({
        address: cluster.address,
        protocol: cluster.protocol,
        connectTimeout: "500 millis",
        curve: { serverKey: Zmq.curveKeyPair().publicKey }
      }))).pipe(Harness.bounded("the wrong key", "10 seconds"))
      expect(wrongKey.reason).toMatchObject({ _tag: "ConnectTimeout", address: cluster.address })
      const noKey = yield* Effect.flip(Effect.scoped(InferenceClient.make({ address: cluster.address, protocol: cluster.protocol, connectTimeout: "500 millis" })))
        .pipe(Harness.bounded("no key", "10 seconds"))
      expect(noKey.reason._tag).toBe("ConnectTimeout")
      const snapshot = yield* cluster.coordinator.snapshot
      expect(snapshot.clients).toBe(0)
      expect(snapshot.counters.neverConnected).toBe(0)
    }).pipe(Harness.isolated))

  it.live("keys that are not Z85 are refused with InvalidArgument before connecting", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(Effect.scoped(InferenceClient.make({ address: "tcp://127.0.0.1:5555", protocol: "main", curve: { serverKey: "nope" } })))
      expect(error.reason).toMatchObject({ _tag: "InvalidArgument", name: "curve" })
    }).pipe(Harness.isolated))
})
