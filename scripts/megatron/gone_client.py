#!/usr/bin/env python3
"""Probe: does the coordinator at a staged ref survive a reply for a client that has gone?

  gone_client.py --stage DIR

Runs run_coordinator.py (one engine), then with raw DEALERs: client A pauses the engines;
client B submits one request and closes its socket; A unpauses. The engine finishes B's request
and the coordinator routes the reply to B's vanished identity. With ROUTER_MANDATORY
(core_v0.17 and later) that send raises EHOSTUNREACH outside any `try`: the coordinator dies.
Prints `survives` or `dies: <exception>`; exit 0 when it survives. (packages/protocol/DIALECTS.md,
"A client request interrupted on a dialect without ABORT".)
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import msgpack
import zmq

HERE = os.path.dirname(os.path.abspath(__file__))
ap = argparse.ArgumentParser()
ap.add_argument("--stage", required=True)
args = ap.parse_args()
sys.path.insert(0, os.path.abspath(args.stage))
from megatron.core.inference.headers import Headers  # noqa: E402

V = {h.name: h.value for h in Headers}
stats = os.path.join(tempfile.mkdtemp(prefix="gone-client."), "stats.json")
p = subprocess.Popen([sys.executable, os.path.join(HERE, "run_coordinator.py"), "--stage", args.stage,
                      "--engines", "1", "--stats", stats], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
addr = p.stdout.readline().strip()
p.stdout.readline()
ctx = zmq.Context()


def client(ident):
    s = ctx.socket(zmq.DEALER)
    s.setsockopt(zmq.IDENTITY, ident)
    s.setsockopt(zmq.LINGER, 0)
    s.connect(addr)
    s.send(msgpack.packb([V["CONNECT"]]))
    s.recv()
    return s


try:
    a = client(b"probe-control")
    a.send(msgpack.packb([V["PAUSE"]]))
    time.sleep(0.3)
    b = client(b"probe-gone")
    b.send(msgpack.packb([V["SUBMIT_REQUEST"], 0, "hi", {"num_tokens_to_generate": 2}]))
    time.sleep(0.3)
    b.close()
    time.sleep(0.3)
    a.send(msgpack.packb([V["UNPAUSE"]]))
    time.sleep(1.0)
    with open(stats) as f:
        c = json.load(f)["coordinator"]
finally:
    p.terminate()
    p.wait()
if c["alive"] and not c["exception"]:
    print("survives")
    sys.exit(0)
print(f"dies: {c['exception']}")
sys.exit(1)
