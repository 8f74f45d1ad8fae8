/**
 * Helpers that were written several times and are now written once, each with its home: a
 * second definition of one in its package fails `Architecture.test.ts` (import it instead). Add
 * a helper here when you make one shared.
 */
import type { SharedHelper } from "./boundaries.ts"

export const sharedHelpers: ReadonlyArray<SharedHelper> = [
  // Issue 39: the client's argument checks, each once written in several files.
  { name: "invalidArgument", home: "packages/client/src/internal/arguments.ts" },
  { name: "checkRequestId", home: "packages/client/src/internal/arguments.ts" },
  { name: "millisOf", home: "packages/client/src/internal/arguments.ts" },
  // Issue 39: the fleet's ids, encoded in Fleet.ts and decoded in two places before.
  { name: "encodeRequest", home: "packages/client/src/internal/fleet/ids.ts" },
  { name: "decodeRequest", home: "packages/client/src/internal/fleet/ids.ts" },
  { name: "encodeHandoff", home: "packages/client/src/internal/fleet/ids.ts" },
  { name: "decodeHandoff", home: "packages/client/src/internal/fleet/ids.ts" },
  // Issue 39: the fleet's placement loop (four loops before) and its options (resolved three times).
  { name: "placeWith", home: "packages/client/src/internal/fleet/failover.ts" },
  { name: "resolveFleet", home: "packages/client/src/internal/fleet/options.ts" },
  // Issue 39: a started request's waits (the hand-off had its own before).
  { name: "awaitOutcome", home: "packages/client/src/internal/started.ts" },
  { name: "finalOf", home: "packages/client/src/internal/started.ts" },
  // A client's and a fleet's block hashes.
  { name: "blockHashesOf", home: "packages/client/src/internal/service.ts" },
  // The benchmarks' CPU-time measures and medians (five medians, and a relative import of the
  // protocol's bench from the text's, before).
  { name: "median", home: "packages/testkit/src/Timing.ts", everywhere: true },
  { name: "secondsPer", home: "packages/testkit/src/Timing.ts", everywhere: true },
  { name: "repeatsFor", home: "packages/testkit/src/Timing.ts", everywhere: true },
  // Issue 40: whether a value is a plain object (the server's request check had its own).
  { name: "isPlainObject", home: "packages/protocol/src/internal/values.ts", everywhere: true },
  // Issue 38: the coordinator's options, checked once for Coordinator.make and TestCoordinator.make.
  { name: "configOf", home: "packages/coordinator/src/internal/configOf.ts" }
]
