"""Python's block-hash chain, timed for `pnpm bench blockHashes` in the same run.

The chain is Megatron-LM's reference as the project's perf notes give it (hashlib SHA-256 per
block over `parent || block`, tokens packed as little-endian int64, each digest's first 8 bytes
reduced mod 2^63 - 1, plus one), on 32,768 token ids. Two columns:

- "list in": end to end, a list of token ids in (packed with struct, as the Python client must
  pack them), the list of hashes out: the work Python does per prompt.
- "bytes ready": the chain alone, over bytes packed beforehand: Python's best case.

Each figure is a ratio of one-shot SHA-256 over the same bytes (hashlib, timed here), so it is
comparable with the Node side's ratios of `crypto.hash` (both are OpenSSL). Times are this
process's CPU time (time.process_time), medians, as on the Node side: on a shared machine wall
time counts descheduled time as slow. Prints one JSON object. Needs only the standard library.
"""
import hashlib
import json
import random
import struct
import sys
import time

MOD = (1 << 63) - 1
TOKENS = 32768
SAMPLES = 7 if "--quick" in sys.argv else 21


def chain_bytes(data, blocks, bs):
    parent = b"\x00" * 32
    out = []
    for i in range(blocks):
        d = hashlib.sha256(parent + data[i * bs * 8 : (i + 1) * bs * 8]).digest()
        out.append(int.from_bytes(d[:8], "little") % MOD + 1)
        parent = d
    return out


def chain(tokens, bs):
    n = len(tokens) // bs
    return chain_bytes(struct.pack(f"<{n * bs}q", *tokens[: n * bs]), n, bs)


def median_seconds(f, inner):
    times = []
    for _ in range(SAMPLES):
        start = time.process_time()
        for _ in range(inner):
            f()
        times.append((time.process_time() - start) / inner)
    times.sort()
    return times[len(times) // 2]


random.seed(1)
tokens = [random.randrange(128256) for _ in range(TOKENS)]
data = struct.pack(f"<{TOKENS}q", *tokens)
ceiling = median_seconds(lambda: hashlib.sha256(data).digest(), 50)
result = {"python": sys.version.split()[0], "ceiling_mb_per_s": len(data) / ceiling / 1e6, "list_in": {}, "bytes_ready": {}}
for bs in (16, 64, 256):
    assert chain(tokens, bs) == chain_bytes(data, TOKENS // bs, bs)
    result["list_in"][bs] = ceiling / median_seconds(lambda: chain(tokens, bs), 5)
    result["bytes_ready"][bs] = ceiling / median_seconds(lambda: chain_bytes(data, TOKENS // bs, bs), 5)
print(json.dumps(result))
