"""An engine rank for the legacy refs (core_v0.16 .. core_v0.19), whose dynamic_engine.py
methods cannot be staged without the model stack (fake_engine.py covers main and pr-6497 with
Megatron's own methods).

This one is the harness's own code, written from packages/protocol/DIALECTS.md: a DEALER with
identity `mp-coord-{rank}` that registers with an empty frame, then speaks the single-frame
wire of the staged ref with the staged `Headers` (so the values are the ref's). The replies are
real: the staged `DynamicInferenceRequest`, serialized as that ref's engine serializes it
(0.16: the record, `record.serialize()`; 0.17+: `record.merge().serialize()`), one batch per
step. Tokens come from harness_model.expected_token, one per step of `step_seconds`.

Signals: PAUSE (0.16: answered with PAUSE_ACK), UNPAUSE, SUSPEND, RESUME, SET_GENERATION_EPOCH
(stamped into later replies' `policy_epoch` where the request has one), START/STOP_CUDA_PROFILER
(counted), STOP (0.16: STOP_ACK; 0.17+: DISCONNECT, then the rank exits). While paused, no
request makes progress. Anything else raises, as the real engine's `UnknownHeaderError` does.

Each SUBMIT's prompt seed and length are listed in the stats (`prompts`), as fake_engine.py's.
With HARNESS_HOLD_REQUESTS=1 in the environment no request is ever answered: what routing.sh
needs, a coordinator whose engines' loads only grow while a sequence is routed.
"""
import os
import threading
import time

import msgpack
import zmq

from harness_model import CodepointTokenizer, expected_token, prompt_seed

HOLD = os.environ.get("HARNESS_HOLD_REQUESTS") == "1"


class LegacyEngine:
    def __init__(self, rank, address, *, step_seconds=0.001):
        import torch  # the staged stub
        from megatron.core.inference.headers import Headers
        from megatron.core.inference.inference_request import (
            DynamicInferenceRequest,
            DynamicInferenceRequestRecord,
            Status,
        )
        from megatron.core.inference.sampling_params import SamplingParams

        self.torch, self.H, self.Req, self.Rec, self.Status, self.SP = (
            torch, Headers, DynamicInferenceRequest, DynamicInferenceRequestRecord, Status, SamplingParams)
        self.rank, self.address, self.step = rank, address, step_seconds
        self.tok = CodepointTokenizer()
        self.names = {h.name for h in Headers}
        self.paused = False
        self.epoch = None
        self.active = {}  # crid -> [request, prompt_ids, target]
        self.stats = {"received": [], "sent": [], "suspend_calls": 0, "resume_calls": 0,
                      "profiler": {"start": 0, "stop": 0}, "epoch": None, "errors": [], "prompts": []}
        self.thread = None
        self.stopped = threading.Event()

    def v(self, name):
        return getattr(self.H, name).value

    def start(self):
        self.thread = threading.Thread(target=self._run, name=f"legacy-engine-{self.rank}", daemon=True)
        self.thread.start()

    def _send(self, sock, payload):
        self.stats["sent"].append(self.H(payload[0]).name)
        sock.send(msgpack.packb(payload, use_bin_type=True))

    def _reply(self, crid):
        req, ids, target = self.active.pop(crid)
        seed = prompt_seed(ids)
        req.generated_tokens = [expected_token(seed, i) for i in range(target)]
        req.status = self.Status.COMPLETED
        if self.epoch is not None and hasattr(req, "policy_epoch"):
            req.policy_epoch = [[0, self.epoch]]
        rec = self.Rec.from_request(req)
        return rec.serialize() if "PAUSE_ACK" in self.names else rec.merge().serialize()

    def _run(self):
        ctx = zmq.Context()
        sock = ctx.socket(zmq.DEALER)
        sock.setsockopt(zmq.IDENTITY, f"mp-coord-{self.rank}".encode())
        sock.setsockopt(zmq.LINGER, 1000)
        sock.connect(self.address)
        sock.send(b"")
        try:
            while not self.stopped.is_set():
                while sock.poll(0):
                    if self._handle(sock, msgpack.unpackb(sock.recv(), raw=False)):
                        return
                if self.active and not self.paused and not HOLD:
                    done = [crid for crid in self.active]
                    self._send(sock, [self.v("ENGINE_REPLY"), [self._reply(c) for c in done]])
                time.sleep(self.step if self.active else 0.02)
        except Exception as e:  # noqa: BLE001 - recorded for the stats, then the rank dies
            self.stats["errors"].append(f"{type(e).__name__}: {e}")
            raise
        finally:
            sock.close()
            ctx.term()

    def _handle(self, sock, data):
        h = self.H(data[0])
        self.stats["received"].append(h.name)
        if h.name == "SUBMIT_REQUEST":
            crid, prompt, sp = data[1:4]
            sp = self.SP.deserialize(sp)
            ids = self.tok.tokenize(prompt) if isinstance(prompt, str) else list(prompt)
            req = self.Req(request_id=crid, prompt=prompt if isinstance(prompt, str) else None,
                           prompt_tokens=self.torch.tensor(ids), sampling_params=sp)
            self.active[crid] = [req, ids, sp.num_tokens_to_generate or 4]
            self.stats["prompts"].append([prompt_seed(ids), len(ids)])
        elif h.name == "PAUSE":
            self.paused = True
            if "PAUSE_ACK" in self.names:
                self._send(sock, [self.v("PAUSE_ACK")])
        elif h.name == "UNPAUSE":
            self.paused = False
        elif h.name == "SUSPEND":
            self.stats["suspend_calls"] += 1
        elif h.name == "RESUME":
            self.stats["resume_calls"] += 1
        elif h.name == "SET_GENERATION_EPOCH":
            self.epoch = self.stats["epoch"] = data[1]
        elif h.name == "START_CUDA_PROFILER":
            self.stats["profiler"]["start"] += 1
            self.torch.cuda.cudart().cudaProfilerStart()  # counted by the stub, as for fake_engine
        elif h.name == "STOP_CUDA_PROFILER":
            self.stats["profiler"]["stop"] += 1
            self.torch.cuda.cudart().cudaProfilerStop()
        elif h.name == "STOP":
            if "STOP_ACK" in self.names:
                self._send(sock, [self.v("STOP_ACK")])
            else:
                self._send(sock, [self.v("DISCONNECT")])
                return True
        elif h.name in ("PAUSE_ACK", "STOP_ACK"):  # 0.16: the coordinator's all-acked echo
            if h.name == "STOP_ACK":
                return True
        else:
            raise RuntimeError(f"legacy engine: specialize for {h.name}")
        return False
