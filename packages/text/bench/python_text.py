"""The Python side of `pnpm bench text`: Python's `tokenizers` (Rust) on the same inputs.

    python3 python_text.py TOKENIZER_JSON DOCUMENTS_JSON IDS_JSON SAMPLES

Prints one JSON object: encode MB/s (UTF-8 bytes of the documents per second, encoded one at a
time) and incremental
detokenize tokens/s with `tokenizers.decoders.DecodeStream` at each sequence length, medians of
SAMPLES samples, CPU time of this process (time.process_time), one thread.
"""
import json
import os
import sys
import time

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("RAYON_NUM_THREADS", "1")

from tokenizers import Tokenizer  # noqa: E402
from tokenizers.decoders import DecodeStream  # noqa: E402


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def per_call(f, min_seconds=0.05):
    f()
    repeats = 1
    while True:
        start = time.process_time()
        for _ in range(repeats):
            f()
        elapsed = time.process_time() - start
        if elapsed >= min_seconds:
            return elapsed / repeats
        repeats *= 2


def main():
    tokenizer_json, documents_file, ids_file, samples = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    tokenizer = Tokenizer.from_file(tokenizer_json)
    with open(documents_file, encoding="utf-8") as f:
        documents = json.load(f)
    with open(ids_file, encoding="utf-8") as f:
        ids = json.load(f)
    size = sum(len(d.encode("utf-8")) for d in documents)

    def encode_all():
        for document in documents:
            tokenizer.encode(document, add_special_tokens=True)

    encode = [size / per_call(encode_all) / 1e6 for _ in range(samples)]

    def detokenize(n):
        def run():
            stream = DecodeStream(skip_special_tokens=False)
            for i in ids[:n]:
                stream.step(tokenizer, i)
        return [n / per_call(run) for _ in range(samples)]

    print(json.dumps({
        "encodeMBps": median(encode),
        "detokenize": {str(n): median(detokenize(n)) for n in (100, 32768)},
    }))


if __name__ == "__main__":
    main()
