#!/usr/bin/env bash
# Rewrite packages/protocol/test/fixtures/megatron/<dialect>.json from every ref (capture.py).
#   MEGATRON_GIT=<git dir of NVIDIA/Megatron-LM> scripts/megatron/capture-all.sh
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
FIX="$HERE/../../packages/protocol/test/fixtures/megatron"
PY=""
for cand in "${PYTHON:-}" /usr/bin/python3 $(type -ap python3); do
  [ -n "$cand" ] && "$cand" -c "import numpy, msgpack, zmq" 2>/dev/null && { PY=$cand; break; }
done
[ -n "$PY" ] || { echo "capture-all.sh: no python3 with numpy, msgpack and pyzmq" >&2; exit 1; }
# ref:dialect[:file] (file defaults to the dialect's name; PR 6639's coordinator speaks main's)
for spec in refs/pull/6497/head:pr-6497 refs/heads/main:main refs/pull/6639/head:main:pr-6639 core_v0.19.0:core_v0.19 \
            core_v0.18.0:core_v0.18 core_v0.17.0:core_v0.17 core_v0.16.0:core_v0.16; do
  IFS=: read -r ref dialect file <<<"$spec"
  file=${file:-$dialect}
  stage=$(PYTHON="$PY" bash "$HERE/stage.sh" "$ref" 2>/dev/null)
  "$PY" "$HERE/capture.py" --stage "$stage" --dialect "$dialect" --out "$FIX/$file.json" 2>&1 | grep '^capture:'
  rm -rf "$stage"
done
