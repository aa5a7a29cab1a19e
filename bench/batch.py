#!/usr/bin/env python3
"""Batch mask filling through the Python package: `sieve.fill_next_token_bitmasks` for a batch
of sequences under mixed MaskBench schemas, each sequence following one of its schema's valid
instances token by token; only the fills are timed. Runs the same batch on 1 thread and on
`--threads` threads (each in a process of its own: rayon's pool is sized once per process) and
prints the throughput of each and their ratio.

    pip install crates/sieve-py tokenizers numpy
    python3 bench/batch.py --tokenizer assets/tokenizers/llama3.json --batch 256 ../shared/data/maskbench-dev
"""

import argparse
import json
import os
import subprocess
import sys
import time


def run(a):
    import numpy as np
    import sieve
    from tokenizers import Tokenizer

    tk = Tokenizer.from_file(a.tokenizer)
    with open(a.tokenizer) as f:
        vocab = sieve.Vocabulary.from_tokenizer_json(f.read())
    files = sorted(os.path.join(a.dir, f) for f in os.listdir(a.dir))
    work = []  # (constraint, token ids of a valid instance)
    for path in files:
        with open(path) as f:
            doc = json.load(f)
        valid = [t["data"] for t in doc.get("tests", []) if t["valid"]]
        if not valid:
            continue
        try:
            c = sieve.Constraint.json_schema(doc["schema"], property_order=10)
        except sieve.CompileError:
            continue
        text = json.dumps(valid[0], ensure_ascii=False, separators=(", ", ": "))
        work.append((c, tk.encode(text, add_special_tokens=False).ids))
        if len(work) == a.schemas:
            break
    rows = [(sieve.Matcher(work[i % len(work)][0], vocab), work[i % len(work)][1]) for i in range(a.batch)]
    matchers = [m for m, _ in rows]
    bitmask = np.zeros((a.batch, vocab.mask_words), dtype=np.int32)
    fill_s, filled = 0.0, 0
    for step in range(a.steps):
        t0 = time.perf_counter()
        errors = sieve.fill_next_token_bitmasks(matchers, bitmask)
        fill_s += time.perf_counter() - t0
        filled += a.batch
        assert not any(errors), errors
        for m, ids in rows:
            if step < len(ids):
                assert m.accept_token(ids[step])
    print(json.dumps({"rows_per_s": filled / fill_s, "us_per_batch": 1e6 * fill_s / a.steps}))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokenizer", required=True)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--schemas", type=int, default=64, help="distinct schemas in the batch")
    ap.add_argument("--steps", type=int, default=40, help="tokens each sequence advances")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("dir")
    a = ap.parse_args()
    if a.one:
        return run(a)
    results = {}
    for threads in (1, a.threads):
        env = {**os.environ, "RAYON_NUM_THREADS": str(threads)}
        out = subprocess.run([sys.executable, __file__, "--one", *sys.argv[1:]], env=env, check=True, capture_output=True, text=True)
        results[threads] = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"{threads} thread(s): {results[threads]['rows_per_s']:,.0f} rows/s, {results[threads]['us_per_batch']:,.0f} µs per batch of {a.batch}")
    print(f"{a.threads} threads / 1: {results[a.threads]['rows_per_s'] / results[1]['rows_per_s']:.2f}x")


if __name__ == "__main__":
    main()
