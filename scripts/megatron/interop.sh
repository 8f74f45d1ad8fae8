#!/usr/bin/env bash
# The project's client against Megatron-LM's real inference coordinator at REF, in REF's dialect.
#
#   MEGATRON_GIT=<git dir of NVIDIA/Megatron-LM> scripts/megatron/interop.sh REF [--protocol NAME]
#       [--only PHASES] [--skip PHASES] [--self-only] [--ours]
#
# REF: refs/pull/6497/head, refs/heads/main, refs/pull/6639/head, core_v0.16.0 .. core_v0.19.0
# (any commit of those lines). NAME (InferenceClient.layer({ address, protocol: NAME })) defaults
# from REF: pr-6497, main, core_v0.19, core_v0.18, core_v0.17, core_v0.16 (PR 6639 and any other
# ref: main). Run from a built checkout (packages/client/dist, packages/cli/dist); ROOT=<checkout>
# overrides.
# Phases (PHASES: a comma list; default all; INTEROP_ONLY / INTEROP_SKIP in the environment give
# the defaults of --only / --skip), each against fresh coordinators (run_coordinator.py, 2
# engines), after staging REF (stage.sh):
#   self        harness self-check: Megatron's own Python InferenceClient from the same REF
#               (py_client_check.py). If it does not hold, the harness is broken: exit 2.
#               --self-only is --only self.
#   client      drive_ts.mjs --protocol NAME: the project's client, only the phases the dialect
#               has (packages/protocol/DIALECTS.md, "Features"), ending with SHUTDOWN where there
#               is one; media only where REF's coordinator reads multi_modal_data
#   serve       serve_check.mjs: `mcore serve --protocol NAME` over the coordinator, called with
#               the official openai SDK (completions and chat, streamed or not, checked token for
#               token); the coordinator must be alive after it
#   no-dialect  no_dialect.mjs: `mcore generate`, `mcore control pause`, `mcore serve
#               --coordinator` and a library program (InferenceClient.layer({ address })), each
#               without a dialect (MCORE_PROTOCOL unset) against a fresh coordinator: each must
#               fail before opening a socket (exit 2 naming the dialects / a typed failure), and
#               then the coordinator must be alive and serve 200 requests in NAME (drive_ts.mjs
#               --only submit) correctly
#   hosted      serve_check.mjs --hosted: `mcore serve --engines-listen`, the server as the
#               coordinator, with REF's engine ranks (run_coordinator.py --external, a process
#               per rank) dialing it: the serve phase's checks; where NAME has ABORT_REQUEST a
#               stream given up by its HTTP client arriving as an ABORT_REQUEST at an engine;
#               with Megatron's engine methods (main, PR 6497) rank 0 SIGKILLed mid-stream (no
#               coordinator process of either side, so --ours changes nothing here)
# --ours: the same phases against the project's coordinator instead of Megatron's: `mcore
# coordinator --protocol NAME --external-engines 2` (packages/cli/dist), with REF's engine code
# (fake_engine.py, Megatron's own engine methods) dialing it as Megatron's engines do with
# launch_inference_coordinator=False (run_coordinator.py --external), so that Megatron's own
# client (self) and engines judge it; its tokenizer is the harness's CodepointTokenizer as a
# Hugging Face directory (codepoint_tokenizer.mjs). The releases' engines are legacy_engine.py's,
# as against Megatron's coordinator.
# Prints what each phase saw, the coordinators' fate, one `phase P: holds|short: ...` line per
# phase run, and last a line starting "megatron coordinator <ref>" with the verdict. Exit 0 only
# if every phase run holds; 1 if one is short; 2 if the harness or the set-up is broken.
# KEEP=1 keeps the work dir (staged tree, logs, stats) and says where.
set -u
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="${ROOT:-$(cd "$HERE/../.." && pwd)}"
REF="${1:?usage: interop.sh REF [--protocol NAME] [--only PHASES] [--skip PHASES] [--self-only]}"
shift
PROTOCOL=""
COORD=megatron
ONLY="${INTEROP_ONLY:-}"
SKIP="${INTEROP_SKIP:-}"
PHASES_ALL="self,client,serve,no-dialect,hosted"
while [ $# -gt 0 ]; do
  case "$1" in
    --protocol) PROTOCOL="${2:?--protocol needs a name}"; shift 2 ;;
    --only) ONLY="${2:?--only needs phases: $PHASES_ALL}"; shift 2 ;;
    --skip) SKIP="${2:?--skip needs phases: $PHASES_ALL}"; shift 2 ;;
    --self-only) ONLY=self; shift ;;
    --ours) COORD=ours; shift ;;
    *) echo "interop.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
for p in ${ONLY//,/ } ${SKIP//,/ }; do
  case ",$PHASES_ALL," in *",$p,"*) ;; *) echo "interop.sh: unknown phase $p (phases: $PHASES_ALL)" >&2; exit 2 ;; esac
done
wants() { # wants PHASE: selected by --only (or all) and not by --skip
  { [ -z "$ONLY" ] || [[ ",$ONLY," == *",$1,"* ]]; } && [[ ",$SKIP," != *",$1,"* ]]
}
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
if wants client || wants serve || wants no-dialect || wants hosted || [ "$COORD" = ours ]; then
  for built in packages/client/dist/index.js packages/cli/dist/main.js; do
    [ -f "$ROOT/$built" ] || { echo "megatron coordinator: $ROOT/$built missing (build the project: pnpm build)"; exit 2; }
  done
fi
# shellcheck source=harness.sh
. "$HERE/harness.sh"
harness_setup "megatron coordinator" # the staged tree, logs and stats in WORK; removed at exit

# start_coordinator NAME -> sets ADDR and CPID; stats in $WORK/NAME.stats.json
start_coordinator() {
  local name=$1 target=()
  OPID=""
  if [ "$COORD" = ours ]; then
    # The project's coordinator first; REF's engines dial it once its address is known.
    [ -d "$WORK/codepoints" ] || node "$HERE/codepoint_tokenizer.mjs" "$WORK/codepoints"
    # OURS_ARGS: more flags for it (e.g. `--transport zeromq`), split on spaces.
    # shellcheck disable=SC2086
    node "$ROOT/packages/cli/dist/main.js" coordinator --protocol "$PROTOCOL" --external-engines 2 --block-size 16 \
      --tokenizer "$WORK/codepoints" ${OURS_ARGS:-} >"$WORK/$name.ours.out" 2>"$WORK/$name.ours.err" &
    OPID=$!
    PIDS+=("$OPID")
    for _ in $(seq 1 150); do
      [ "$(sed -n 2p "$WORK/$name.ours.out" 2>/dev/null)" = "protocol $PROTOCOL" ] && break
      kill -0 "$OPID" 2>/dev/null || break
      sleep 0.1
    done
    [ "$(sed -n 2p "$WORK/$name.ours.out" 2>/dev/null)" = "protocol $PROTOCOL" ] ||
      { echo "our coordinator did not start: $(tail -3 "$WORK/$name.ours.err" | tr '\n' ' ')"; exit 2; }
    target=(--external "$(head -1 "$WORK/$name.ours.out")")
  fi
  "$PY" "$HERE/run_coordinator.py" --stage "$S" --engines 2 --policy load_balanced "${target[@]}" \
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
  if [ -n "$OPID" ]; then # ready once both engines have registered with ours
    for _ in $(seq 1 150); do
      grep -q "^coordinator: 2 engine(s) registered" "$WORK/$name.ours.out" && return
      sleep 0.1
    done
    echo "our coordinator: the engines did not register: $(tail -3 "$WORK/$name.ours.out" | tr '\n' ' ')"; exit 2
  fi
}
stop_coordinator() {
  kill "$CPID" ${OPID:+"$OPID"} 2>/dev/null
  wait "$CPID" ${OPID:+"$OPID"} 2>/dev/null
}
verdict_of() { local v; v=$(grep -E '^(holds|short): ' "$1" | tail -1); echo "${v%%; first: *}"; }
fate() { # the coordinator process, from the stats file (ours: whether its process runs)
  if [ "$COORD" = ours ]; then
    if kill -0 "$OPID" 2>/dev/null; then echo alive; else echo "died: $(tail -1 "$WORK/$1.ours.out")"; fi
    return
  fi
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

# The self-check's JSON line as "52/52 correct, 7/7 checks".
SELF_FIGURE='
import json, sys
try:
    d = json.loads(sys.stdin.read())
    checks = d["checks"]
    print("%d/%d correct, %d/%d checks" % (d["correct"], d["requests"], sum(checks.values()), len(checks)))
except (ValueError, KeyError):
    print("holds")'
VERDICTS=() # one "phase P: holds|short: ..." per phase run
SHORT=0
record() { # record PHASE holds|short TEXT
  VERDICTS+=("phase $1: $2: $3")
  [ "$2" = holds ] || SHORT=1
}

# --- self: the harness self-check --------------------------------------------------------------
if wants self; then
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
  record self holds "$(printf '%s' "$self_line" | "$PY" -c "$SELF_FIGURE")"
fi

# --- client: the project's client, in the dialect -------------------------------------------------
# Media only where the ref's coordinator reads multi_modal_data (main; not PR 6639, branched before it).
MEDIA=off
[ "$PROTOCOL" = main ] && grep -qs multi_modal_data "$S/megatron/core/inference/data_parallel_inference_coordinator/handlers.py" && MEDIA=on
figure="" ts_fate=""
if wants client; then
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
  figure="${verdict#holds: }"
  figure="${figure#short: }"
  figure="${figure%%; first: *}"
  if [ $trc -eq 0 ] && [ "${verdict%%:*}" = holds ]; then
    record client holds "$figure (media $MEDIA)"
  else
    record client short "$figure (media $MEDIA); coordinator ${ts_fate%% \[File *}"
  fi
fi

# --- hosted: mcore serve as the coordinator (--engines-listen), REF's engine ranks dialing it (no
# coordinator process of either side), called with the openai SDK as in serve
if wants hosted; then
  PYTHON="$PY" timeout 120 node "$HERE/serve_check.mjs" "$ROOT" --hosted "$S" --protocol "$PROTOCOL" >"$WORK/hosted.log" 2>&1
  hosted_rc=$?
  grep -E '^FAIL' "$WORK/hosted.log" | head -4
  hosted_verdict=$(grep -E '^(holds|short): ' "$WORK/hosted.log" | tail -1)
  [ -n "$hosted_verdict" ] || { hosted_verdict="short: no verdict (exit $hosted_rc)"; tail -5 "$WORK/hosted.log"; }
  echo "mcore serve --engines-listen --protocol $PROTOCOL, $REF's engines dialing it: $hosted_verdict"
  if [ $hosted_rc -eq 0 ]; then
    record hosted holds "${hosted_verdict#holds: }"
  else
    record hosted short "${hosted_verdict#short: }"
  fi
fi

# --- serve: the project's server (mcore serve) over a fresh coordinator, called with the openai SDK
if wants serve; then
  start_coordinator serve
  timeout 90 node "$HERE/serve_check.mjs" "$ROOT" "$ADDR" --protocol "$PROTOCOL" >"$WORK/serve.log" 2>&1
  serve_rc=$?
  serve_fate=$(fate serve)
  stop_coordinator
  grep -E '^FAIL' "$WORK/serve.log" | head -4
  serve_verdict=$(grep -E '^(holds|short): ' "$WORK/serve.log" | tail -1)
  [ -n "$serve_verdict" ] || { serve_verdict="short: no verdict (exit $serve_rc)"; tail -5 "$WORK/serve.log"; }
  echo "mcore serve --protocol $PROTOCOL over it: $serve_verdict; coordinator ${serve_fate%% \[File *}"
  if [ $serve_rc -eq 0 ] && [ "$serve_fate" = alive ]; then
    record serve holds "${serve_verdict#holds: }"
  else
    record serve short "${serve_verdict#short: }; coordinator ${serve_fate%% \[File *}"
  fi
fi

# --- no-dialect: what a user who names no dialect does to the coordinator -------------------------
if wants no-dialect; then
  nd_ok=0 nd_n=0 nd_first=""
  for attempt in generate control serve library; do
    nd_n=$((nd_n + 1))
    start_coordinator "nd-$attempt"
    env -u MCORE_PROTOCOL timeout 60 node "$HERE/no_dialect.mjs" "$attempt" "$ROOT" "$ADDR" >"$WORK/nd-$attempt.log" 2>&1
    arc=$?
    line=$(grep -E '^(ok|FAIL): ' "$WORK/nd-$attempt.log" | tail -1)
    [ -n "$line" ] || line="FAIL: $attempt: no verdict (exit $arc): $(tail -2 "$WORK/nd-$attempt.log" | tr '\n' ' ')"
    sleep 0.3
    after=$(fate "nd-$attempt")
    served=""
    if [ "$after" = alive ]; then
      # Still serving: a correct request in the dialect (200 of them, checked token for token).
      timeout 40 node "$HERE/drive_ts.mjs" "$ROOT" "$ADDR" --protocol "$PROTOCOL" --stats "$WORK/nd-$attempt.stats.json" \
        --only submit --timeout-ms 5000 >"$WORK/nd-$attempt.after.log" 2>&1
      src=$?
      served=$(grep -E '^(holds|short): ' "$WORK/nd-$attempt.after.log" | tail -1)
      [ -n "$served" ] || served="short: no verdict (exit $src)"
      served="${served%%; first: *}"
      after=$(fate "nd-$attempt")
    fi
    stop_coordinator
    echo "no dialect, $line"
    echo "  then the coordinator: ${after%% \[File *}${served:+; --protocol $PROTOCOL afterwards: $served}"
    if [ $arc -eq 0 ] && [ "$after" = alive ] && [ "${served%%:*}" = holds ]; then
      nd_ok=$((nd_ok + 1))
    elif [ -z "$nd_first" ]; then
      nd_first="$attempt: ${line#FAIL: }; coordinator ${after%% \[File *}"
    fi
  done
  if [ $nd_ok -eq $nd_n ]; then
    record no-dialect holds "$nd_ok/$nd_n attempts refused before connecting, coordinator serving after each"
  else
    record no-dialect short "$nd_ok/$nd_n attempts refused with the coordinator serving after; first: ${nd_first:0:400}"
  fi
fi

for v in "${VERDICTS[@]}"; do echo "$v"; done
WHOSE="megatron coordinator"
[ "$COORD" = ours ] && WHOSE="our coordinator with Megatron's engines and client at"
ran=$(printf '%s\n' "${VERDICTS[@]}" | sed -E 's/^phase ([a-z-]+):.*/\1/' | paste -sd, -)
if [ $SHORT -eq 0 ]; then
  echo "$WHOSE $REF ($COMMIT, $KIND) with --protocol $PROTOCOL: holds (${ran:-no phase run})${figure:+: $figure}"
  exit 0
fi
short_phases=$(printf '%s\n' "${VERDICTS[@]}" | grep -E '^phase [a-z-]+: short' | sed -E 's/^phase ([a-z-]+):.*/\1/' | paste -sd, -)
echo "$WHOSE $REF ($COMMIT, $KIND) with --protocol $PROTOCOL: short in $short_phases (phases run: $ran)${figure:+; client: $figure}"
exit 1
