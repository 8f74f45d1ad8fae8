#!/usr/bin/env bash
# Issue 27's check against Megatron-LM's real coordinators at REF: three coordinators (each with
# 2 engines, run_coordinator.py) behind one server, called with the `openai` SDK, every answer
# exact; one coordinator process SIGKILLed mid-burst (fleet_check.mjs says what must hold).
#
#   MEGATRON_GIT=<git dir of NVIDIA/Megatron-LM> scripts/megatron/fleet.sh REF [ROOT]
#       [--protocol NAME] [--routing POLICY] [--coordinators N] [--step-ms MS] [--rejoin MS]
#       [--two-servers MS] [--members]
#
# ROOT: a built checkout (default this one); the server is its `mcore serve --coordinator ...`
# when that has --routing, else lib_serve.mjs (its Fleet.layer under Server.layer). NAME
# defaults to main (the ref's dialect: see interop.sh). --step-ms (default 20): each engine
# step, so that a 40-token answer takes about 0.8 s and the kill lands mid-burst. --rejoin MS:
# then restart the killed coordinator's harness on its port, its engines registering MS after
# the bind (fleet_check.mjs's rejoin phase). --two-servers MS: instead of fleet_check.mjs,
# fleet_rejoin.mjs: two `mcore serve` over the fleet, one coordinator killed and restarted with
# its engines registering MS after the bind, then a burst through each (needs the CLI's fleet).
# --members: instead of fleet_check.mjs, fleet_members.mjs (issue 45): a server over
# --coordinators-file following the file as a coordinator is added and one removed mid-burst,
# then a rolling restart of two servers behind a balancer that reads /ready.
# Prints what fleet_check.mjs saw, then `fleet REF: holds|short ...`; exit 0 only if it holds,
# 2 if the set-up is broken. KEEP=1 keeps the work dir (logs, stats).
set -u
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REF="${1:?usage: fleet.sh REF [ROOT] [--protocol NAME] [--routing POLICY] [--coordinators N] [--step-ms MS] [--rejoin MS] [--two-servers MS] [--members]}"
shift
ROOT="$(cd "$HERE/../.." && pwd)"
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then ROOT="$(cd "$1" && pwd)"; shift; fi
PROTOCOL=main ROUTING="" N=3 STEP_MS=20 REJOIN="" TWO="" MEMBERS=""
while [ $# -gt 0 ]; do
  case "$1" in
    --protocol) PROTOCOL="$2"; shift 2 ;;
    --routing) ROUTING="$2"; shift 2 ;;
    --coordinators) N="$2"; shift 2 ;;
    --step-ms) STEP_MS="$2"; shift 2 ;;
    --rejoin) REJOIN="$2"; shift 2 ;;
    --two-servers) TWO="$2"; shift 2 ;;
    --members) MEMBERS=1; shift ;;
    *) echo "fleet.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
# A restarted coordinator's harness (fleet_rejoin.mjs, fleet_check.mjs's rejoin) is stopped too.
before_cleanup() { [ -f "$WORK/restarted.pid" ] && PIDS+=("$(cat "$WORK/restarted.pid")"); }
# shellcheck source=harness.sh
. "$HERE/harness.sh"
harness_setup fleet packages/client/dist/index.js packages/server/dist/index.js packages/cli/dist/main.js

ADDRS=() STATS=()
for i in $(seq 0 $((N - 1))); do
  "$PY" "$HERE/run_coordinator.py" --stage "$S" --engines 2 --step-ms "$STEP_MS" \
    --stats "$WORK/c$i.stats.json" >"$WORK/c$i.out" 2>"$WORK/c$i.err" &
  PIDS+=("$!")
  STATS+=("$WORK/c$i.stats.json")
done
for i in $(seq 0 $((N - 1))); do
  addr=""
  for _ in $(seq 1 200); do
    if [ "$(sed -n 2p "$WORK/c$i.out" 2>/dev/null)" = ready ]; then addr=$(head -1 "$WORK/c$i.out"); break; fi
    sleep 0.1
  done
  [ -n "$addr" ] || { echo "fleet: coordinator $i did not start: $(tail -3 "$WORK/c$i.err" | tr '\n' ' ')"; exit 2; }
  ADDRS+=("$addr")
done
echo "fleet: $REF ($COMMIT), $N coordinators x 2 engines (step $STEP_MS ms): ${ADDRS[*]}; project at $ROOT ($(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null))"
join() { local IFS=,; echo "$*"; }
if [ -n "$MEMBERS" ]; then
  timeout 240 node "$HERE/fleet_members.mjs" "$ROOT" --protocol "$PROTOCOL" --coordinators "$(join "${ADDRS[@]}")" \
    --stats "$(join "${STATS[@]}")" --work "$WORK" --python "$PY" --stage "$S" --step-ms "$STEP_MS" >"$WORK/check.log" 2>&1
elif [ -n "$TWO" ]; then
  timeout 240 node "$HERE/fleet_rejoin.mjs" "$ROOT" --protocol "$PROTOCOL" --coordinators "$(join "${ADDRS[@]}")" \
    --stats "$(join "${STATS[@]}")" --runner-pids "$(join "${PIDS[@]}")" --python "$PY" --stage "$S" --work "$WORK" \
    --register-delay-ms "$TWO" --step-ms "$STEP_MS" >"$WORK/check.log" 2>&1
else
timeout 240 node "$HERE/fleet_check.mjs" "$ROOT" --protocol "$PROTOCOL" --coordinators "$(join "${ADDRS[@]}")" \
  --stats "$(join "${STATS[@]}")" ${ROUTING:+--routing "$ROUTING"} \
  ${REJOIN:+--rejoin "$REJOIN" --python "$PY" --stage "$S" --step-ms "$STEP_MS" --runner-pids "$(join "${PIDS[@]}")" --work "$WORK"} \
  >"$WORK/check.log" 2>&1
fi
rc=$?
grep -v '^{' "$WORK/check.log"
for i in $(seq 0 $((N - 1))); do
  grep -m1 -E '^(TypeError|ValueError|AssertionError|KeyError|zmq\.|[A-Za-z]+Error):' "$WORK/c$i.err" | sed "s/^/coordinator $i stderr: /"
done
verdict=$(grep -E '^(holds|short): ' "$WORK/check.log" | tail -1)
[ -n "$verdict" ] || { verdict="short: fleet_check.mjs printed no verdict (exit $rc)"; tail -5 "$WORK/check.log"; }
echo "fleet $REF ($COMMIT) with --protocol $PROTOCOL: $verdict"
[ $rc -eq 0 ] && [ "${verdict%%:*}" = holds ]
