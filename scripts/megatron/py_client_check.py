#!/usr/bin/env python3
"""The harness's own check: Megatron-LM's Python InferenceClient, staged from the same ref as
the coordinator, against run_coordinator.py. If Megatron's own client does not get correct
replies here, a failure of another client says nothing about that client.

  py_client_check.py --stage DIR ADDRESS [--stats FILE]

Runs: 40 submits (text and token prompts, return_prompt_tokens, detokenize_generations),
8 streams (partials in order, then the final), an abort mid-stream, pause / unpause (a request
sent while paused finishes only after unpause), suspend / resume, set epoch (stamped into the
reply's policy_epoch), profiler start / stop (counted by the engines, read from --stats), KV
hand-off (prefill with do_kv_handoff -> decode with the prefill's kv_meta and block ids ->
release, read back from --stats), and, at refs whose client takes media, one image request
(a text-only engine must answer it with status FAILED, not hang).
Prints one JSON line {requests, correct, wrong, errors, hung, checks} and `holds` or `short`.
Exit 0 only if it holds.
"""
import argparse
import asyncio
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))

ap = argparse.ArgumentParser()
ap.add_argument("--stage", required=True)
ap.add_argument("address")
ap.add_argument("--stats", default=None)
args = ap.parse_args()
sys.path.insert(0, os.path.abspath(args.stage))
sys.path.insert(1, HERE)

from harness_model import CodepointTokenizer, expected_token, prompt_seed  # noqa: E402
from megatron.core.inference.inference_client import InferenceClient  # noqa: E402
from megatron.core.inference.sampling_params import SamplingParams  # noqa: E402
from megatron.core.inference.headers import Headers  # noqa: E402

# What this ref has (packages/protocol/DIALECTS.md, "Features"); the rest is skipped.
NAMES = {h.name for h in Headers}
HAS = {
    "streaming": "ENGINE_REPLY_PARTIAL" in NAMES,
    "abort": "ABORT_REQUEST" in NAMES,
    "kv": "SUBMIT_REQUEST_WITH_KV" in NAMES,
    "epoch": "SET_GENERATION_EPOCH" in NAMES,
    "profiler": "START_CUDA_PROFILER" in NAMES,
    "pause_ack": "PAUSE_ACK" in NAMES,  # core_v0.16: a second PAUSE before UNPAUSE kills it
}

TOK = CodepointTokenizer()
tally = {"requests": 0, "correct": 0, "wrong": 0, "errors": 0, "hung": 0}
checks = {}
problems = []


def expected(prompt, n):
    ids = TOK.tokenize(prompt) if isinstance(prompt, str) else list(prompt)
    seed = prompt_seed(ids)
    return ids, [expected_token(seed, i) for i in range(n)]


def verdict(label, reply, prompt, n, *, extra=None):
    ids, gen = expected(prompt, n)
    if not isinstance(reply, dict) and hasattr(reply, "serialize"):  # core_v0.16 deserializes
        reply = reply.serialize()
    if isinstance(reply.get("requests"), list) and reply["requests"]:  # core_v0.16: a record
        reply = reply["requests"][-1]
    bad = []
    if reply.get("status") != "COMPLETED":
        bad.append(f"status {reply.get('status')}")
    if reply.get("generated_tokens") != gen:
        bad.append(f"generated_tokens {str(reply.get('generated_tokens'))[:80]} != {str(gen)[:80]}")
    if "prompt_length" in reply and reply.get("prompt_length") != len(ids):
        bad.append(f"prompt_length {reply.get('prompt_length')} != {len(ids)}")
    # core_v0.16..0.18's coordinator detokenizes a token prompt into `prompt`
    if reply.get("prompt") not in ((prompt,) if isinstance(prompt, str) else (None, TOK.detokenize(ids))):
        bad.append(f"prompt {str(reply.get('prompt'))[:40]!r}")
    if extra:
        bad += extra(reply, ids, gen)
    tally["requests"] += 1
    if bad:
        tally["wrong"] += 1
        problems.append(f"{label}: " + "; ".join(bad))
    else:
        tally["correct"] += 1
    return not bad


def read_stats():
    if not args.stats:
        return None
    with open(args.stats) as f:
        return json.load(f)


async def wait_stats(pred, timeout=3.0):
    t0 = time.time()
    while time.time() - t0 < timeout:
        s = read_stats()
        if s is not None and pred(s):
            return True
        await asyncio.sleep(0.05)
    return False


def sp(**kw):
    p = SamplingParams(**{k: v for k, v in kw.items() if k in SamplingParams.__dataclass_fields__})
    p.add_attributes({k: v for k, v in kw.items() if k not in SamplingParams.__dataclass_fields__})
    return p


async def bounded(fut, t=10.0):
    try:
        return await asyncio.wait_for(fut, t)
    except asyncio.TimeoutError:
        tally["hung"] += 1
        tally["requests"] += 1
        raise


async def main():
    import inspect

    client = InferenceClient(args.address)
    CLIENT.append(client)
    started = (client.start(connect_timeout_seconds=10)
               if "connect_timeout_seconds" in inspect.signature(client.start).parameters else client.start())
    if inspect.isawaitable(started):  # core_v0.16: async def start
        await started

    # 1. submits
    prompts = [f"prompt {i}: the quick brown fox" if i % 2 == 0 else [7 + i, 1000 + i] + list(range(i, i + 20))
               for i in range(40)]
    futs = []
    for i, p in enumerate(prompts):
        kw = {"num_tokens_to_generate": 4 + i % 5}
        if i % 4 == 1 and "return_prompt_tokens" in SamplingParams.__dataclass_fields__:
            kw["return_prompt_tokens"] = True
        if i % 4 == 2:
            kw["detokenize_generations"] = True
        futs.append((p, kw, client.add_request(p, sp(**kw))))
    for i, (p, kw, f) in enumerate(futs):
        try:
            r = await bounded(f)
        except Exception as e:
            tally["errors"] += 1
            problems.append(f"submit {i}: {type(e).__name__}: {e}")
            continue

        def extra(r, ids, gen, kw=kw):
            bad = []
            if kw.get("return_prompt_tokens") and r.get("prompt_tokens") != ["tensor", ids]:
                bad.append(f"prompt_tokens {str(r.get('prompt_tokens'))[:60]}")
            if kw.get("detokenize_generations") and r.get("generated_text") != TOK.detokenize(gen):
                bad.append(f"generated_text {r.get('generated_text')!r}")
            return bad

        verdict(f"submit {i}", r, p, kw["num_tokens_to_generate"], extra=extra)

    # 2. streams
    async def one_stream(i):
        p = [100 + i] * (5 + i)
        n = 12
        stream = client.add_request_streaming(p, sp(num_tokens_to_generate=n))
        parts, final = [], None
        async for item in stream:
            if "partial" in item:
                parts.extend(item["partial"]["new_tokens"])
            else:
                final = item["final"]
        _, gen = expected(p, n)
        ok_parts = parts == gen[: len(parts)] and len(parts) >= n - 1
        verdict(f"stream {i}", final or {}, p, n,
                extra=lambda r, ids, g: [] if ok_parts else [f"partials {parts} vs {g}"])

    if HAS["streaming"]:
        await asyncio.wait_for(asyncio.gather(*(one_stream(i) for i in range(8))), 20)

    # 3. abort mid-stream
    if HAS["abort"]:
        await abort_stream()
    await controls(client)


async def abort_stream():
    client = CLIENT[0]
    p = [5, 6, 7, 8]
    stream = client.add_request_streaming(p, sp(num_tokens_to_generate=2000))
    got = 0
    async for item in stream:
        if "partial" in item:
            got += 1
            if got == 3:
                client.abort_request(stream.request_id)
    checks["abort_stream_closed"] = got >= 3
    if args.stats:
        checks["abort_honoured"] = await wait_stats(
            lambda s: any(a[1] < 2000 for e in s["engines"] for a in e["aborted"]))



async def controls(client):
    # 4. pause / unpause, suspend / resume, epoch, profiler
    client.pause_engines()
    await asyncio.sleep(0.2)
    p = "paused request"
    f = client.add_request(p, sp(num_tokens_to_generate=3))
    await asyncio.sleep(0.4)
    checks["pause_holds_requests"] = not f.done()
    if HAS["pause_ack"]:  # core_v0.16: suspend_engines() is PAUSE + SUSPEND; unpause first
        client.unpause_engines()
    client.suspend_engines()
    await asyncio.sleep(0.2)
    client.resume_engines()
    await asyncio.sleep(0.2)
    if not HAS["pause_ack"]:  # core_v0.16: resume_engines() is RESUME + UNPAUSE
        client.unpause_engines()
    try:
        verdict("after unpause", await bounded(f), p, 3)
    except Exception as e:
        tally["errors"] += 1
        problems.append(f"after unpause: {type(e).__name__}: {e}")
    if args.stats:
        checks["suspend_resume_reached_every_engine"] = await wait_stats(
            lambda s: all(e["suspend_calls"] == 1 and e["resume_calls"] == 1 for e in s["engines"]))
    if not HAS["epoch"]:
        await kv_and_media(client)
        return
    client.set_generation_epoch(7)
    await asyncio.sleep(0.1)
    p = [9, 9, 9]
    r = await bounded(client.add_request(p, sp(num_tokens_to_generate=2)))
    verdict("epoch", r, p, 2, extra=lambda r, ids, g: [] if r.get("policy_epoch") == [[0, 7]]
            else [f"policy_epoch {r.get('policy_epoch')}"])
    if HAS["profiler"]:
        client.start_cuda_profiler()
        client.stop_cuda_profiler()
        if args.stats:
            n_eng = len(read_stats()["engines"])
            checks["profiler_reached_every_engine"] = await wait_stats(
                lambda s: s["cuda_profiler"] == {"start": n_eng, "stop": n_eng})
    await kv_and_media(client)


async def kv_and_media(client):
    if not HAS["kv"]:
        return

    # 5. KV hand-off: prefill -> decode -> release
    p = list(range(200, 240))  # 40 tokens: 3 blocks of 16
    pre = await bounded(client.add_request(p, sp(num_tokens_to_generate=1, do_kv_handoff=True)))
    verdict("kv prefill", pre, p, 1)
    dp = pre.get("disaggregated_params") or {}
    checks["kv_prefill_has_params"] = bool(dp.get("block_ids")) and "kv_meta" in dp
    if checks["kv_prefill_has_params"]:
        dec = await bounded(client.add_request_with_kv_handoff(
            p, sp(num_tokens_to_generate=6), dp["kv_meta"], dp["block_ids"]))
        verdict("kv decode", dec, p, 6)
        client.release_handoff(dp["request_id"])
        if args.stats:
            checks["kv_release_freed_blocks"] = await wait_stats(
                lambda s: any(dp["request_id"] in e["released_ids"] for e in s["engines"]))

    # 6. media, where this ref's client takes it
    import inspect
    if "multi_modal_data" in inspect.signature(client.add_request).parameters:
        r = await bounded(client.add_request([1, 2, 3], sp(num_tokens_to_generate=2),
                                             multi_modal_data={"image": b"\x89PNG fake"}))
        checks["image_answered_failed_by_text_engine"] = r.get("status") == "FAILED"


async def run():
    await main()
    try:
        CLIENT[0].stop()
    except Exception:  # noqa: BLE001 - some refs' stop() trips on its own cancelled task
        pass


CLIENT = []


try:
    asyncio.run(run())
except Exception as e:
    tally["errors"] += 1
    problems.append(f"aborted run: {type(e).__name__}: {e}")
for p in problems[:10]:
    print("FAIL", p)
holds = (tally["wrong"] == 0 and tally["errors"] == 0 and tally["hung"] == 0 and tally["requests"] > 0
         and all(checks.values()))
print(json.dumps({**tally, "checks": checks}))
print("holds" if holds else "short")
sys.exit(0 if holds else 1)
