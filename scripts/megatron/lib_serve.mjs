// A stand-in for `mcore serve` over several coordinators, built from the project's built libraries
// (packages/*/dist) as `mcore serve` builds its server (packages/cli/src/commands/Serve.ts):
// `Server.layer` over `Tokenizer.layer` and, in place of `InferenceClient.layer`, either
// `Fleet.layer` (many coordinators) or `Disaggregated.layer` (a prefill and a decode pool). For
// fleet.sh / disagg.sh while the CLI flags of those features have not landed; the checks use
// `mcore serve` itself once its help names the flags.
//
// Usage: node lib_serve.mjs ROOT --protocol NAME --tokenizer DIR [--model NAME] [--max-model-len N]
//          (--coordinator A [--coordinator B ...] [--routing prefix|least-loaded|round-robin]
//           | --prefill-coordinator P ... --decode-coordinator D ...)
// Prints the URL on its first line (as `mcore serve`), runs until SIGTERM/SIGINT; a
// disaggregated one prints its books (`Disaggregated.stats`) as one JSON line on stderr every
// time they change and once more at the end, after `idle`.
import { createRequire } from "node:module"
import path from "node:path"
import { pathToFileURL } from "node:url"

const argv = process.argv.slice(2)
const root = argv.shift()
const many = {}
const one = {}
for (let i = 0; i < argv.length; i += 2) {
  const flag = argv[i].replace(/^--/, "")
  const value = argv[i + 1]
  if (["coordinator", "prefill-coordinator", "decode-coordinator"].includes(flag)) (many[flag] ??= []).push(...value.split(","))
  else one[flag] = value
}
if (!root || !one.protocol || !one.tokenizer) {
  console.error("usage: node lib_serve.mjs ROOT --protocol NAME --tokenizer DIR (--coordinator A ... | --prefill-coordinator P --decode-coordinator D)")
  process.exit(2)
}
const load = async (pkg) => import(pathToFileURL(path.resolve(root, `packages/${pkg}/dist/index.js`)).href)
const fromServer = createRequire(path.resolve(root, "packages/server/package.json"))
const fromCli = createRequire(path.resolve(root, "packages/cli/package.json"))
const effect = async (name) => import(pathToFileURL(fromServer.resolve(`effect/${name}`)).href)
const { Fleet, Disaggregated } = await load("client")
const { Server } = await load("server")
const { Tokenizer } = await load("text")
const Effect = await effect("Effect")
const Layer = await effect("Layer")
const Context = await effect("Context")
const { HttpServer } = await import(pathToFileURL(fromServer.resolve("effect/http")).href)
const NodeRuntime = await import(pathToFileURL(fromCli.resolve("@effect/platform-node/NodeRuntime")).href)

const disaggregated = many["prefill-coordinator"] !== undefined
const client = disaggregated
  ? Disaggregated.layer({
    client: { protocol: one.protocol },
    prefill: many["prefill-coordinator"],
    decode: many["decode-coordinator"] ?? [],
    decodeGrace: one["decode-grace"] ? one["decode-grace"].replace(/^(\d+)s$/, "$1 seconds") : "10 seconds"
  })
  : Fleet.layer({ coordinators: many.coordinator ?? [], protocol: one.protocol, ...(one.routing ? { routing: one.routing } : {}) })

const program = Effect.gen(function*() {
  const context = yield* Layer.build(
    Server.layer({ model: one.model ?? "harness", port: 0, host: "127.0.0.1", ...(one["max-model-len"] ? { maxModelLen: Number(one["max-model-len"]) } : {}) }).pipe(Layer.provideMerge(Layer.merge(client, Tokenizer.layer(one.tokenizer))))
  )
  const address = Context.get(context, HttpServer.HttpServer).address
  console.log(`http://127.0.0.1:${address.port}`)
  console.error(`lib_serve: ${disaggregated ? `Disaggregated over prefill ${many["prefill-coordinator"]} decode ${many["decode-coordinator"]}` : `Fleet over ${many.coordinator} (routing ${one.routing ?? "prefix"})`} (protocol ${one.protocol})`)
  if (disaggregated) {
    const books = Context.get(context, Disaggregated.DisaggregatedStats)
    let last = ""
    const report = Effect.gen(function*() {
      const text = JSON.stringify(yield* books.stats)
      if (text !== last) (last = text), console.error(`books ${text}`)
    })
    yield* Effect.addFinalizer(() => Effect.andThen(Effect.timeout(books.idle, "10 seconds").pipe(Effect.ignore), report))
    yield* report.pipe(Effect.andThen(Effect.sleep("100 millis")), Effect.forever, Effect.forkScoped)
  }
  return yield* Effect.never
}).pipe(Effect.scoped)

NodeRuntime.runMain(program)
