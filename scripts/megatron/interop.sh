#!/usr/bin/env bash
# The project's client against Megatron-LM's real inference coordinator at REF, in REF's dialect.
#
#   MEGATRON_GIT=<git dir of NVIDIA/Megatron-LM> scripts/megatron/interop.sh REF [--protocol NAME] [--self-only]
#
# REF: refs/pull/6497/head, refs/heads/main, core_v0.16.0 .. core_v0.19.0 (any commit of those
# lines). NAME (InferenceClient.layer({ address, protocol: NAME })) defaults from REF:
# pr-6497, main, core_v0.19, core_v0.18, core_v0.17, core_v0.16. Run from a built checkout
# (packages/client/dist); ROOT=<checkout> overrides.
# Steps, each against a fresh coordinator (run_coordinator.py, 2 engines):
#   1. stage REF (stage.sh)
#   2. harness self-check: Megatron's own Python InferenceClient from the same REF
#      (py_client_check.py). If it does not hold, the harness is broken: exit 2.
#      --self-only stops here (exit 0 if it holds).
#   3. drive_ts.mjs --protocol NAME: the project's client, only the phases the dialect has
#      (packages/protocol/DIALECTS.md, "Features"), ending with SHUTDOWN where there is one
#   4. serve_check.mjs: `mcore serve --protocol NAME` over the coordinator, called with the
#      official openai SDK (completions and chat, streamed or not, checked token for token)
# Prints what each step saw, the coordinator's fate, and last a line starting
# "megatron coordinator <ref>:" with the figure. Exit 0 only if steps 3 and 4 hold (and the
# coordinator of step 4 is alive after it).
# KEEP=1 keeps the work dir (staged tree, logs, stats) and says where.
set -u
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="${ROOT:-$(cd "$HERE/../.." && pwd)}"
REF="${1:?usage: interop.sh REF [--protocol NAME] [--self-only]}"
shift
PROTOCOL=""
SELF_ONLY=0
while [ $# -gt 0 ]; do
  case "$1" in
    --protocol) PROTOCOL="${2:?--protocol needs a name}"; shift 2 ;;
    --self-only) SELF_ONLY=1; shift ;;
    *) echo "interop.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
if [ -z "$PROTOCOL" ]; then
  case "$REF" in
    *pull/6497*) PROTOCOL=pr-6497 ;;
    *core_v0.16*|*core_r0.16*) PROTOCOL=core_v0.16 ;;
    *core_v0.17*|*core_r0.17*) PROTOCOL=core_v0.17 ;;
    *core_v0.18*|*core_r0.18*) PROTOCOL=core_v0.18 ;;
    *core_v0.19*|*core_r0.19*) PROTOCOL=core_v0.19 ;;
    *) PROTOCOL=main ;;
  esac
fi
: "${MEGATRON_GIT:?set MEGATRON_GIT to a git dir of NVIDIA/Megatron-LM (scripts/megatron/README.md says how to get one)}"
[ $SELF_ONLY -eq 1 ] || [ -f "$ROOT/packages/client/dist/index.js" ] || { echo "megatron coordinator: $ROOT/packages/client/dist/index.js missing (build the project: pnpm build)"; exit 2; }

PY=""
for cand in "${PYTHON:-}" /usr/bin/python3 $(type -ap python3); do
  [ -n "$cand" ] && "$cand" -c "import numpy, msgpack, zmq" 2>/dev/null && { PY=$cand; break; }
done
[ -n "$PY" ] || { echo "megatron coordinator: no python3 with numpy, msgpack and pyzmq (apt-get install python3-numpy python3-msgpack python3-zmq)"; exit 2; }

WORK=$(mktemp -d /tmp/mcoord-check.XXXXXX) # the staged tree, logs and stats; removed at exit
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
  PIDS=()
  [ -n "${KEEP:-}" ] && { echo "kept $WORK" >&2; return; }
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 143' TERM INT

S="$WORK/stage"
OUT="$S" PYTHON="$PY" bash "$HERE/stage.sh" "$REF" >/dev/null 2>"$WORK/stage.err"
[ -f "$S/.ref_kind" ] || { echo "megatron coordinator: staging $REF failed: $(tail -3 "$WORK/stage.err" | tr '\n' ' ')"; exit 2; }
KIND=$(cat "$S/.ref_kind")
COMMIT=$(cut -c1-10 "$S/.megatron_commit")

# start_coordinator NAME -> sets ADDR and CPID; stats in $WORK/NAME.stats.json
start_coordinator() {
  local name=$1
  "$PY" "$HERE/run_coordinator.py" --stage "$S" --engines 2 --policy load_balanced \
    --stats "$WORK/$name.stats.json" >"$WORK/$name.out" 2>"$WORK/$name.err" &
  CPID=$!
  PIDS+=("$CPID")
  ADDR=""
  for _ in $(seq 1 150); do
    if [ "$(sed -n 2p "$WORK/$name.out" 2>/dev/null)" = ready ]; then ADDR=$(head -1 "$WORK/$name.out"); break; fi
    kill -0 "$CPID" 2>/dev/null || break
    sleep 0.1
  done
  [ -n "$ADDR" ] || { echo "megatron coordinator: run_coordinator did not start: $(tail -3 "$WORK/$name.err" | tr '\n' ' ')"; exit 2; }
}
stop_coordinator() { kill "$CPID" 2>/dev/null; wait "$CPID" 2>/dev/null; }
verdict_of() { local v; v=$(grep -E '^(holds|short): ' "$1" | tail -1); echo "${v%%; first: *}"; }
fate() { # the coordinator process, from the stats file
  "$PY" - "$WORK/$1.stats.json" <<'EOF'
import json, sys
c = json.load(open(sys.argv[1]))["coordinator"]
if c["alive"] and not c.get("exception"):
    print("alive")
else:  # the exception file is written before the process has finished exiting
    exc = c.get("exception") or "no exception recorded"
    tb = (c.get("traceback") or "").strip().splitlines()
    where = next((l.strip() for l in reversed(tb) if l.strip().startswith("File ")), "")
    code = "exiting" if c["exitcode"] is None else f"exit {c['exitcode']}"
    print(f"died ({code}): {exc}" + (f" [{where}]" if where else ""))
EOF
}

# 2. harness self-check
start_coordinator self
timeout 30 "$PY" "$HERE/py_client_check.py" --stage "$S" "$ADDR" --stats "$WORK/self.stats.json" >"$WORK/self.log" 2>&1
src=$?
stop_coordinator
self_line=$(grep -E '^\{' "$WORK/self.log" | tail -1)
echo "harness self-check (Megatron's own InferenceClient at $REF, $KIND): $(tail -1 "$WORK/self.log") $self_line"
if [ $src -ne 0 ]; then
  grep '^FAIL' "$WORK/self.log" | head -5
  echo "megatron coordinator $REF ($COMMIT): harness broken (Megatron's own client does not hold); nothing said about the project"
  exit 2
fi

[ $SELF_ONLY -eq 1 ] && { echo "megatron coordinator $REF ($COMMIT, $KIND): harness self-check holds"; exit 0; }

# 3. the project's client, in the dialect
MEDIA=off
[ "$PROTOCOL" = main ] && MEDIA=on
start_coordinator ts
timeout 70 node "$HERE/drive_ts.mjs" "$ROOT" "$ADDR" --protocol "$PROTOCOL" --stats "$WORK/ts.stats.json" --media "$MEDIA" --shutdown ${DRIVE_ARGS:-} >"$WORK/ts.log" 2>&1
trc=$?
sleep 0.2
ts_fate=$(fate ts)
stop_coordinator
grep -E '^phase ' "$WORK/ts.log"
grep -E '^PROBLEM' "$WORK/ts.log" | head -4
summary=$(grep -E '^\{' "$WORK/ts.log" | tail -1 | "$PY" -c '
import json, sys
try:
    d = json.loads(sys.stdin.read())
    print(json.dumps({k: d[k] for k in ("requests", "correct", "wrong", "errors", "hung", "checks")}))
except ValueError:
    pass')
verdict=$(grep -E '^(holds|short): ' "$WORK/ts.log" | tail -1)
[ -n "$verdict" ] || { verdict="short: the driver printed no verdict (exit $trc)"; tail -5 "$WORK/ts.log"; }
echo "summary: ${summary:-none}"
echo "coordinator after the run: $ts_fate"
grep -m1 -E '^(TypeError|ValueError|AssertionError|KeyError|[A-Za-z]+Error):' "$WORK/ts.err" | sed 's/^/coordinator stderr: /'

# 4. the project's server (mcore serve) over a fresh coordinator, called with the openai SDK
start_coordinator serve
timeout 90 node "$HERE/serve_check.mjs" "$ROOT" "$ADDR" --protocol "$PROTOCOL" >"$WORK/serve.log" 2>&1
serve_rc=$?
serve_fate=$(fate serve)
stop_coordinator
grep -E '^FAIL' "$WORK/serve.log" | head -4
serve_verdict=$(grep -E '^(holds|short): ' "$WORK/serve.log" | tail -1)
[ -n "$serve_verdict" ] || { serve_verdict="short: no verdict (exit $serve_rc)"; tail -5 "$WORK/serve.log"; }
echo "mcore serve --protocol $PROTOCOL over it: $serve_verdict; coordinator ${serve_fate%% \[File *}"

figure="${verdict#holds: }"
figure="${figure#short: }"
figure="${figure%%; first: *}"
if [ $trc -eq 0 ] && [ "${verdict%%:*}" = holds ] && [ $serve_rc -eq 0 ] && [ "$serve_fate" = alive ]; then
  echo "megatron coordinator $REF ($COMMIT, $KIND) with --protocol $PROTOCOL: holds: $figure"
  exit 0
fi
echo "megatron coordinator $REF ($COMMIT, $KIND) with --protocol $PROTOCOL: short: $figure; coordinator ${ts_fate%% \[File *}"
exit 1
