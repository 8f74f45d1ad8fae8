/**
 * A fleet's options, resolved once when it is made: its own (`FleetConfig.settings`, each
 * checked by its `Setting`), its coordinators (at least one, each once, each an address the
 * transport connects to), and the one client configuration every member dials with (its address
 * the member's own). Nothing is opened for options any of them refuses.
 *
 * @internal
 */
import * as Result from "effect/Result"
import * as ClientConfig from "../../ClientConfig.ts"
import { type ClientError, clientError, InvalidAddress, InvalidArgument } from "../../ClientError.ts"
import * as FleetConfig from "../../FleetConfig.ts"
import * as Setting from "../../Setting.ts"
import { invalidArgument } from "../arguments.ts"
import type { Policy } from "./router.ts"

/** The fleet's options, resolved. */
export interface ResolvedFleet {
  readonly coordinators: ReadonlyArray<string>
  readonly routing: Policy
  readonly routingBlockTokens: number
  readonly routingMaxBlocks: number
  readonly loadFactor: number
  readonly loadSlack: number
  readonly routingTableKeys: number
  readonly stallTimeoutMillis: number
  readonly rejoinBackoffMillis: number
  readonly rejoinBackoffMaxMillis: number
  /**
   * The places fleet ids encode (`ids.ts`): the coordinators' count for a fixed fleet,
   * `maxCoordinators` for one whose membership changes.
   */
  readonly slots: number
  /** The members' client configuration, with the first coordinator's address (each member dials its own). */
  readonly client: ClientConfig.ResolvedOptions
}

const coordinatorsProblem = (coordinators: ReadonlyArray<string>): ClientError | undefined => {
  if (coordinators.length === 0) return invalidArgument("coordinators", "a fleet needs at least one coordinator")
  const seen = new Set<string>()
  for (const address of coordinators) {
    if (seen.has(address)) return invalidArgument("coordinators", `${JSON.stringify(address)} is listed twice`)
    seen.add(address)
  }
  return undefined
}

/** The client's options among a fleet's: all but the coordinators and the fleet's own settings. */
const clientOptionsOf = (options: FleetConfig.FleetOptions): Omit<ClientConfig.ClientOptions, "address"> => {
  const client: Record<string, unknown> = { ...options }
  delete client.coordinators
  delete client.membership
  for (const name of Object.keys(FleetConfig.settings)) delete client[name]
  return client as Omit<ClientConfig.ClientOptions, "address">
}

/**
 * `options` resolved, or the first problem: the fleet's settings, then its coordinators, then
 * each address (`addressProblem`, the transport's check), then the client's options.
 */
export const resolveFleet = (
  options: FleetConfig.FleetOptions,
  addressProblem: (address: string) => string | undefined
): Result.Result<ResolvedFleet, ClientError> => {
  const fleet = Setting.resolve(FleetConfig.settings, options)
  if (Result.isFailure(fleet)) return Result.fail(clientError(new InvalidArgument(fleet.failure)))
  const coordinators = options.coordinators
  const refused = coordinatorsProblem(coordinators)
  if (refused !== undefined) return Result.fail(refused)
  for (const address of coordinators) {
    const why = addressProblem(address)
    if (why !== undefined) return Result.fail(clientError(new InvalidAddress({ address, why })))
  }
  const client = ClientConfig.resolve({ ...clientOptionsOf(options), address: coordinators[0]! })
  if (Result.isFailure(client)) return Result.fail(clientError(new InvalidArgument(client.failure)))
  const f = fleet.success
  return Result.succeed({
    coordinators,
    routing: f.routing ?? "prefix",
    routingBlockTokens: f.routingBlockTokens,
    routingMaxBlocks: f.routingMaxBlocks,
    loadFactor: f.loadFactor,
    loadSlack: f.loadSlack,
    routingTableKeys: f.routingTableKeys,
    stallTimeoutMillis: f.stallTimeout,
    rejoinBackoffMillis: f.rejoinBackoff,
    rejoinBackoffMaxMillis: Math.max(f.rejoinBackoff, f.rejoinBackoffMax),
    slots: options.membership === undefined ? coordinators.length : Math.max(coordinators.length, f.maxCoordinators),
    client: client.success
  })
}
