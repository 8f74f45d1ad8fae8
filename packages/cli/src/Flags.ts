/**
 * Flags shared by several commands: where the coordinator is, which dialect it speaks, and how
 * long to wait for it. One definition each, so every command spells and documents them the same
 * way.
 *
 * @since 0.1.0
 * @internal
 */
import { ClientConfig, Membership } from "@mcore-effect/client"
import { Dialect, Dialects } from "@mcore-effect/protocol"
import { Loopback } from "@mcore-effect/testkit"
import * as Config from "effect/Config"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import { Flag } from "effect/cli"
import * as SettingFlags from "./SettingFlags.ts"

export {
  /**
   * A duration flag (see {@link parseDuration}).
   *
   * @since 0.1.0
   */
  duration,
  /**
   * Reads a duration as people type it on a command line (see `Values.parseDuration`).
   *
   * @since 0.1.0
   */
  parseDuration
} from "./Values.ts"

/**
 * Refuses an address a client cannot connect to, by the client's own rule
 * (`ClientConfig.addressProblem`), as a bad value of the flag (exit code 2). A well-formed address
 * nobody answers at is a failure of the command (1).
 *
 * @since 0.1.0
 */
export const connectable: (self: Flag.Flag<string>) => Flag.Flag<string> = Flag.filterMap(
  (text: string) => (ClientConfig.addressProblem(text) === undefined ? Option.some(text) : Option.none()),
  (text: string) => ClientConfig.addressProblem(text) ?? ""
)

/**
 * Refuses an address the testkit will not bind (anything but loopback), as a bad value.
 *
 * @since 0.1.0
 */
export const loopback: (self: Flag.Flag<string>) => Flag.Flag<string> = Flag.filter(
  Loopback.isLoopback,
  () => "expected a loopback address: tcp://127.0.0.1:PORT, tcp://[::1]:PORT or ipc://PATH (test sockets bind nothing else)"
)

/**
 * The environment variable `--address` falls back to: the one the client's own `ClientConfig`
 * reads (its declaration, `ClientConfig.settings.address`).
 *
 * @since 0.1.0
 */
export const addressVariable: string = SettingFlags.variable(ClientConfig.settings.address)

/**
 * A repeatable address flag whose values may each hold several, comma-separated, falling back to
 * the client's variable (`MCORE_COORDINATOR_ADDRESS`, comma-separated too): one coordinator, or
 * a fleet's. Each address is checked by the client's rule ({@link connectable}); the same one
 * twice is a bad value.
 *
 * @since 0.2.0
 */
export const addressList = (
  flag: Flag.Flag<string>,
  description: string,
  options?: { readonly dns?: boolean | undefined }
): Flag.Flag<ReadonlyArray<string>> =>
  flag.pipe(
    Flag.withMetavar("address"),
    Flag.withDescription(description),
    Flag.atLeast(1),
    Flag.withFallbackConfig(Config.map(Config.String(addressVariable), (text) => [text])),
    Flag.filterMap(
      (given: ReadonlyArray<string>) => {
        const addresses = splitAddresses(given)
        return addressesProblem(addresses, options?.dns === true) === undefined ? Option.some(addresses) : Option.none()
      },
      (given: ReadonlyArray<string>) => addressesProblem(splitAddresses(given), options?.dns === true) ?? ""
    )
  )

const splitAddresses = (given: ReadonlyArray<string>): ReadonlyArray<string> =>
  given.flatMap((text) => text.split(",")).map((text) => text.trim()).filter((text) => text.length > 0)

const addressesProblem = (addresses: ReadonlyArray<string>, dns: boolean): string | undefined => {
  if (addresses.length === 0) return "expected an address"
  if (dns && addresses.some((text) => text.startsWith("dns:"))) {
    if (addresses.length > 1) return "dns:NAME:PORT names every coordinator: give it alone"
    return Membership.parseDns(addresses[0]!) === undefined ? "expected dns:NAME:PORT (a host name, a port from 1 to 65535)" : undefined
  }
  for (const [i, text] of addresses.entries()) {
    const problem = ClientConfig.addressProblem(text)
    if (problem !== undefined) return addresses.length > 1 ? `${text}: ${problem}` : problem
    if (addresses.indexOf(text) !== i) return `${text} is given twice`
  }
  return undefined
}

/**
 * `--address`: the coordinator's ROUTER address, the client's `address` option's flag (with its
 * description and its fallback, `MCORE_COORDINATOR_ADDRESS`). A malformed address is a bad value
 * ({@link connectable}).
 *
 * @since 0.1.0
 */
export const address: Flag.Flag<ReadonlyArray<string>> = addressList(
  Flag.String("address").pipe(Flag.withAlias("a")),
  `${SettingFlags.help(ClientConfig.settings.address)}; several (repeated, or comma-separated) make a fleet`
)

/**
 * The environment variable `--protocol` falls back to, the one the client's own `ClientConfig`
 * reads.
 *
 * @since 0.2.0
 */
export const protocolVariable: string = SettingFlags.variable(ClientConfig.settings.protocol)

/**
 * What a missing `--protocol` is told, after the command's name: one line listing the dialects
 * (main first), why there is no default, and where the table of dialects is.
 *
 * @since 0.2.0
 */
export const missingProtocol = `missing --protocol (or ${protocolVariable} in the environment): ${ClientConfig.protocolChoices}`

const choices = Dialect.names.join(", ")

/**
 * `--protocol` as every command spells it; each command says what it means there and whether it
 * is required. A string checked by the protocol package's own parser, so that a bad value from
 * `MCORE_PROTOCOL` is reported as the flag's, in the same words (`invalid value "v0.19" for
 * --protocol: expected one of main, ...`).
 */
const dialect = (description: string): Flag.Flag<Dialect.Name> =>
  Flag.String("protocol").pipe(
    Flag.withMetavar("dialect"),
    Flag.withDescription(description),
    Flag.withFallbackConfig(Config.String(protocolVariable)),
    Flag.filterMap(
      (text: string) => Option.map(Result.getSuccess(Dialects.parse(text)), (found) => found.name),
      () => `expected one of ${choices} (${ClientConfig.dialectTable})`
    )
  )

/**
 * `--protocol`: the coordinator's wire dialect, by the Megatron-LM version that speaks it
 * (`main`, `pr-6497`, `core_v0.19`, `core_v0.18`, `core_v0.17`, `core_v0.16`, or the project's own
 * `reference`). Required, with no default, on every command that talks to a coordinator the
 * project did not start: a message a coordinator cannot parse kills it, so the dialect is never
 * guessed. Missing, the command ends with {@link missingProtocol} and exit code 2 before any
 * socket is opened.
 *
 * @since 0.2.0
 */
export const protocol: Flag.Flag<Dialect.Name> = dialect(
  `The coordinator's wire protocol, by Megatron-LM version, required (no default: a wrong one can kill the coordinator): ${choices} (env ${protocolVariable}; the table: ${ClientConfig.dialectTable})`
)

/**
 * `--protocol` where it is optional: for a command that starts what it talks to, or only labels
 * what it records. The command's `description` says what the flag means there and what its absence does.
 *
 * @since 0.2.0
 */
export const optionalProtocol = (description: string): Flag.Flag<Option.Option<Dialect.Name>> =>
  dialect(`${description} (${choices}; env ${protocolVariable})`).pipe(Flag.optional)

/**
 * The client's options but `address`: for `mcore serve`, which names the coordinator with
 * `--coordinator` and takes the other client flags as every command does.
 *
 * @since 0.2.0
 */
export const clientSettingsBesidesAddress: Omit<typeof ClientConfig.settings, "address"> = (({ address: _address, ...rest }) => rest)(ClientConfig.settings)

/**
 * The flags every command that talks to a coordinator takes: one for each client option that
 * declares a flag (`ClientConfig.settings`: `--address`, `--connect-timeout`, and any added
 * there), with `--address` checked by the client's rule ({@link connectable}), and `--protocol`.
 *
 * @since 0.1.0
 */
export const connection = { ...SettingFlags.flags(ClientConfig.settings), address, protocol } as const

/**
 * What {@link connection} parses to.
 *
 * @since 0.1.0
 */
export type Connection = { readonly [K in keyof typeof connection]: typeof connection[K] extends Flag.Flag<infer A> ? A : never }
