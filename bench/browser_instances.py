#!/usr/bin/env python3
"""Instances for the browser benchmark page (web/bench): MaskBench schemas with their valid
tests tokenized, so the page runs the MaskBench protocol without a tokenizer of its own.

    pip install tokenizers
    python3 bench/browser_instances.py --tokenizer assets/tokenizers/llama3.json \
        --count 60 --out web/bench/instances.json ../shared/data/maskbench-dev

Each test's `data` is written as JSON with ", " and ": " separators and non-ASCII kept (as
`sieve maskbench` and bench/maskbench.py do) and tokenized canonically without special tokens.
The files are taken in name order, every `len(files) / count`-th one.
"""

import argparse
import json
import os

from tokenizers import Tokenizer


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokenizer", required=True)
    ap.add_argument("--count", type=int, default=60, help="schemas to take")
    ap.add_argument("--out", required=True)
    ap.add_argument("dir")
    a = ap.parse_args()
    tok = Tokenizer.from_file(a.tokenizer)
    files = sorted(f for f in os.listdir(a.dir) if f.endswith(".json"))
    step = max(1, len(files) // a.count)
    instances = []
    for name in files[::step][: a.count]:
        with open(os.path.join(a.dir, name)) as f:
            doc = json.load(f)
        texts = [json.dumps(t["data"], ensure_ascii=False, separators=(", ", ": ")) for t in doc["tests"] if t["valid"]]
        tokens = [tok.encode(t, add_special_tokens=False).ids for t in texts]
        instances.append({"id": name, "schema": doc["schema"], "tokens": tokens})
    with open(a.out, "w") as f:
        json.dump({"tokenizer": os.path.basename(a.tokenizer), "instances": instances}, f)
    print(f"{a.out}: {len(instances)} schemas, {sum(len(t) for i in instances for t in i['tokens'])} tokens")


if __name__ == "__main__":
    main()
