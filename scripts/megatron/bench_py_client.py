#!/usr/bin/env python3
"""Megatron-LM's own Python InferenceClient (staged from a ref) as a load generator, for
`pnpm bench coordinator`: a burst of N requests in flight at once against a coordinator.

  bench_py_client.py --stage DIR ADDRESS --burst N [--tokens T] [--prompt-tokens P] [--warmup W]

After the warm-up it prints `warm` and waits for a line on standard input (the bench reads the
coordinator's CPU then), then bursts and prints one JSON line: {"requests": N, "seconds": wall time of the burst, "cpu_seconds": this
process's CPU during it, "ok": replies whose tokens are the harness model's}. A reply that is not
COMPLETED, or wrong, is not ok; the bench says so.
"""
import argparse
import asyncio
import inspect
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))

ap = argparse.ArgumentParser()
ap.add_argument("--stage", required=True)
ap.add_argument("address")
ap.add_argument("--burst", type=int, required=True)
ap.add_argument("--tokens", type=int, default=4)
ap.add_argument("--prompt-tokens", type=int, default=32)
ap.add_argument("--warmup", type=int, default=200)
args = ap.parse_args()
sys.path.insert(0, os.path.abspath(args.stage))
sys.path.insert(1, HERE)

from harness_model import expected_token, prompt_seed  # noqa: E402
from megatron.core.inference.inference_client import InferenceClient  # noqa: E402
from megatron.core.inference.sampling_params import SamplingParams  # noqa: E402


def prompt(i):
    # Token ids in the BMP, distinct per request, as the TypeScript side sends them.
    return [100 + (i + j) % 5000 for j in range(args.prompt_tokens)]


def good(reply, ids):
    record = reply if isinstance(reply, dict) else getattr(reply, "__dict__", {})
    tokens = record.get("generated_tokens")
    seed = prompt_seed(ids)
    return list(tokens or []) == [expected_token(seed, k) for k in range(args.tokens)]


async def main():
    client = InferenceClient(args.address)
    started = (client.start(connect_timeout_seconds=10)
               if "connect_timeout_seconds" in inspect.signature(client.start).parameters else client.start())
    if inspect.isawaitable(started):
        await started
    sp = SamplingParams(num_tokens_to_generate=args.tokens)
    await asyncio.gather(*[client.add_request(prompt(i), sp) for i in range(args.warmup)])
    prompts = [prompt(i) for i in range(args.burst)]
    print("warm", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    t0, c0 = time.perf_counter(), time.process_time()
    replies = await asyncio.gather(*[client.add_request(p, sp) for p in prompts])
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    ok = sum(1 for r, p in zip(replies, prompts) if good(r, p))
    print(json.dumps({"requests": args.burst, "seconds": seconds, "cpu_seconds": cpu, "ok": ok}), flush=True)
    client.stop()


asyncio.run(main())
os._exit(0)
