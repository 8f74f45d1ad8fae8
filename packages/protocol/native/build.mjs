// Builds the optional native block-hash accelerator at install time.
//
// Never fails the install: without a compiler, headers or node-gyp the package uses its pure
// implementation, so a failed build is a one-line note, not an error.
import { spawnSync } from "node:child_process"
import { existsSync } from "node:fs"
import { createRequire } from "node:module"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"

const here = Path.dirname(fileURLToPath(import.meta.url))
const note = (message) => console.log(`@mcore-effect/protocol: ${message}`)

const nodeGyp = () => {
  try {
    return createRequire(import.meta.url).resolve("node-gyp/bin/node-gyp.js")
  } catch {
    // Not installed as our devDependency (an install from the registry): the package
    // manager's own copy, which npm and pnpm announce to lifecycle scripts.
    return process.env.npm_config_node_gyp
  }
}

// Headers next to the running node (as on Linux distributions and in Node's own tarballs)
// spare node-gyp a download, which fails on machines without internet access.
const localNodeDir = () => {
  const prefix = Path.resolve(Path.dirname(process.execPath), "..")
  return existsSync(Path.join(prefix, "include", "node", "node_api.h")) ? prefix : undefined
}

const build = () => {
  if (process.env.MCORE_EFFECT_NO_NATIVE === "1") return "native block hashing skipped (MCORE_EFFECT_NO_NATIVE=1)"
  const gyp = nodeGyp()
  if (gyp === undefined || !existsSync(gyp)) return "native block hashing not built (node-gyp not found); using the pure implementation"
  const args = [gyp, "rebuild", "--release"]
  const nodeDir = process.env.npm_config_nodedir ? undefined : localNodeDir()
  if (nodeDir !== undefined) args.push(`--nodedir=${nodeDir}`)
  const result = spawnSync(process.execPath, args, { cwd: here, encoding: "utf8", timeout: 180_000 })
  if (result.status === 0) return "native block hashing built"
  // One line that names the cause: the compiler's own complaint, else node-gyp's.
  const lines = `${result.stderr ?? ""}\n${result.stdout ?? ""}`.split("\n").map((line) => line.trim())
  const reason =
    result.error?.message ??
    lines.find((line) => !line.startsWith("gyp") && /error|not found|not available/i.test(line)) ??
    lines.find((line) => line.startsWith("gyp ERR! stack Error:"))?.slice("gyp ERR! stack ".length) ??
    `node-gyp exited with ${result.status}`
  return `native block hashing not built (${reason}); using the pure implementation`
}

try {
  note(build())
} catch (error) {
  note(`native block hashing not built (${error instanceof Error ? error.message : String(error)}); using the pure implementation`)
}
