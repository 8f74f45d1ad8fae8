# What the checks' shell scripts share (interop.sh, fleet.sh, disagg.sh, routing.sh): sourced,
# then `harness_setup LABEL [BUILT ...]` once their arguments are read, with HERE, ROOT and REF
# set. It checks MEGATRON_GIT and that ROOT has each BUILT file (say `pnpm build` otherwise),
# finds a python3 with numpy, msgpack and pyzmq (PY; PYTHON= overrides), makes the work dir
# (WORK, /tmp/mcoord-SCRIPT.XXXXXX), and stages REF into $WORK/stage (S, its KIND and COMMIT).
# At exit: the script's `before_cleanup`, if it defines one, then the processes in PIDS killed
# (`harness_stop` does that alone), then WORK removed unless KEEP=1. Failures print
# "LABEL: why" and exit 2.
harness_setup() {
  local label=$1 built
  shift
  : "${MEGATRON_GIT:?set MEGATRON_GIT to a git dir of NVIDIA/Megatron-LM (scripts/megatron/README.md says how to get one)}"
  for built in "$@"; do
    [ -f "$ROOT/$built" ] || { echo "$label: $ROOT/$built missing (build the project: pnpm build)"; exit 2; }
  done
  PY=""
  for cand in "${PYTHON:-}" /usr/bin/python3 $(type -ap python3); do
    [ -n "$cand" ] && "$cand" -c "import numpy, msgpack, zmq" 2>/dev/null && { PY=$cand; break; }
  done
  [ -n "$PY" ] || { echo "$label: no python3 with numpy, msgpack and pyzmq (apt-get install python3-numpy python3-msgpack python3-zmq)"; exit 2; }
  local script
  script=$(basename "$0" .sh)
  WORK=$(mktemp -d "/tmp/mcoord-$script.XXXXXX")
  PIDS=()
  trap harness_cleanup EXIT
  trap 'exit 143' TERM INT
  S="$WORK/stage"
  OUT="$S" PYTHON="$PY" bash "$HERE/stage.sh" "$REF" >/dev/null 2>"$WORK/stage.err"
  [ -f "$S/.ref_kind" ] || { echo "$label: staging $REF failed: $(tail -3 "$WORK/stage.err" | tr '\n' ' ')"; exit 2; }
  KIND=$(cat "$S/.ref_kind")
  COMMIT=$(cut -c1-10 "$S/.megatron_commit")
}

# Kills the processes in PIDS and waits for them.
harness_stop() {
  local p
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
  PIDS=()
}

harness_cleanup() {
  declare -F before_cleanup >/dev/null && before_cleanup
  harness_stop
  [ -n "${KEEP:-}" ] && { echo "kept $WORK" >&2; return; }
  rm -rf "$WORK"
}
