#!/usr/bin/env bash
# Stage Megatron-LM's data-parallel inference coordinator (and the pieces of its engine and
# client that the harness runs) out of a git mirror, at REF, into a fresh temp dir; print it.
#
#   MEGATRON_GIT  git dir of NVIDIA/Megatron-LM (required)
#   $1            ref (default refs/pull/6497/head); HEAD for released main
#   OUT           target dir (default: mktemp -d /tmp/mcoord-stage.XXXXXX)
#
# Nothing of Megatron-LM is kept in this repository: every file comes from `git show REF:path`.
# The staged root holds (README.md "Staged and stubbed" is the complete list):
#   verbatim   the coordinator package (coordinator, handlers, state, __init__), headers,
#              messages (multipart refs), sampling_params, inference_request, async_stream,
#              inference_client, disaggregation/utils, the comment-only package __init__s
#   reduced    megatron/core/utils.py, inference/config.py, text_generation_controller.py and
#              _harness_engine_parts.py (dynamic_engine.py's wire-facing methods): definitions
#              copied verbatim by shims/extract.py
#   shims      torch/ (numpy stub), megatron/core/__init__.py (empty), tokenizers/__init__.py
# and .ref, .megatron_commit, .ref_kind (multipart | single | legacy, see below).
# Get MEGATRON_GIT: `git clone --bare https://github.com/NVIDIA/Megatron-LM.git` and, for the PR,
# `git -C Megatron-LM.git fetch origin refs/pull/6497/head:refs/pull/6497/head`.
set -euo pipefail
: "${MEGATRON_GIT:?set MEGATRON_GIT to a git dir of NVIDIA/Megatron-LM (a bare mirror is fine)}"
REF="${1:-refs/pull/6497/head}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PY=""
for cand in "${PYTHON:-}" /usr/bin/python3 $(type -ap python3); do
  [ -n "$cand" ] && "$cand" -c "import numpy, msgpack, zmq" 2>/dev/null && { PY=$cand; break; }
done
[ -n "$PY" ] || { echo "stage.sh: no python3 with numpy, msgpack and pyzmq (apt-get install python3-numpy python3-msgpack python3-zmq)" >&2; exit 1; }
git --git-dir="$MEGATRON_GIT" rev-parse --verify -q "$REF^{commit}" >/dev/null \
  || { echo "stage.sh: $REF is not a commit in $MEGATRON_GIT" >&2; exit 1; }
OUT="${OUT:-$(mktemp -d /tmp/mcoord-stage.XXXXXX)}"
mkdir -p "$OUT/.orig"
has() { git --git-dir="$MEGATRON_GIT" cat-file -e "$REF:$1" 2>/dev/null; }
get() { mkdir -p "$OUT/$(dirname "$1")"; git --git-dir="$MEGATRON_GIT" show "$REF:$1" > "$OUT/$1"; }
orig() { git --git-dir="$MEGATRON_GIT" show "$REF:$1" > "$OUT/.orig/$(basename "$1")"; }

I=megatron/core/inference
C=$I/data_parallel_inference_coordinator
# --- verbatim --------------------------------------------------------------------------------
if has "$C/coordinator.py"; then   # core_v0.19 and later: a package
  for f in __init__.py coordinator.py handlers.py state.py; do get "$C/$f"; done
else                              # core_v0.16..0.18: one file
  get "$C.py"
fi
for f in __init__.py headers.py sampling_params.py inference_request.py inference_client.py \
         text_generation_controllers/__init__.py; do
  get "$I/$f"
done
for f in async_stream.py wire_metrics.py disaggregation/__init__.py disaggregation/utils.py; do has "$I/$f" && get "$I/$f"; done
# multipart: messages.py (pr-6497); single: one frame, engines from dynamic_engine.py (main);
# legacy: one frame, no ENGINE_REPLY_PARTIAL, engines from legacy_engine.py (core_v0.16..0.19)
if has "$I/messages.py"; then get "$I/messages.py"; kind=multipart
elif git --git-dir="$MEGATRON_GIT" show "$REF:$I/headers.py" | grep -q ENGINE_REPLY_PARTIAL; then kind=single
else kind=legacy; fi
# --- originals of the reduced modules (input of extract.py, kept for reference) ---------------
orig megatron/core/utils.py
for f in megatron/core/_rank_utils.py $I/config.py $I/text_generation_controllers/text_generation_controller.py \
         $I/engines/dynamic_engine.py; do has "$f" && orig "$f"; done
# --- shims -----------------------------------------------------------------------------------
cp -r "$HERE/shims/torch" "$OUT/torch"
printf '# SHIM: empty package init (the real one imports torch, parallel_state, DDP, ...)\n' \
  > "$OUT/megatron/core/__init__.py"
mkdir -p "$OUT/megatron/core/tokenizers"
cat > "$OUT/megatron/core/tokenizers/__init__.py" <<'EOF'
# SHIM: inference_request.py imports MegatronTokenizer only for type annotations.
class MegatronTokenizer:  # never instantiated; the harness's tokenizer is passed in by value
    pass
EOF
"$PY" "$HERE/shims/extract.py" "$OUT" $([ "$kind" = legacy ] && echo --no-engine) >&2
echo "$REF" > "$OUT/.ref"
git --git-dir="$MEGATRON_GIT" rev-parse "$REF^{commit}" > "$OUT/.megatron_commit"
echo "$kind" > "$OUT/.ref_kind"
echo "$OUT"
