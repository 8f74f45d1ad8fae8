/**
 * The URL an HTTP server of the CLI's listens at, as printed for scripts to read (`mcore serve`'s
 * first line, `mcore coordinator`'s `metrics URL`): the host as given (an IPv6 one bracketed) and
 * the port actually bound (for port 0).
 *
 * @since 0.2.0
 * @internal
 */
import { HttpServer } from "effect/http"

/** `http://HOST:PORT` of `address` as `host` was asked for, or the address formatted when it has no port. */
export const of = (address: HttpServer.HttpServer["Service"]["address"], host: string): string =>
  "port" in address ? `http://${host.includes(":") ? `[${host}]` : host}:${address.port}` : HttpServer.formatAddress(address)
