/**
 * Which addresses a test socket may bind: loopback only, so a test never exposes a port.
 *
 * @since 0.1.0
 */

/**
 * True for `tcp://127.x.x.x:<port>`, `tcp://[::1]:<port>` and `ipc://<path>`.
 *
 * @example
 * ```ts
 * import { Loopback } from "@mcore-effect/testkit"
 *
 * Loopback.isLoopback("tcp://127.0.0.1:0") // true
 * Loopback.isLoopback("tcp://0.0.0.0:5555") // false
 * ```
 *
 * @category guards
 * @since 0.1.0
 */
export const isLoopback = (address: string): boolean =>
  /^tcp:\/\/127\.\d{1,3}\.\d{1,3}\.\d{1,3}:(\d+|\*)$/.test(address) ||
  /^tcp:\/\/\[::1\]:(\d+|\*)$/.test(address) ||
  /^ipc:\/\/.+/.test(address)
