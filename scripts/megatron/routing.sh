#!/usr/bin/env bash
# The project's coordinator routes as Megatron-LM's does at REF: one request sequence, each
# request's engine, Megatron's coordinator against ours, request by request.
#
#   MEGATRON_GIT=<git dir of NVIDIA/Megatron-LM> scripts/megatron/routing.sh REF [ROOT]
#       [--protocol NAME] [--policies P,Q] [--engines N] [--max-requests M] [--requests K] [--no-short]
#
# For each policy (default longest_prefix,first_prefix_block): Megatron's coordinator at REF
# (run_coordinator.py, N engines, default 3), then ours (`mcore coordinator --external-engines N`
# from ROOT's build, REF's engine ranks dialing it: run_coordinator.py --external), both with
# prefix caching on, blocks of 16 tokens, max_requests M (default 64: below it, an engine's free capacity counts against a shallow match) and alpha 0.5, engines
# stepping every 20 ms. routing_check.mjs sends each the same K requests (default 120) whose
# prompts share prefixes of every depth, none finishing while the sequence runs, and reads where
# each went from the engines' stats; then compares. Every 17th prompt is shorter than a block (no
# hashes): the least-loaded engine for ours at every ref and Megatron's from core_v0.19 on, the
# next in turn for Megatron's core_v0.16 to 0.18 (a deliberate difference, packages/coordinator/
# README.md); --no-short leaves them out, so that those refs' formula for hashed requests is
# compared alone. Prints one line per policy and last
# `routing REF: holds|short`; exit 0 only if every policy holds, 2 if the set-up is broken.
# OURS_ARGS: more flags for ours, split on spaces (`--alpha 0.9` must make it short: the check
# can fail). KEEP=1 keeps the work dir.
set -u
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REF="${1:?usage: routing.sh REF [ROOT] [--protocol NAME] [--policies P,Q] [--engines N] [--max-requests M] [--requests K]}"
shift
ROOT="$(cd "$HERE/../.." && pwd)"
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then ROOT="$(cd "$1" && pwd)"; shift; fi
PROTOCOL=main POLICIES=longest_prefix,first_prefix_block N=3 M=64 K=120 BLOCK=16 STEP_MS=20 SHORT=1
while [ $# -gt 0 ]; do
  case "$1" in
    --protocol) PROTOCOL="$2"; shift 2 ;;
    --policies) POLICIES="$2"; shift 2 ;;
    --engines) N="$2"; shift 2 ;;
    --max-requests) M="$2"; shift 2 ;;
    --requests) K="$2"; shift 2 ;;
    --no-short) SHORT=0; shift ;;
    *) echo "routing.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
# shellcheck source=harness.sh
. "$HERE/harness.sh"
harness_setup routing packages/client/dist/index.js packages/cli/dist/main.js
node "$HERE/codepoint_tokenizer.mjs" "$WORK/codepoints"
echo "routing: $REF ($COMMIT), $N engines, max_requests $M, blocks of $BLOCK, $K requests$([ "$SHORT" = 0 ] && echo ", none shorter than a block"); project at $ROOT ($(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null))"

# harness NAME POLICY [ADDR]: REF's engines (and, without ADDR, Megatron's coordinator); sets ADDR.
harness() {
  local name=$1 policy=$2 external=()
  [ $# -gt 2 ] && external=(--external "$3")
  HARNESS_HOLD_REQUESTS=1 "$PY" "$HERE/run_coordinator.py" --stage "$S" --engines "$N" --policy "$policy" --max-requests "$M" \
    --block-size "$BLOCK" --step-ms "$STEP_MS" "${external[@]}" --stats "$WORK/$name.stats.json" \
    >"$WORK/$name.out" 2>"$WORK/$name.err" &
  PIDS+=("$!")
  for _ in $(seq 1 200); do
    [ "$(sed -n 2p "$WORK/$name.out" 2>/dev/null)" = ready ] && { ADDR=$(head -1 "$WORK/$name.out"); return; }
    sleep 0.1
  done
  echo "routing: run_coordinator.py ($name) did not start: $(tail -3 "$WORK/$name.err" | tr '\n' ' ')"; exit 2
}

# shellcheck disable=SC2086
# ours NAME POLICY: our coordinator, then REF's engines dialing it; sets ADDR to ours.
ours() {
  local name=$1 policy=$2
  node "$ROOT/packages/cli/dist/main.js" coordinator --protocol "$PROTOCOL" --external-engines "$N" \
    --block-size "$BLOCK" --policy "$policy" --max-requests "$M" --tokenizer "$WORK/codepoints" ${OURS_ARGS:-} \
    >"$WORK/$name.ours.out" 2>"$WORK/$name.ours.err" &
  PIDS+=("$!")
  for _ in $(seq 1 150); do
    [ "$(sed -n 2p "$WORK/$name.ours.out" 2>/dev/null)" = "protocol $PROTOCOL" ] && break
    sleep 0.1
  done
  local address
  address=$(head -1 "$WORK/$name.ours.out")
  [ -n "$address" ] || { echo "routing: our coordinator did not start: $(tail -3 "$WORK/$name.ours.err" | tr '\n' ' ')"; exit 2; }
  harness "$name" "$policy" "$address"
  for _ in $(seq 1 150); do
    grep -q "^coordinator: $N engine(s) registered" "$WORK/$name.ours.out" && { ADDR=$address; return; }
    sleep 0.1
  done
  echo "routing: the engines did not register with ours: $(tail -3 "$WORK/$name.ours.out" | tr '\n' ' ')"; exit 2
}

drive() { # drive NAME: the sequence to $ADDR; the route in $WORK/NAME.route.json
  timeout 120 node "$HERE/routing_check.mjs" "$ROOT" --address "$ADDR" --protocol "$PROTOCOL" --stats "$WORK/$1.stats.json" \
    --engines "$N" --block-size "$BLOCK" --requests "$K" --short "$SHORT" --out "$WORK/$1.route.json" >"$WORK/$1.drive.log" 2>&1 ||
    { echo "routing: driving $1 failed: $(tail -3 "$WORK/$1.drive.log" | tr '\n' ' ')"; exit 2; }
}

FAILED=0
for policy in ${POLICIES//,/ }; do
  harness "megatron-$policy" "$policy"
  drive "megatron-$policy"
  harness_stop
  ours "ours-$policy" "$policy"
  drive "ours-$policy"
  harness_stop
  line=$(node "$HERE/routing_check.mjs" "$ROOT" --compare "$WORK/megatron-$policy.route.json,$WORK/ours-$policy.route.json")
  rc=$?
  echo "policy $policy: $(echo "$line" | tr '\n' ' ')"
  [ $rc -eq 0 ] || FAILED=1
done
if [ $FAILED -eq 0 ]; then echo "routing $REF ($COMMIT): holds"; else echo "routing $REF ($COMMIT): short"; fi
exit $FAILED
