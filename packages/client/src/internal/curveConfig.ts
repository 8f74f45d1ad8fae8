/**
 * The CurveZMQ option: its keys, read from three environment variables, and its check.
 */
import * as Config from "effect/Config"
import { SourceError } from "effect/ConfigProvider"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"

/** CurveZMQ keys, Z85 text (40 characters), as `zeromq`'s `curveKeyPair()` makes them. */
export interface CurveOptions {
  /** The coordinator's public key: the client talks to no one else. */
  readonly serverKey: string
  /** The client's key pair; a fresh one is made when absent. */
  readonly publicKey?: string | undefined
  readonly secretKey?: string | undefined
}

const optional = <A>(config: Config.Config<A>): Config.Config<A | undefined> =>
  Config.option(config).pipe(Config.map(Option.getOrUndefined))

/**
 * The CurveZMQ keys: present only when the server's key is set. The secret key stays `Redacted`
 * until the option is built here, so a failed read never prints it. A client key without
 * `MCORE_CURVE_SERVER_KEY` is an error rather than ignored: the client would otherwise talk to a
 * CurveZMQ coordinator in the clear and only time out.
 */
export const curveConfig: Config.Config<CurveOptions | undefined> = Config.all({
  serverKey: optional(Config.String("MCORE_CURVE_SERVER_KEY")),
  publicKey: optional(Config.String("MCORE_CURVE_PUBLIC_KEY")),
  secretKey: optional(Config.Redacted("MCORE_CURVE_SECRET_KEY"))
}).pipe(Config.flatMap(({ publicKey, secretKey, serverKey }) => {
  if (serverKey !== undefined) {
    return Config.succeed<CurveOptions | undefined>({
      serverKey,
      publicKey,
      secretKey: secretKey === undefined ? undefined : Redacted.value(secretKey)
    })
  }
  return publicKey === undefined && secretKey === undefined
    ? Config.succeed(undefined)
    : Config.fail(
      new SourceError({
        message: "MCORE_CURVE_PUBLIC_KEY and MCORE_CURVE_SECRET_KEY need MCORE_CURVE_SERVER_KEY (the coordinator's key)"
      })
    )
}))

const z85Key = /^[0-9a-zA-Z.\-:+=^!/*?&<>()[\]{}@%$#]{40}$/

/** What is wrong with the keys, or `undefined`. */
export const curveProblem = (curve: CurveOptions): string | undefined => {
  const keys = [curve.serverKey, curve.publicKey, curve.secretKey]
  if (!keys.every((key, i) => (i > 0 && key === undefined) || (typeof key === "string" && z85Key.test(key)))) {
    return "keys must be 40-character Z85 text"
  }
  if ((curve.publicKey === undefined) !== (curve.secretKey === undefined)) {
    return "give both publicKey and secretKey, or neither"
  }
  return undefined
}
