#!/usr/bin/env python3
"""Run Megatron-LM's real DataParallelInferenceCoordinator and N engine ranks without a GPU.

  run_coordinator.py --stage DIR [--ref-kind multipart|single] [--port P] [--engines N]
                     [--policy load_balanced|longest_prefix|first_prefix_block|prefix_caching]
                     [--block-size T] [--prefix-caching on|off] [--step-ms MS] [--max-requests R]
                     [--host 127.0.0.1] [--stats FILE] [--register-delay-ms MS] [--external ADDR]
                     [--first-rank R]

DIR is what stage.sh printed. The coordinator runs as dynamic_engine.py's
start_listening_to_data_parallel_coordinator launches it: in a `spawn` process, target
DataParallelInferenceCoordinator.entrypoint with a Pipe (it sends back its address) and a ready
Event, the tokenizer, max_requests, the port, block_size_tokens, enable_prefix_caching, the
prefix-caching policy and alpha, hostname. Its own __init__ waits for the N engines to
register, then entrypoint runs its own start() loop. Nothing of it is modified or wrapped,
except that an exception escaping entrypoint is also written to a file for the stats.

The engines (fake_engine.py) are threads of this process, one zmq context each, connecting as
DEALERs with identities mp-coord-0..N-1 and registering with an empty frame, exactly as the
engine does. Once the coordinator's ready event is set, the first line on stdout is the
client-facing address (tcp://HOST:PORT); a second line `ready` follows.

--stats FILE is rewritten (atomically) whenever something changes: per engine the headers
received and sent, state transitions, aborts, hand-off blocks, errors; the CUDA profiler calls;
and the coordinator process (alive, exit code, the exception that ended it). SIGTERM/SIGINT:
write the stats, stop the coordinator (SIGKILL if it is still running) and exit.
Exit status: 0 after a signal, 3 if the coordinator never came up.

--external ADDR starts no coordinator: the engines dial ADDR (the project's `mcore coordinator
--external-engines N`, or any coordinator waiting for engines), as Megatron's engines do when
start_listening_to_data_parallel_coordinator is called with launch_inference_coordinator=False.
ADDR is printed, then `ready` once the engines have sent their registrations; the stats say
nothing of that coordinator (`"coordinator": {"external": ADDR}`): its runner watches it.
"""
import argparse
import json
import multiprocessing
import os
import signal
import sys
import threading
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))


def _coordinator_process(stage, errfile, kwargs):
    """Body of the spawned coordinator process: the real entrypoint, unmodified."""
    try:  # Linux: die with the harness even if it is SIGKILLed (PR_SET_PDEATHSIG)
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)
    except (OSError, AttributeError):
        pass
    if stage not in sys.path:
        sys.path.insert(0, stage)
    # core_v0.16 binds tcp://{socket.gethostname()}:port with no way to choose the host; the
    # harness binds loopback only.
    import socket

    socket.gethostname = lambda: "127.0.0.1"
    from megatron.core.inference.data_parallel_inference_coordinator import (
        DataParallelInferenceCoordinator,
    )

    try:
        DataParallelInferenceCoordinator.entrypoint(**kwargs)
    except BaseException as e:
        with open(errfile, "w") as f:
            json.dump({"exception": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()}, f)
        raise


def make_engines(args, address, legacy, Engine, CodepointTokenizer, prefix_caching):
    """The engine ranks dialing `address`: legacy_engine.py's for the releases, else fake_engine.py's."""
    return [
        Engine(i, address, step_seconds=args.step_ms / 1000.0) if legacy else
        Engine(i, address, tokenizer=CodepointTokenizer(), step_seconds=args.step_ms / 1000.0,
               max_requests=args.max_requests, block_size_tokens=args.block_size,
               enable_prefix_caching=prefix_caching, agent=f"harness-{address.rsplit(':', 1)[-1]}")
        for i in range(args.first_rank, args.first_rank + args.engines)
    ]


def engine_stats(e, legacy):
    """One engine's part of the stats file."""
    alive = bool(e.thread and e.thread.is_alive())
    if legacy:
        return dict(e.stats, alive=alive)
    return dict(e.stats, state=e.state.name, alive=alive, pinned_now=len(e._pinned_handoff_blocks))


def staged_ref(stage):
    """The staged ref and its commit."""
    with open(os.path.join(stage, ".ref")) as f:
        ref = f.read().strip()
    with open(os.path.join(stage, ".megatron_commit")) as f:
        return ref, f.read().strip()


def write_stats(path, snapshot, last):
    """Rewrites the stats file (atomically) when the snapshot changed; returns what it holds."""
    try:
        text = json.dumps(snapshot(), default=str)
    except RuntimeError:  # a dict changed size while it was read: take it next time
        return last
    if text != last:
        with open(path + ".tmp", "w") as f:
            f.write(text)
        os.replace(path + ".tmp", path)
    return text


def run_engines_only(args, stage, staged_kind, Engine, CodepointTokenizer, prefix_caching):
    """--external: the engine ranks alone (fake_engine.py, or legacy_engine.py for the releases),
    dialing a coordinator someone else runs. Both register with one empty frame."""
    import torch  # the staged stub (profiler counters)

    address = args.external
    legacy = staged_kind == "legacy"
    engines = make_engines(args, address, legacy, Engine, CodepointTokenizer, prefix_caching)
    for e in engines:
        e.start()
    ref, commit = staged_ref(stage)
    print(address, flush=True)
    print("ready", flush=True)
    print(f"run_coordinator: {args.engines} engines of {ref} ({commit[:10]}) dialing {address}", file=sys.stderr, flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    def snapshot():
        return {
            "ref": ref, "commit": commit, "ref_kind": staged_kind, "address": address,
            "policy": args.policy, "prefix_caching": prefix_caching, "block_size": args.block_size,
            "coordinator": {"external": address},
            "cuda_profiler": dict(torch.PROFILER_CALLS),
            "engines": [engine_stats(e, legacy) for e in engines],
        }

    last = None
    while not stop.is_set():
        if args.stats:
            last = write_stats(args.stats, snapshot, last)
        stop.wait(0.05)
    os._exit(0)  # engine threads block in zmq; nothing left to flush


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--stage", required=True)
    ap.add_argument("--ref-kind", choices=["multipart", "single", "legacy"], default=None,
                    help="what the staged ref speaks; checked against the stage (default: the stage's)")
    ap.add_argument("--port", type=int, default=0, help="0: a random free port")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--engines", type=int, default=2)
    ap.add_argument("--first-rank", type=int, default=0,
                    help="with --external: the ranks are FIRST..FIRST+N-1 (mp-coord-FIRST...), so that "
                         "ranks in several processes can dial one coordinator (and one be killed)")
    ap.add_argument("--policy", default="load_balanced",
                    choices=["load_balanced", "longest_prefix", "first_prefix_block", "prefix_caching"])
    ap.add_argument("--block-size", type=int, default=16)
    ap.add_argument("--prefix-caching", choices=["on", "off"], default="on",
                    help="engines' and coordinator's enable_prefix_caching (default on: a decode engine "
                         "refuses KV hand-offs without it; load_balanced routing ignores it)")
    ap.add_argument("--step-ms", type=float, default=1.0, help="duration of one fake forward pass")
    ap.add_argument("--max-requests", type=int, default=256)
    ap.add_argument("--stats", default=None)
    ap.add_argument("--register-delay-ms", type=float, default=0,
                    help="wait this long after the coordinator has bound before the engines connect and "
                         "register (a slow start: the window in which a restarting coordinator takes any "
                         "message as an engine's registration, coordinator.py:176-179)")
    ap.add_argument("--external", default=None, metavar="ADDR",
                    help="start no coordinator: the engines dial ADDR (a coordinator waiting for engines)")
    args = ap.parse_args()
    if args.first_rank != 0 and not args.external:
        ap.error("--first-rank goes with --external (Megatron's coordinator numbers its own engines)")

    stage = os.path.abspath(args.stage)
    with open(os.path.join(stage, ".ref_kind")) as f:
        staged_kind = f.read().strip()
    if args.ref_kind and args.ref_kind != staged_kind:
        sys.exit(f"run_coordinator: --ref-kind {args.ref_kind}, but {stage} holds a {staged_kind} ref")
    sys.path.insert(0, stage)
    sys.path.insert(1, HERE)

    import inspect

    import torch  # the staged stub (profiler counters)
    from harness_model import CodepointTokenizer
    from megatron.core.inference.data_parallel_inference_coordinator import (
        DataParallelInferenceCoordinator,
    )

    legacy = staged_kind == "legacy"
    if legacy:
        from legacy_engine import LegacyEngine
    else:
        from fake_engine import FakeEngine

    policy = "longest_prefix" if args.policy == "prefix_caching" else args.policy
    prefix_caching = args.prefix_caching == "on"
    errfile = (args.stats or os.path.join(stage, "coordinator")) + ".exc.json"
    if os.path.exists(errfile):
        os.unlink(errfile)

    if args.external:
        engine_class = LegacyEngine if legacy else FakeEngine
        run_engines_only(args, stage, staged_kind, engine_class, CodepointTokenizer, prefix_caching)
        return
    ctx = multiprocessing.get_context("spawn")
    parent_pipe, child_pipe = ctx.Pipe()
    ready = ctx.Event()
    kwargs = {
        "pipe_connection": child_pipe,
        "ready_event": ready,
        "data_parallel_size": args.engines,
        "tokenizer": CodepointTokenizer(),
        "max_requests": args.max_requests,
        "inference_coordinator_port": args.port or None,
        "deterministic_mode": False,
        "block_size_tokens": args.block_size,
        "enable_prefix_caching": prefix_caching,
        "prefix_caching_routing_alpha": 0.5,
        "schedule_output_path": None,
        "hostname": args.host,
    }
    params = inspect.signature(DataParallelInferenceCoordinator.entrypoint).parameters
    if "prefix_caching_coordinator_policy" in params:
        from megatron.core.inference.config import PrefixCachingCoordinatorPolicy

        values = [p.value for p in PrefixCachingCoordinatorPolicy]
        kwargs["prefix_caching_coordinator_policy"] = PrefixCachingCoordinatorPolicy(
            policy if policy in values else "round_robin" if policy == "load_balanced" and "round_robin" in values
            else values[0])
    # each ref's entrypoint takes a subset (core_v0.16: no max_requests, prefix caching, hostname)
    kwargs = {k: v for k, v in kwargs.items() if k in params}
    proc = ctx.Process(target=_coordinator_process, args=(stage, errfile, kwargs), daemon=False)
    proc.start()
    if not parent_pipe.poll(30):
        proc.kill()
        print("run_coordinator: the coordinator sent no address within 30 s", file=sys.stderr)
        sys.exit(3)
    address = parent_pipe.recv()
    parent_pipe.close()
    if args.register_delay_ms > 0:
        print(f"run_coordinator: {address} bound; engines register in {args.register_delay_ms:.0f} ms",
              file=sys.stderr, flush=True)
        time.sleep(args.register_delay_ms / 1000.0)

    engines = make_engines(args, address, legacy, LegacyEngine if legacy else FakeEngine, CodepointTokenizer, prefix_caching)
    if legacy:  # legacy_engine.py registers when started; the coordinator is ready only after that
        for e in engines:
            e.start()
    if not ready.wait(30):
        proc.kill()
        print("run_coordinator: the coordinator did not get ready within 30 s", file=sys.stderr)
        sys.exit(3)
    for e in engines if not legacy else []:
        e.start()

    ref, commit = staged_ref(stage)
    print(address, flush=True)
    print("ready", flush=True)
    print(f"run_coordinator: {ref} ({commit[:10]}, {staged_kind}) at {address}, {args.engines} engines, "
          f"policy {policy}, prefix caching {'on' if prefix_caching else 'off'}, block {args.block_size}, "
          f"coordinator pid {proc.pid}", file=sys.stderr, flush=True)

    stop = threading.Event()

    def on_signal(signum, frame):
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    def snapshot():
        exc = None
        if os.path.exists(errfile):
            try:
                with open(errfile) as f:
                    exc = json.load(f)
            except (OSError, ValueError):
                pass
        return {
            "ref": ref, "commit": commit, "ref_kind": staged_kind, "address": address,
            "policy": policy, "prefix_caching": prefix_caching, "block_size": args.block_size,
            "coordinator": {"pid": proc.pid, "alive": proc.is_alive(), "exitcode": proc.exitcode,
                            "exception": exc and exc.get("exception"),
                            "traceback": exc and exc.get("traceback")},
            "cuda_profiler": dict(torch.PROFILER_CALLS),
            "engines": [engine_stats(e, legacy) for e in engines],
        }

    last, reported_exit = None, False
    while True:
        if args.stats:
            last = write_stats(args.stats, snapshot, last)
        if not proc.is_alive() and not reported_exit:
            reported_exit = True
            print(f"run_coordinator: the coordinator process exited with code {proc.exitcode}",
                  file=sys.stderr, flush=True)
        if stop.is_set():
            break
        stop.wait(0.05)
    if proc.is_alive():
        proc.kill()
        proc.join(5)
    os._exit(0)  # engine threads block in zmq; nothing left to flush


if __name__ == "__main__":
    main()
