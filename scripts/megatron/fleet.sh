#!/usr/bin/env bash
# Three of Megatron-LM's real coordinators (2 engine ranks each, run_coordinator.py) behind one
# `mcore serve --coordinator A --coordinator B --coordinator C`, driven with the openai SDK
# (fleet_check.mjs): every answer exact; then one coordinator process SIGKILLed in the middle of
# a burst of unstreamed chats: every chat answered exactly by the survivors, and the survivors
# still alive (their stats files say so).
#
# Usage: scripts/megatron/fleet.sh [REF] [--protocol NAME]     (REF default refs/heads/main)
# Needs MEGATRON_GIT and a built project (pnpm build). Prints a line per check, then
# `holds: ...` or `short: ...`; exit 0 only when it holds.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
REF="refs/heads/main"
PROTOCOL=main
while [ $# -gt 0 ]; do
  case "$1" in
    --protocol) PROTOCOL="${2:?--protocol needs a name}"; shift 2 ;;
    *) REF=$1; shift ;;
  esac
done
: "${MEGATRON_GIT:?set MEGATRON_GIT to a git dir of NVIDIA/Megatron-LM}"
PY=""
for cand in "${PYTHON:-}" /usr/bin/python3 $(type -ap python3); do
  [ -n "$cand" ] && "$cand" -c "import numpy, msgpack, zmq" 2>/dev/null && { PY=$cand; break; }
done
[ -n "$PY" ] || { echo "fleet: no python3 with numpy, msgpack and pyzmq"; exit 2; }
WORK=$(mktemp -d /tmp/mcoord-fleet.XXXXXX)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
  [ -n "${KEEP:-}" ] && { echo "kept $WORK" >&2; return; }
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 143' TERM INT
S="$WORK/stage"
OUT="$S" PYTHON="$PY" bash "$HERE/stage.sh" "$REF" >/dev/null 2>"$WORK/stage.err"
[ -f "$S/.ref_kind" ] || { echo "fleet: staging $REF failed: $(tail -3 "$WORK/stage.err" | tr '\n' ' ')"; exit 2; }

ADDRS=()
for name in a b c; do
  "$PY" "$HERE/run_coordinator.py" --stage "$S" --engines 2 --policy load_balanced --step-ms 20 \
    --stats "$WORK/$name.stats.json" >"$WORK/$name.out" 2>"$WORK/$name.err" &
  PIDS+=("$!")
done
for name in a b c; do
  addr=""
  for _ in $(seq 1 300); do
    if [ "$(sed -n 2p "$WORK/$name.out" 2>/dev/null)" = ready ]; then addr=$(head -1 "$WORK/$name.out"); break; fi
    sleep 0.1
  done
  [ -n "$addr" ] || { echo "fleet: coordinator $name did not start: $(tail -3 "$WORK/$name.err" | tr '\n' ' ')"; exit 2; }
  ADDRS+=("$addr")
done
# The coordinator itself is the spawned child of run_coordinator.py (its engines are threads of the
# parent; the other child, resource_tracker, is multiprocessing's).
VICTIM=$(pgrep -P "${PIDS[1]}" -f spawn_main | head -1)
[ -n "$VICTIM" ] || { echo "fleet: no coordinator process under run_coordinator.py ${PIDS[1]}"; exit 2; }
timeout 180 node "$HERE/fleet_check.mjs" "$ROOT" "$(IFS=,; echo "${ADDRS[*]}")" --protocol "$PROTOCOL" --kill "$VICTIM"
rc=$?
sleep 0.5
for name in a c; do
  alive=$("$PY" -c 'import json,sys; c=json.load(open(sys.argv[1]))["coordinator"]; print("alive" if c["alive"] and not c.get("exception") else "died: %s" % c.get("exception"))' "$WORK/$name.stats.json")
  echo "survivor $name: $alive"
  [ "$alive" = alive ] || rc=1
done
exit $rc
