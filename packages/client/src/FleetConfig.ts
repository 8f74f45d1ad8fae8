/**
 * A fleet's own options (`Fleet.make`), each declared once as a `Setting` (its type, default,
 * check, environment variable and `mcore` flag), as the client's are in `ClientConfig`. The
 * client's options, applied to every coordinator's client, are `ClientConfig.settings` without
 * `address`; the coordinators' addresses are `coordinators`.
 *
 * @since 0.2.0
 */
import type * as Config from "effect/Config"
import * as Result from "effect/Result"
import type * as Stream from "effect/Stream"
import type * as ClientConfig from "./ClientConfig.ts"
import * as Setting from "./Setting.ts"

const policies = new Map([
  ["prefix", "prefix"],
  ["least-loaded", "least-loaded"],
  ["round-robin", "round-robin"]
] as const)

/**
 * The fleet's options.
 *
 * @since 0.2.0
 * @category settings
 */
export const settings = {
  routing: Setting.choice({
    description: "How requests are placed on the coordinators: prefix, least-loaded or round-robin",
    choices: policies,
    defaultText: "prefix",
    env: "MCORE_ROUTING",
    flag: "routing"
  }),
  routingBlockTokens: Setting.integer({
    description: "The prefix router's block, in tokens (its own: it never reaches the wire)",
    default: 64,
    min: 1,
    flag: "routing-block-tokens"
  }),
  routingMaxBlocks: Setting.integer({ description: "Blocks of a prompt the prefix router reads, at most", default: 256, min: 1 }),
  loadFactor: Setting.custom<number, number>({
    description: "The load bound: a coordinator takes a request while its in flight + 1 <= ceil(loadFactor * (all + 1) / up) + loadSlack",
    default: 1.25,
    defaultText: "1.25",
    resolve: (n) =>
      n === undefined
        ? Result.succeed(1.25)
        : typeof n === "number" && Number.isFinite(n) && n >= 1
        ? Result.succeed(n)
        : Result.fail(`expected a number >= 1, got ${String(n)}`)
  }),
  loadSlack: Setting.integer({
    description: "Requests a coordinator may hold beyond the load bound: below it, imbalance is not load",
    default: 4,
    min: 0
  }),
  routingTableKeys: Setting.integer({ description: "Prefix keys the router remembers (about 80 bytes each)", default: 65_536, min: 1 }),
  stallTimeout: Setting.duration({
    description: "A coordinator with requests in flight and nothing received for this long takes no new request",
    default: "10 seconds",
    positive: true,
    infinite: "refused",
    flag: "stall-timeout"
  }),
  rejoinBackoff: Setting.duration({
    description: "The wait before redialing a coordinator that went down, doubled after each failed dial",
    default: "1 second",
    infinite: "refused",
    flag: "rejoin-backoff"
  }),
  rejoinBackoffMax: Setting.duration({ description: "The longest wait between dials", default: "30 seconds", infinite: "refused" }),
  maxCoordinators: Setting.integer({
    description: "With a membership that changes: the most coordinators the fleet holds at once (retiring ones included)",
    default: 64,
    min: 1
  })
}

/**
 * The fleet's own options, one for each of {@link settings}.
 *
 * @since 0.2.0
 * @category models
 */
export interface FleetSettings extends Setting.Options<typeof settings> {}

/**
 * A fleet's options: the client's (all but `address`, applied to every coordinator's client),
 * the coordinators' addresses, and the fleet's own ({@link settings}: `routing`,
 * `routingBlockTokens`, `loadFactor`, `stallTimeout`, `rejoinBackoff`, ...). What `Fleet.make`
 * takes (`Fleet.FleetOptions` is this type).
 *
 * @since 0.2.0
 * @category models
 */
export interface FleetOptions extends Omit<ClientConfig.ClientOptions, "address">, FleetSettings {
  /** The coordinators' addresses, each one once. */
  readonly coordinators: ReadonlyArray<string>
  /**
   * Later sets of coordinators (a `Membership`'s `changes`, say): each is the whole set. One
   * added joins and takes requests once joined; one removed takes no new request and is closed
   * once what it holds has ended. An empty set, or one with an address the transport refuses, is
   * logged and skipped. At most `maxCoordinators` at once.
   */
  readonly membership?: Stream.Stream<ReadonlyArray<string>> | undefined
}

/**
 * The declared defaults.
 *
 * @since 0.2.0
 * @category defaults
 */
export const defaults = Setting.defaults(settings)

/**
 * The fleet's own options read from the environment (`MCORE_ROUTING`); the others keep their
 * defaults.
 *
 * @since 0.2.0
 * @category config
 */
export const config: Config.Config<FleetSettings> = Setting.config(settings)

