#!/usr/bin/env bash
# Issue 28's check against Megatron-LM's real coordinators at REF: a prefill and a decode
# coordinator (2 engines each, run_coordinator.py; fake_engine.py hands off as Megatron main's
# engines do) behind one server, called with the `openai` SDK (disagg_check.mjs says what must
# hold: every answer exact, blocks pinned == released, every release after the decode's output).
#
#   MEGATRON_GIT=<git dir of NVIDIA/Megatron-LM> scripts/megatron/disagg.sh REF [ROOT]
#       [--protocol NAME] [--step-ms MS] [--requests N] [--kill-decode] [--prefills N] [--decodes M]
#
# ROOT: a built checkout (default this one); the server is its `mcore serve
# --prefill-coordinator P --decode-coordinator D` when that has the flags, else lib_serve.mjs
# (Disaggregated.layer under Server.layer). NAME defaults to main. --step-ms (default 10). --requests N (default 32): the
# size of each of disagg_check.mjs's bursts. --kill-decode: then its decode-lost phase (D's
# coordinator SIGKILLed mid-burst, the server's --decode-grace 2s). --prefills N --decodes M
# (default 1 each): pools of coordinators (the server's flags repeated).
# Prints what disagg_check.mjs saw, then `disagg REF: holds|short ...`; exit 0 only if it holds,
# 2 if the set-up is broken. KEEP=1 keeps the work dir (logs, stats with the hand-off timeline).
set -u
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REF="${1:?usage: disagg.sh REF [ROOT] [--protocol NAME] [--step-ms MS] [--requests N] [--kill-decode] [--prefills N] [--decodes M]}"
shift
ROOT="$(cd "$HERE/../.." && pwd)"
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then ROOT="$(cd "$1" && pwd)"; shift; fi
PROTOCOL=main STEP_MS=10 REQUESTS=32 KILL="" NP=1 ND=1
while [ $# -gt 0 ]; do
  case "$1" in
    --protocol) PROTOCOL="$2"; shift 2 ;;
    --step-ms) STEP_MS="$2"; shift 2 ;;
    --requests) REQUESTS="$2"; shift 2 ;;
    --kill-decode) KILL=1; shift ;;
    --prefills) NP="$2"; shift 2 ;;
    --decodes) ND="$2"; shift 2 ;;
    *) echo "disagg.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
# shellcheck source=harness.sh
. "$HERE/harness.sh"
harness_setup disagg packages/client/dist/index.js packages/server/dist/index.js packages/cli/dist/main.js

ROLES=()
for i in $(seq 0 $((NP - 1))); do ROLES+=("prefill$i"); done
for i in $(seq 0 $((ND - 1))); do ROLES+=("decode$i"); done
declare -A ADDR
for role in "${ROLES[@]}"; do
  "$PY" "$HERE/run_coordinator.py" --stage "$S" --engines 2 --step-ms "$STEP_MS" --prefix-caching on \
    --stats "$WORK/$role.stats.json" >"$WORK/$role.out" 2>"$WORK/$role.err" &
  PIDS+=("$!")
done
for role in "${ROLES[@]}"; do
  addr=""
  for _ in $(seq 1 200); do
    if [ "$(sed -n 2p "$WORK/$role.out" 2>/dev/null)" = ready ]; then addr=$(head -1 "$WORK/$role.out"); break; fi
    sleep 0.1
  done
  [ -n "$addr" ] || { echo "disagg: the $role coordinator did not start: $(tail -3 "$WORK/$role.err" | tr '\n' ' ')"; exit 2; }
  ADDR[$role]=$addr
done
list() { # list prefill|decode FIELD: the pool's addresses or stats files, comma-separated
  local out="" role
  for role in "${ROLES[@]}"; do
    [[ $role == "$1"* ]] || continue
    if [ "$2" = addr ]; then out+="${out:+,}${ADDR[$role]}"; else out+="${out:+,}$WORK/$role.stats.json"; fi
  done
  echo "$out"
}
echo "disagg: $REF ($COMMIT), prefill $(list prefill addr) and decode $(list decode addr), 2 engines each (step $STEP_MS ms, prefix caching on); project at $ROOT ($(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null))"
timeout 300 node "$HERE/disagg_check.mjs" "$ROOT" --protocol "$PROTOCOL" --prefill "$(list prefill addr)" --decode "$(list decode addr)" \
  --requests "$REQUESTS" ${KILL:+--kill-decode 1 --decode-grace 2} --prefill-stats "$(list prefill stats)" --decode-stats "$(list decode stats)" >"$WORK/check.log" 2>&1
rc=$?
grep -v '^{' "$WORK/check.log"
for role in "${ROLES[@]}"; do
  grep -m1 -E '^(TypeError|ValueError|AssertionError|KeyError|RuntimeError|NotImplementedError|zmq\.|[A-Za-z]+Error):' "$WORK/$role.err" | sed "s/^/$role stderr: /"
done
verdict=$(grep -E '^(holds|short): ' "$WORK/check.log" | tail -1)
[ -n "$verdict" ] || { verdict="short: disagg_check.mjs printed no verdict (exit $rc)"; tail -5 "$WORK/check.log"; }
echo "disagg $REF ($COMMIT) with --protocol $PROTOCOL: $verdict"
[ $rc -eq 0 ] && [ "${verdict%%:*}" = holds ]
