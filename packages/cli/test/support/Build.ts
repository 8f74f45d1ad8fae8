/**
 * The tests run the built command, so it must be built from the current sources. `pnpm test`
 * builds first (`tsc -b`); run on their own, the tests build what is stale themselves, one test
 * file at a time (a lock directory keeps parallel test files from building at once).
 */
import { execFileSync } from "node:child_process"
import { existsSync, mkdirSync, readdirSync, rmdirSync, statSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { main } from "./Mcore.ts"

const root = fileURLToPath(new URL("../../../../", import.meta.url))
const packages = ["protocol", "coordinator", "client", "testkit", "text", "server", "cli"]
const lock = join(root, "packages", "cli", "build", ".test-build-lock")

const newestSource = (dir: string): number => {
  let newest = 0
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    newest = Math.max(newest, entry.isDirectory() ? newestSource(path) : statSync(path).mtimeMs)
  }
  return newest
}

const builtAt = (pkg: string): number => {
  const info = join(root, "packages", pkg, "dist", ".tsbuildinfo")
  return existsSync(info) ? statSync(info).mtimeMs : 0
}

const stale = (): boolean =>
  !existsSync(main) || packages.some((pkg) => newestSource(join(root, "packages", pkg, "src")) > builtAt(pkg))

const sleep = (millis: number) => new Promise((resolve) => setTimeout(resolve, millis))

/** Builds `packages/cli` and what it references when any of their sources is newer than its build. */
export const ensureBuilt = async (): Promise<void> => {
  if (!stale()) return
  mkdirSync(join(root, "packages", "cli", "build"), { recursive: true })
  const deadline = Date.now() + 240_000
  for (;;) {
    try {
      mkdirSync(lock)
      break
    } catch {
      // A lock left by a run that was killed mid-build is taken over after 5 minutes.
      if (existsSync(lock) && statSync(lock).mtimeMs < Date.now() - 300_000) rmdirSync(lock)
      else if (Date.now() > deadline) throw new Error(`another test file held ${lock} for 4 minutes`)
      await sleep(200)
    }
  }
  try {
    if (stale()) {
      execFileSync(process.execPath, [join(root, "node_modules", "typescript", "bin", "tsc"), "-b", "packages/cli"], {
        cwd: root,
        stdio: "inherit",
        timeout: 240_000
      })
    }
  } finally {
    rmdirSync(lock)
  }
}
