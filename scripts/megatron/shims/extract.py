"""Write the reduced modules of a staged Megatron-LM tree, every definition in them copied
verbatim (by AST line range) from the staged originals in STAGE/.orig/.

Usage: extract.py STAGE

Reads STAGE/.orig/{utils.py,_rank_utils.py,config.py,text_generation_controller.py,dynamic_engine.py}
and writes
  megatron/core/utils.py                     helpers the coordinator, the engine pieces and the
                                             Python client call (nvtx ranges, experimental_api,
                                             accepts_parameter, get_asyncio_loop, trace_async_exceptions)
  megatron/core/inference/config.py          the enums/dataclasses that are imported by name
  megatron/core/inference/text_generation_controllers/text_generation_controller.py
                                             TextGenerationController with only tokenize_prompt and
                                             detokenize (the coordinator calls detokenize)
  _harness_engine_parts.py                   DynamicInferenceEngine's wire-facing methods (see PARTS)

A reduced module holds only what is named here; anything else of the original is absent. After
writing, every global name that a copied function refers to is checked to exist, so a ref whose
code needs something this reduction lacks fails at staging, not in the middle of a run.
"""
import ast
import builtins
import importlib
import os
import symtable
import sys

root = sys.argv[1]
# --no-engine: the legacy refs (core_v0.16..0.19), whose engines are legacy_engine.py's, not
# dynamic_engine.py's methods; their originals may also lack config.py or the controller.
with_engine = "--no-engine" not in sys.argv[2:]
orig = os.path.join(root, ".orig")


def have(name):
    return os.path.exists(os.path.join(orig, name)) and os.path.getsize(os.path.join(orig, name)) > 0


def read(name):
    with open(os.path.join(orig, name)) as f:
        return f.read()


def span(lines, node):
    start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
    return "".join(lines[start - 1 : node.end_lineno])


def top_level(src, names, optional=()):
    """Verbatim source of the named top-level defs / assignments, in file order."""
    tree = ast.parse(src)
    lines = src.splitlines(keepends=True)
    out, found = [], set()
    for node in tree.body:
        name = None
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            name = node.name
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            ids = [t.id for t in targets if isinstance(t, ast.Name)]
            name = ids[0] if ids else None
        if name in names or name in optional:
            found.add(name)
            out.append(span(lines, node))
    missing = set(names) - found
    if missing:
        sys.exit(f"extract: {sorted(missing)} not found at top level")
    return out, found


def methods(src, cls, names, optional=()):
    """Verbatim source (class-indented) of the named methods of class `cls`."""
    tree = ast.parse(src)
    lines = src.splitlines(keepends=True)
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == cls:
            out, found = [], set()
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and (
                    item.name in names or item.name in optional
                ):
                    found.add(item.name)
                    out.append(span(lines, item))
            missing = set(names) - found
            if missing:
                sys.exit(f"extract: {cls} lacks {sorted(missing)}")
            return out, found
    sys.exit(f"extract: class {cls} not found")


def write(rel, text):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def check_globals(rel, modname):
    """Every global a function in the module refers to must exist once it is imported."""
    with open(os.path.join(root, rel)) as f:
        src = f.read()
    mod = importlib.import_module(modname)
    table = symtable.symtable(src, rel, "exec")
    missing = set()

    def walk(t):
        if t.get_type() in ("function", "class"):
            for s in t.get_symbols():
                if s.is_referenced() and s.is_global() and not s.is_assigned():
                    n = s.get_name()
                    if not hasattr(mod, n) and not hasattr(builtins, n):
                        missing.add(n)
        for c in t.get_children():
            walk(c)

    walk(table)
    if missing:
        sys.exit(f"extract: {rel} refers to names it does not define: {sorted(missing)}")


# --- megatron/core/utils.py -------------------------------------------------------------------
utils_src = read("utils.py")
utils_parts, _ = top_level(
    utils_src, [], optional=
    ["accepts_parameter", "configure_nvtx_profiling", "_nvtx_range_get_func_path",
     "nvtx_range_push", "nvtx_range_pop", "get_asyncio_loop", "trace_async_exceptions",
     "experimental_api", "_nvtx_enabled", "_nvtx_range_messages", "_nvtx_range_msg_pool",
     "_ASYNC_IO_LOOP", "_ASYNC_TASK_STATS", "_Wrapped", "logger"],
)
rank_parts = top_level(read("_rank_utils.py"), ["log_single_rank"])[0] if have("_rank_utils.py") else []
write(
    "megatron/core/utils.py",
    "# REDUCED by scripts/megatron/shims/extract.py: the definitions below are copied verbatim\n"
    "# from this ref's megatron/core/utils.py (log_single_rank from _rank_utils.py); nothing\n"
    "# else of that module is here.\n"
    "import asyncio\nimport functools\nimport inspect\nimport logging\nimport sys\nimport time\n"
    "import traceback\nfrom collections import defaultdict\n"
    "from typing import Any, Callable, Optional, TypeVar\n\n"
    "import numpy\nimport torch  # the harness's torch stub\n\n\n"
    "def safe_get_rank() -> int:  # SHIM: one process, no torch.distributed\n    return 0\n\n\n"
    + "\n\n".join(utils_parts + rank_parts) + "\n",
)

# --- megatron/core/inference/config.py ----------------------------------------------------------
config_parts = [] if not have("config.py") else top_level(
    read("config.py"), [], optional=["PrefixCachingCoordinatorPolicy", "ImageProcessingConfig"]
)[0]
write(
    "megatron/core/inference/config.py",
    "# REDUCED by scripts/megatron/shims/extract.py: only the classes imported by name by the\n"
    "# staged modules, copied verbatim from this ref's megatron/core/inference/config.py (the real\n"
    "# module imports torch, process groups and MegatronModule).\n"
    "from dataclasses import dataclass\nfrom enum import Enum\nfrom typing import List, Optional\n\n\n"
    + "\n\n".join(config_parts) + "\n",
)

# --- text_generation_controller.py --------------------------------------------------------------
tgc_parts = [] if not have("text_generation_controller.py") else methods(
    read("text_generation_controller.py"), "TextGenerationController",
    [], optional=["tokenize_prompt", "detokenize"],
)[0]
write(
    "megatron/core/inference/text_generation_controllers/text_generation_controller.py",
    "# REDUCED by scripts/megatron/shims/extract.py: TextGenerationController with only the two\n"
    "# static methods the coordinator and the engine's add_request use, copied verbatim from this\n"
    "# ref (the real module imports the model stack, CUDA graphs and Transformer Engine).\n"
    "import inspect\nfrom typing import List\n\ntry:\n    from megatron.core.utils import accepts_parameter\nexcept ImportError:  # refs whose controller does not use it\n    pass\n\n\n"
    "class TextGenerationController:\n"
    + ("\n".join(tgc_parts) or "    pass\n"),
)
if not with_engine:
    sys.path.insert(0, root)
    check_globals("megatron/core/utils.py", "megatron.core.utils")
    print("extract: no engine parts (legacy ref: legacy_engine.py speaks for the engines)", file=sys.stderr)
    sys.exit(0)

# --- _harness_engine_parts.py: DynamicInferenceEngine's wire-facing methods -----------------------
ENGINE_TOP = ["EngineState", "RequestEntry"]
ENGINE_TOP_OPTIONAL = ["_engine_reply_frames"]  # the multipart refs only
PARTS = [
    "schedule_requests",  # drain the DEALER, add requests, abort, epoch, profiler, control signals
    "_try_send_streaming_partials",  # ENGINE_REPLY_PARTIAL
    "_send_request_records_to_coordinator",  # ENGINE_REPLY
    "_handle_failed_request",
    "_add_request",
    "add_request",
    "get_request",
    "run_engine_with_coordinator",  # the engine's loop and its state machine
    "_ep_establish_consensus",
    "_world_barrier",
    "shutdown",  # DISCONNECT
]
PARTS_OPTIONAL = ["_pack_tp_broadcast", "_unpack_tp_broadcast", "_fail_submission"]
de_src = read("dynamic_engine.py")
top, top_found = top_level(de_src, ENGINE_TOP, optional=ENGINE_TOP_OPTIONAL)
meths, meth_found = methods(de_src, "DynamicInferenceEngine", PARTS, optional=PARTS_OPTIONAL)
header = '''# GENERATED by scripts/megatron/shims/extract.py from this ref's
# megatron/core/inference/engines/dynamic_engine.py. The classes, functions and the methods of
# DynamicInferenceEngineParts below are copied verbatim (by AST line range); the header (these
# imports) is the harness's. scripts/megatron/fake_engine.py subclasses
# DynamicInferenceEngineParts and supplies what the methods read from `self`.
# pylint: skip-file
import asyncio
import logging
import math
import time
import warnings
from collections import deque
from dataclasses import dataclass
from enum import Enum, auto
from itertools import repeat
from typing import Dict, List, Optional, Tuple, Union

import torch
from torch import Tensor

try:
    import zmq
except ImportError:
    zmq = None
try:
    import msgpack
except ImportError:
    msgpack = None

from megatron.core.inference.headers import Headers, UnknownHeaderError
from megatron.core.inference import inference_request as _ir
from megatron.core.inference.inference_request import (
    DynamicInferenceEvent,
    DynamicInferenceEventType,
    DynamicInferenceRequest,
    DynamicInferenceRequestRecord,
    FinishedRequestRecord,
    Status,
)
from megatron.core.inference.sampling_params import SamplingParams
from megatron.core.utils import nvtx_range_pop, nvtx_range_push, get_asyncio_loop, trace_async_exceptions

try:  # the multipart refs: the wire schema module
    from megatron.core.inference.messages import (
        ENGINE_REPLY,
        ENGINE_REPLY_PARTIAL,
        KV_HANDOFF_COMPLETE,
        SEND_KV,
        SET_GENERATION_EPOCH,
        SUBMIT_REQUEST,
        SUBMIT_REQUEST_WITH_KV,
        header_of,
        pack_signal,
        request_id_of,
    )
except ImportError:  # single-frame refs have no messages.py
    pass
if hasattr(_ir, "resolve_multimodal_data_for_engine"):  # refs whose engine takes media
    resolve_multimodal_data_for_engine = _ir.resolve_multimodal_data_for_engine

logger = logging.getLogger("megatron.core.inference.engines.dynamic_engine")


# HARNESS: the admission errors of contexts/dynamic_context.py, raised by _add_request only when
# a request does not fit the (fake) context; same names, no torch behind them.
class MaxSequenceLengthOverflowError(Exception):
    def __init__(self, request_id, message=""):
        super().__init__(f"request {request_id}: max sequence length overflow {message}")


class TokenOverflowError(MaxSequenceLengthOverflowError):
    pass


class BlockOverflowError(MaxSequenceLengthOverflowError):
    pass


'''
write(
    "_harness_engine_parts.py",
    header
    + "\n\n".join(top)
    + "\n\nclass DynamicInferenceEngineParts:\n"
    + '    """Verbatim methods of DynamicInferenceEngine (see the header)."""\n\n'
    + "\n".join(meths),
)
with open(os.path.join(root, ".engine_parts"), "w") as f:
    f.write(" ".join(sorted(top_found | meth_found)) + "\n")

# --- check: every name the copied code refers to resolves ----------------------------------------
sys.path.insert(0, root)
check_globals("megatron/core/utils.py", "megatron.core.utils")
check_globals("megatron/core/inference/config.py", "megatron.core.inference.config")
check_globals(
    "megatron/core/inference/text_generation_controllers/text_generation_controller.py",
    "megatron.core.inference.text_generation_controllers.text_generation_controller",
)
check_globals("_harness_engine_parts.py", "_harness_engine_parts")
print(f"extract: engine parts {sorted(top_found | meth_found)}", file=sys.stderr)
