/**
 * `mcore serve` over coordinators that come and go: `--coordinators-file PATH` (one address a
 * line, read again when the file changes and on SIGHUP) or `--coordinator dns:NAME:PORT` (every
 * `A` and `AAAA` record of NAME, resolved every `--resolve-interval`). The fleet follows each
 * new set (the client's `Membership` and `Fleet`'s `membership`): a coordinator added takes
 * requests once joined, one removed takes no new request and is closed once what it holds has
 * ended. No set at the start is one line and exit code 1; later bad input is logged, the last
 * good set kept.
 *
 * A source travels to `--workers` processes as one string, `file:PATH` or `dns:NAME:PORT`, and
 * each process reads it itself.
 *
 * @since 0.2.0
 * @internal
 */
import { type ClientError, Fleet, type FleetConfig, type InferenceClient, Membership, Setting } from "@mcore-effect/client"
import type { Dialect } from "@mcore-effect/protocol"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { Flag } from "effect/cli"
import * as SettingFlags from "../SettingFlags.ts"

/** This mode's own setting, with its flag. */
export const settings = {
  resolveInterval: Setting.duration({
    description: "With --coordinator dns:NAME:PORT: how often the name is resolved again",
    default: "5 seconds",
    positive: true,
    infinite: "refused",
    flag: "resolve-interval"
  }),
  dnsServers: Setting.list({
    description: "With --coordinator dns:NAME:PORT: the DNS servers asked (host:port, comma-separated), instead of the system's",
    flag: { name: "dns-servers", metavar: "servers" }
  })
}

/** The flags of this mode. */
export const flags = {
  coordinatorsFile: Flag.String("coordinators-file").pipe(
    Flag.withMetavar("path"),
    Flag.withDescription(
      "Instead of --coordinator: a file of coordinator addresses, one a line (# comments); read again when it changes " +
        "and on SIGHUP, the fleet following it (one added joins; one removed finishes what it holds, then is closed)"
    ),
    Flag.optional
  ),
  ...SettingFlags.flags(settings)
}

const FILE = "file:"

/** The source a `--coordinators-file` path names, as it travels to workers. */
export const fileSource = (path: string): string => `${FILE}${path}`

/** Whether `target` (what `--coordinator` gave, comma-joined, or a {@link fileSource}) is a source of sets. */
export const isSource = (target: string): boolean => target.startsWith(FILE) || Membership.parseDns(target) !== undefined

/** `target` for a person: `file PATH`, `dns NAME:PORT`. */
export const describe = (target: string): string => target.startsWith(FILE) ? `file ${target.slice(FILE.length)}` : `dns ${target.slice(4)}`

/** The fleet over the coordinators `target` gives now, following the sets it gives later. */
export const layer = (
  target: string,
  options: Omit<FleetConfig.FleetOptions, "coordinators" | "membership"> & { readonly protocol: Dialect.Name },
  dns: { readonly resolveInterval?: Duration.Input | undefined; readonly dnsServers?: ReadonlyArray<string> | undefined }
): Layer.Layer<Fleet.Fleet | InferenceClient.InferenceClient, ClientError.ClientError> => {
  const name = Membership.parseDns(target)
  const servers = dns.dnsServers !== undefined && dns.dnsServers.length > 0 ? dns.dnsServers : undefined
  const source = name === undefined
    ? Membership.file(target.slice(FILE.length))
    : Membership.dns(name.name, name.port, { interval: dns.resolveInterval, servers })
  return Layer.unwrap(Effect.map(source, (members) =>
    Fleet.layer({ ...options, coordinators: members.initial, membership: members.changes })))
}
