#!/usr/bin/env bash
# Uses the packages the way another project would, to check that they are packaged right:
#
#   1. builds the workspace (tsc -b) and packs every package with `pnpm pack` (what `pnpm publish`
#      would upload: dist, types, exports without the workspace-only "source" condition,
#      `workspace:*` replaced by versions, `effect` a peer dependency);
#   2. in a throwaway project in a temp dir, outside the workspace, installs the tarballs with npm
#      (plus `effect` itself, as a user provides the peer dependency), and checks that the install
#      holds one copy of `effect`;
#   3. type-checks the main examples of packages/client/README.md and packages/testkit/README.md
#      against the installed type declarations, then runs them: the client's against the packed
#      `mcore coordinator` (started from the installed bin in the example's `protocol`, its address
#      read from --address-file, stopped with SIGTERM, which must exit 143), the testkit's on its
#      own cluster.
#
# It needs the npm registry (for effect, zeromq, msgpackr, typescript, ...) and nothing else, so
# it is not part of `pnpm test`. Run it from anywhere: scripts/pack-check.sh. KEEP=1 keeps the
# temp dir for a look afterwards.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/mcore-pack-check.XXXXXX")
packages=(protocol coordinator client testkit text server cli)
coordinator=""

cleanup() {
  if [[ -n "$coordinator" ]] && kill -0 "$coordinator" 2>/dev/null; then kill -KILL "$coordinator" 2>/dev/null || true; fi
  if [[ "${KEEP:-}" == "1" ]]; then echo "pack-check: kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

step() { echo "pack-check: $*"; }
fail() { echo "pack-check: FAILED: $*" >&2; exit 1; }

# The first ```ts block after "## The main example" in a README.
example() {
  awk '/^## The main example/ { section = 1 } section && /^```ts$/ { inside = 1; next } inside && /^```$/ { exit } inside { print }' "$1"
}

step "building the workspace"
(cd "$root" && npx tsc -b)

step "packing ${packages[*]}"
mkdir -p "$work/tarballs" "$work/app"
for pkg in "${packages[@]}"; do
  (cd "$root/packages/$pkg" && npx --yes pnpm@10.34.9 pack --pack-destination "$work/tarballs" >/dev/null)
done
for pkg in "${packages[@]}"; do
  tarball="$work/tarballs/mcore-effect-$pkg-0.1.0.tgz"
  [[ -f "$tarball" ]] || fail "no tarball for $pkg"
  listing=$(tar tzf "$tarball")
  grep -qx "package/dist/index.js\|package/dist/main.js" <<<"$listing" || fail "$pkg: no dist entry point in the tarball"
  if [[ "$pkg" != cli ]]; then
    grep -qx "package/dist/index.d.ts" <<<"$listing" || fail "$pkg: no type declarations in the tarball"
    manifest=$(tar xzf "$tarball" -O package/package.json)
    node -e '
      const m = JSON.parse(process.argv[1])
      const problems = []
      if (m.peerDependencies?.effect === undefined) problems.push("effect is not a peer dependency")
      if (m.dependencies?.effect !== undefined) problems.push("effect is a dependency")
      if (JSON.stringify(m.exports).includes("source")) problems.push("exports keep the workspace-only source condition")
      if (JSON.stringify(m).includes("workspace:")) problems.push("a workspace: range is left")
      if (problems.length > 0) { console.error(`${m.name}: ${problems.join("; ")}`); process.exit(1) }
    ' "$manifest" || fail "$pkg: package.json is not publishable"
  fi
done

step "installing the tarballs into $work/app (npm, from the registry for everything else)"
cd "$work/app"
node -e '
  const [tarballs, packages] = [process.argv[1], process.argv[2].split(" ")]
  const dependencies = { effect: "4.1.0", "@effect/platform-node": "4.1.0" }
  for (const pkg of packages) dependencies[`@mcore-effect/${pkg}`] = `file:${tarballs}/mcore-effect-${pkg}-0.1.0.tgz`
  const manifest = { name: "pack-check", private: true, type: "module", dependencies, devDependencies: { typescript: "7.0.2" } }
  require("node:fs").writeFileSync("package.json", JSON.stringify(manifest, null, 2))
  require("node:fs").writeFileSync("tsconfig.json", JSON.stringify({
    compilerOptions: { target: "ES2022", module: "NodeNext", moduleResolution: "NodeNext", strict: true, skipLibCheck: true, outDir: "out", types: [] },
    include: ["*.ts"]
  }, null, 2))
' "$work/tarballs" "${packages[*]}"
npm install --no-audit --no-fund --loglevel=error >"$work/npm-install.log" 2>&1 || { cat "$work/npm-install.log" >&2; fail "npm install"; }
copies=$(find node_modules -path '*node_modules/effect/package.json' | wc -l)
[[ "$copies" == "1" ]] || fail "$copies copies of effect installed: $(find node_modules -path '*node_modules/effect/package.json')"

step "type-checking the README examples against the installed declarations"
example "$root/packages/client/README.md" >client-example.ts
example "$root/packages/testkit/README.md" >testkit-example.ts
[[ -s client-example.ts && -s testkit-example.ts ]] || fail "a README has no main example"
cat >>testkit-example.ts <<'EOF'

// Added by pack-check: run it, and compare what the engines generated with what they should.
const outcome = await Effect.runPromise(program)
const generated = JSON.stringify(outcome.reply.generated_tokens)
if (generated !== JSON.stringify(outcome.expected)) {
  throw new Error(`generated ${generated}, expected ${JSON.stringify(outcome.expected)}`)
}
console.log(`testkit example: generated ${generated}`)
EOF
grep -q 'tcp://127.0.0.1:5555' client-example.ts || fail "the client example no longer connects to tcp://127.0.0.1:5555"
# The client has no default dialect: the example names one, and the coordinator below speaks it.
protocol=$(grep -o 'protocol: "[a-z0-9_.-]*"' client-example.ts | head -n 1 | cut -d'"' -f2)
[[ -n "$protocol" ]] || fail "the client example names no protocol"
npx tsc -p . || fail "the README examples do not type-check against the packed packages"

step "running the testkit example"
node out/testkit-example.js

step "running the client example against the packed mcore coordinator"
node_modules/.bin/mcore coordinator --protocol "$protocol" --address-file "$work/address" >"$work/coordinator.log" 2>&1 &
coordinator=$!
for _ in $(seq 1 300); do [[ -s "$work/address" ]] && break; sleep 0.1; done
[[ -s "$work/address" ]] || { cat "$work/coordinator.log" >&2; fail "mcore coordinator wrote no address within 30 s"; }
address=$(head -n 1 "$work/address")
sed -i "s|tcp://127.0.0.1:5555|$address|" out/client-example.js
output=$(timeout 60 node out/client-example.js 2>&1) || { echo "$output" >&2; fail "the client example failed"; }
head -n 3 <<<"$output"
echo "... ($(wc -l <<<"$output") lines)"
grep -q 'finished' <<<"$output" && grep -q 'Final' <<<"$output" || fail "the client example did not log its reply and its stream"

kill -TERM "$coordinator"
set +e
wait "$coordinator"
code=$?
set -e
coordinator=""
[[ "$code" == "143" ]] || { cat "$work/coordinator.log" >&2; fail "mcore coordinator exited with $code on SIGTERM, not 143"; }
[[ ! -e "$work/address" ]] || fail "mcore coordinator left its --address-file behind"

step "ok: the packed packages install, type-check and run outside the workspace"
