#!/usr/bin/env python3
"""Record the exact frames Megatron-LM's own Python InferenceClient, its coordinator and the
engines exchange at one ref, as a JSON fixture.

  capture.py --stage DIR --dialect NAME --out FILE [--engines 1]

DIR is what stage.sh printed. Runs the ref's real coordinator (its `entrypoint`, in a spawned
process, as run_coordinator.py does), N engines (fake_engine.py at main / pr-6497, whose wire
code is Megatron's own; legacy_engine.py at core_v0.16..0.19) and the ref's own
`InferenceClient`, all through a recording proxy: a ROUTER on loopback that, for every peer
identity it sees, opens a DEALER with the same identity to the coordinator and forwards both
ways. So every message is recorded as it crossed, with its direction:
client->coordinator, coordinator->client, engine->coordinator, coordinator->engine (engines are
the peers named mp-coord-*).

Scenarios, each only where the ref has it (DIALECTS.md): connect; submit (text prompt, sampling
params with floats); submit (token ids); streaming submit and its partials; abort of a stream;
KV hand-off (prefill with do_kv_handoff, decode, release); pause, suspend, resume, unpause,
set_generation_epoch, profiler start/stop, pause + stop, shutdown. Each recorded message
carries the scenario that was running when it crossed.
"""
import argparse
import asyncio
import inspect
import json
import multiprocessing
import os
import signal
import socket
import sys
import threading
import time

import msgpack
import zmq

HERE = os.path.dirname(os.path.abspath(__file__))


def _coordinator_process(stage, kwargs):
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)
    except (OSError, AttributeError):
        pass
    # core_v0.16 binds tcp://{socket.gethostname()}:port with no way to choose the host; the
    # harness binds loopback only.
    socket.gethostname = lambda: "127.0.0.1"
    sys.path.insert(0, stage)
    from megatron.core.inference.data_parallel_inference_coordinator import (
        DataParallelInferenceCoordinator,
    )

    DataParallelInferenceCoordinator.entrypoint(**kwargs)


def start_coordinator(stage, engines, max_requests=64, block_size=16):
    sys.path.insert(0, stage)
    from megatron.core.inference.data_parallel_inference_coordinator import (
        DataParallelInferenceCoordinator,
    )
    from harness_model import CodepointTokenizer

    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    ready = ctx.Event()
    want = {
        "pipe_connection": child, "ready_event": ready, "data_parallel_size": engines,
        "tokenizer": CodepointTokenizer(), "max_requests": max_requests,
        "inference_coordinator_port": None, "deterministic_mode": False,
        "block_size_tokens": block_size, "enable_prefix_caching": True,
        "prefix_caching_routing_alpha": 0.5, "schedule_output_path": None, "hostname": "127.0.0.1",
    }
    params = inspect.signature(DataParallelInferenceCoordinator.entrypoint).parameters
    if "prefix_caching_coordinator_policy" in params:
        from megatron.core.inference.config import PrefixCachingCoordinatorPolicy

        want["prefix_caching_coordinator_policy"] = PrefixCachingCoordinatorPolicy("load_balanced") \
            if "load_balanced" in [p.value for p in PrefixCachingCoordinatorPolicy] \
            else list(PrefixCachingCoordinatorPolicy)[0]
    kwargs = {k: v for k, v in want.items() if k in params}
    proc = ctx.Process(target=_coordinator_process, args=(stage, kwargs))
    proc.start()
    if not parent.poll(30):
        proc.kill()
        sys.exit("capture: the coordinator sent no address")
    return proc, parent.recv(), ready


class Recorder:
    """The recording proxy (see the module docstring)."""

    def __init__(self, upstream, headers):
        self.upstream, self.H = upstream, headers
        self.ctx = zmq.Context()
        self.front = self.ctx.socket(zmq.ROUTER)
        self.front.setsockopt(zmq.LINGER, 0)
        port = self.front.bind_to_random_port("tcp://127.0.0.1")
        self.address = f"tcp://127.0.0.1:{port}"
        self.back = {}  # identity -> DEALER
        self.messages = []
        self.scenario = "start-up"
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _name(self, frame0):
        if frame0 == b"":
            return "REGISTER"
        try:
            m = msgpack.unpackb(frame0, raw=False)
            return self.H(m[0]).name
        except Exception as e:  # noqa: BLE001 - a fixture records what it saw
            return f"?{type(e).__name__}"

    def _record(self, direction, identity, frames):
        with self.lock:
            self.messages.append({
                "seq": len(self.messages), "scenario": self.scenario, "direction": direction,
                "peer": identity.decode(errors="replace"), "header": self._name(frames[0]),
                "frames": [f.hex() for f in frames],
            })

    def _run(self):
        poller = zmq.Poller()
        poller.register(self.front, zmq.POLLIN)
        while not self.done.is_set():
            for sock, _ in poller.poll(20):
                frames = sock.recv_multipart()
                if sock is self.front:
                    ident, rest = frames[0], frames[1:]
                    engine = ident.startswith(b"mp-coord-")
                    self._record("engine->coordinator" if engine else "client->coordinator", ident, rest)
                    d = self.back.get(ident)
                    if d is None:
                        d = self.ctx.socket(zmq.DEALER)
                        d.setsockopt(zmq.IDENTITY, ident)
                        d.setsockopt(zmq.LINGER, 0)
                        d.connect(self.upstream)
                        self.back[ident] = d
                        poller.register(d, zmq.POLLIN)
                    d.send_multipart(rest)
                else:
                    ident = sock.getsockopt(zmq.IDENTITY)
                    engine = ident.startswith(b"mp-coord-")
                    self._record("coordinator->engine" if engine else "coordinator->client", ident, frames)
                    self.front.send_multipart([ident, *frames])

    def close(self):
        self.done.set()
        self.thread.join(2)
        for d in self.back.values():
            d.close()
        self.front.close()
        self.ctx.term()


async def scenarios(rec, address, names, kind, wait):
    from megatron.core.inference.inference_client import InferenceClient
    from megatron.core.inference.sampling_params import SamplingParams

    def sp(**kw):
        p = SamplingParams()
        p.add_attributes(kw)
        return p

    def step(name):
        rec.scenario = name

    async def settle(t=0.3):
        await asyncio.sleep(t)

    client = InferenceClient(address)
    step("connect")
    started = client.start()
    if inspect.isawaitable(started):
        await started
    await settle()

    step("submit-text")
    r = await asyncio.wait_for(client.add_request(
        "Hello", sp(num_tokens_to_generate=3, temperature=0.5, top_k=3, top_p=0.9)), wait)
    await settle()
    step("submit-token-ids")
    r = await asyncio.wait_for(client.add_request([72, 101, 108], sp(num_tokens_to_generate=2)), wait)
    await settle()

    if "ENGINE_REPLY_PARTIAL" in names:
        step("submit-streaming")
        async for _ in client.add_request_streaming([5, 6, 7], sp(num_tokens_to_generate=3)):
            pass
        await settle()
    if "ABORT_REQUEST" in names:
        step("abort")
        stream = client.add_request_streaming([8, 9], sp(num_tokens_to_generate=2000))
        got = 0
        async for item in stream:
            if "partial" in item:
                got += 1
                if got == 2:
                    client.abort_request(stream.request_id)
        await settle(0.5)
    if "SUBMIT_REQUEST_WITH_KV" in names:
        step("kv-prefill")
        p = list(range(200, 220))
        pre = await asyncio.wait_for(client.add_request(p, sp(num_tokens_to_generate=1, do_kv_handoff=True)), wait)
        dp = pre.get("disaggregated_params") or {}
        await settle()
        step("kv-decode")
        await asyncio.wait_for(client.add_request_with_kv_handoff(
            p, sp(num_tokens_to_generate=2), dp["kv_meta"], dp["block_ids"]), wait)
        await settle()
        step("kv-release")
        client.release_handoff(dp["request_id"])
        await settle()

    async def signal_(name, call, *args):
        step(name)
        res = call(*args)
        if inspect.isawaitable(res):
            try:
                await asyncio.wait_for(res, wait)
            except asyncio.TimeoutError:
                pass
        await settle()

    if "PAUSE_ACK" in names:
        # core_v0.16: a second PAUSE before an UNPAUSE kills the coordinator (every engine acks
        # it again: `assert sender_identity not in self.data_parallel_pause_acks`), and its
        # suspend_engines() is PAUSE + SUSPEND, resume_engines() RESUME + UNPAUSE.
        await signal_("pause", client.pause_engines)
        await signal_("unpause", client.unpause_engines)
        await signal_("suspend", client.suspend_engines)
        await signal_("resume", client.resume_engines)
    else:
        await signal_("pause", client.pause_engines)
        await signal_("suspend", client.suspend_engines)
        await signal_("resume", client.resume_engines)
        await signal_("unpause", client.unpause_engines)
    if "SET_GENERATION_EPOCH" in names:
        await signal_("set-generation-epoch", client.set_generation_epoch, 7)
    if "START_CUDA_PROFILER" in names:
        await signal_("start-cuda-profiler", client.start_cuda_profiler)
        await signal_("stop-cuda-profiler", client.stop_cuda_profiler)
    if "PAUSE_ACK" not in names:
        await signal_("pause-before-stop", client.pause_engines)
    await signal_("stop", client.stop_engines)
    if "SHUTDOWN" in names:
        await signal_("shutdown", client.shutdown_coordinator)
    step("end")
    try:
        client.stop()
    except Exception:  # noqa: BLE001 - some refs' stop() cancels a task already gone
        pass


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--stage", required=True)
    ap.add_argument("--dialect", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--engines", type=int, default=1)
    ap.add_argument("--wait", type=float, default=10.0)
    args = ap.parse_args()
    stage = os.path.abspath(args.stage)
    sys.path.insert(0, stage)
    sys.path.insert(1, HERE)
    read = lambda f: open(os.path.join(stage, f)).read().strip()  # noqa: E731
    kind = read(".ref_kind")
    from megatron.core.inference.headers import Headers

    names = [h.name for h in Headers]
    proc, coord_addr, ready = start_coordinator(stage, args.engines)
    rec = Recorder(coord_addr, Headers)
    if kind == "legacy":
        from legacy_engine import LegacyEngine

        engines = [LegacyEngine(i, rec.address) for i in range(args.engines)]
    else:
        from fake_engine import FakeEngine
        from harness_model import CodepointTokenizer

        engines = [FakeEngine(i, rec.address, tokenizer=CodepointTokenizer(), step_seconds=0.001,
                              max_requests=64, block_size_tokens=16, enable_prefix_caching=True)
                   for i in range(args.engines)]
    for e in engines:
        e.start()
    if not ready.wait(30):
        proc.kill()
        sys.exit("capture: the coordinator did not get ready")
    error = None
    try:
        asyncio.run(scenarios(rec, rec.address, names, kind, args.wait))
    except Exception as e:  # noqa: BLE001 - written into the fixture, and the exit code
        error = f"{type(e).__name__}: {e}"
    time.sleep(0.5)
    proc.join(3)
    alive = proc.is_alive()
    if alive:
        proc.kill()
    rec.close()
    fixture = {
        "dialect": args.dialect, "ref": read(".ref"), "commit": read(".megatron_commit"),
        "made_by": "scripts/megatron/capture.py", "engines": "legacy_engine.py" if kind == "legacy"
        else "fake_engine.py (dynamic_engine.py's wire methods)",
        "headers": {h.name: h.value for h in Headers},
        "coordinator_exit": None if alive else proc.exitcode, "error": error,
        "messages": rec.messages,
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(fixture, f, indent=1)
        f.write("\n")
    seen = sorted({(m["direction"], m["header"]) for m in rec.messages})
    print(f"capture: {args.dialect} {len(rec.messages)} messages, coordinator "
          f"{'alive' if alive else f'exited {proc.exitcode}'}{', error ' + error if error else ''}",
          file=sys.stderr)
    for d, h in seen:
        print(f"  {d:22} {h}", file=sys.stderr)
    sys.exit(1 if error else 0)


if __name__ == "__main__":
    main()
