#!/usr/bin/env python3
"""Batch mask filling through Python, side by side: sieve's `fill_next_token_bitmasks`,
xgrammar's `BatchGrammarMatcher.batch_fill_next_token_bitmask` and llguidance's
`fill_next_token_bitmask_par`, for a batch of sequences under mixed MaskBench schemas. Each
sequence follows one of its schema's valid instances token by token; only the fills are timed.

The schemas are the first `--schemas` files that every engine compiles and whose instance every
engine accepts token by token (so all engines do the same work). Each engine runs on 1 thread and
on `--threads` threads, each in processes of their own (thread pools are sized once per
process) that take turns, `--rounds` processes each; a process fills the batch `--repeat` times
from freshly compiled schemas (cold caches each time, as for new schemas in a server). The table
gives the best run's rows per second (as `timeit` advises: slower runs measure other work on the
machine, which a shared 2-core machine has plenty of) and the speed-up over one thread.

    pip install crates/sieve-py llguidance xgrammar torch transformers numpy
    python3 bench/batch.py --tokenizer assets/tokenizers/llama3.json --batch 256 ../shared/data/maskbench-dev
"""

import argparse
import json
import os
import subprocess
import sys
import time

ENGINES = ("sieve", "xgrammar", "llguidance")


def instances(a):
    """(schema, token ids of its first valid instance) for the MaskBench files, in order."""
    from tokenizers import Tokenizer

    tk = Tokenizer.from_file(a.tokenizer)
    for name in sorted(os.listdir(a.dir)):
        with open(os.path.join(a.dir, name)) as f:
            doc = json.load(f)
        valid = [t["data"] for t in doc.get("tests", []) if t["valid"]]
        if valid:
            text = json.dumps(valid[0], ensure_ascii=False, separators=(", ", ": "))
            yield name, doc["schema"], tk.encode(text, add_special_tokens=False).ids


def sieve_engine(a, threads):
    import numpy as np
    import sieve

    with open(a.tokenizer) as f:
        vocab = sieve.Vocabulary.from_tokenizer_json(f.read())

    def compile_fn(schema):
        # As `sieve maskbench`: any order for objects of up to 10 properties.
        c = sieve.Constraint.json_schema(schema, property_order=10)
        return lambda: sieve.Matcher(c, vocab)

    def bitmask(batch):
        return np.zeros((batch, vocab.mask_words), dtype=np.int32)

    def fill(matchers, mask):
        assert not any(sieve.fill_next_token_bitmasks(matchers, mask))

    return compile_fn, bitmask, fill, lambda m, t: m.accept_token(t)


def xgrammar_engine(a, threads):
    import torch
    import xgrammar as xgr
    from transformers import PreTrainedTokenizerFast

    torch.set_num_threads(1)
    info = xgr.TokenizerInfo.from_huggingface(PreTrainedTokenizerFast(tokenizer_file=a.tokenizer))
    compiler = xgr.GrammarCompiler(info, max_threads=1, cache_enabled=False)
    batch_matcher = xgr.BatchGrammarMatcher(max_threads=threads)

    def compile_fn(schema):
        compiled = compiler.compile_json_schema(json.dumps(schema), any_whitespace=True, strict_mode=False)
        return lambda: xgr.GrammarMatcher(compiled)

    def fill(matchers, mask):
        batch_matcher.batch_fill_next_token_bitmask(matchers, mask)

    return compile_fn, lambda batch: xgr.allocate_token_bitmask(batch, info.vocab_size), fill, lambda m, t: m.accept_token(t)


def llguidance_engine(a, threads):
    import llguidance
    import llguidance.hf
    import llguidance.numpy
    from transformers import PreTrainedTokenizerFast

    tok = llguidance.hf.from_tokenizer(PreTrainedTokenizerFast(tokenizer_file=a.tokenizer))
    executor = llguidance.LLExecutor(num_threads=threads)

    def compile_fn(schema):
        grammar = llguidance.LLMatcher.grammar_from_json_schema(json.dumps(schema))
        if llguidance.LLMatcher.validate_grammar(grammar, tok):
            raise ValueError("llguidance does not compile it")
        return lambda: llguidance.LLMatcher(tok, grammar)

    def fill(matchers, mask):
        llguidance.numpy.fill_next_token_bitmask_par(executor, [(m, i) for i, m in enumerate(matchers)], mask)

    def accept(m, t):
        return m.consume_token(t) and not m.is_error()

    return compile_fn, lambda batch: llguidance.numpy.allocate_token_bitmask(batch, tok.vocab_size), fill, accept


SETUP = {"sieve": sieve_engine, "xgrammar": xgrammar_engine, "llguidance": llguidance_engine}


def select(a):
    """Prints the names of the first `--schemas` files every engine compiles and follows."""
    engines = [SETUP[e](a, 1) for e in ENGINES]
    chosen = []
    for name, schema, ids in instances(a):
        try:
            followed = True
            for compile_fn, _, _, accept in engines:
                m = compile_fn(schema)()
                followed = followed and all(accept(m, t) for t in ids[: a.steps])
        except Exception:  # an engine that does not compile this schema
            continue
        if followed:
            chosen.append(name)
            if len(chosen) == a.schemas:
                break
    print(json.dumps(chosen))


def run(a, engine, threads, chosen):
    """Times the batch fills of one engine on `threads` threads, `--repeat` times from freshly
    compiled schemas (so each run starts from cold caches); prints the best run's rows per second."""
    compile_fn, bitmask, fill, accept = SETUP[engine](a, threads)
    chosen_instances = [(schema, ids) for name, schema, ids in instances(a) if name in chosen]
    mask = bitmask(a.batch)
    rates = []
    for _ in range(a.repeat):
        work = [(compile_fn(schema), ids) for schema, ids in chosen_instances]
        rows = [(work[i % len(work)][0](), work[i % len(work)][1]) for i in range(a.batch)]
        matchers = [m for m, _ in rows]
        fill_s = 0.0
        for step in range(a.steps):
            t0 = time.perf_counter()
            fill(matchers, mask)
            fill_s += time.perf_counter() - t0
            for m, ids in rows:
                if step < len(ids):
                    assert accept(m, ids[step])
        rates.append(a.batch * a.steps / fill_s)
    print(json.dumps({"rows_per_s": max(rates)}))


def child(args, extra_env=None):
    env = {**os.environ, **(extra_env or {})}
    out = subprocess.run([sys.executable, __file__, *args], env=env, check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokenizer", required=True)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--schemas", type=int, default=64, help="distinct schemas in the batch")
    ap.add_argument("--steps", type=int, default=40, help="tokens each sequence advances")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=9, help="runs per process, from freshly compiled schemas")
    ap.add_argument("--rounds", type=int, default=3, help="processes per engine and thread count, taking turns")
    ap.add_argument("--engines", default=",".join(ENGINES))
    ap.add_argument("--child", nargs=3, metavar=("ENGINE", "THREADS", "CHOSEN"), help=argparse.SUPPRESS)
    ap.add_argument("--select", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("dir")
    a = ap.parse_args()
    if a.select:
        return select(a)
    if a.child:
        engine, threads, chosen = a.child
        return run(a, engine, int(threads), set(json.loads(chosen)))
    common = [f"--tokenizer={a.tokenizer}", f"--batch={a.batch}", f"--schemas={a.schemas}", f"--steps={a.steps}", f"--repeat={a.repeat}", a.dir]
    chosen = child(["--select", *common])
    print(f"{len(chosen)} schemas, batch {a.batch}, {a.steps} steps, best of {a.rounds} x {a.repeat} runs\n")
    print(f"| engine | 1 thread (rows/s) | {a.threads} threads (rows/s) | speed-up |")
    print("|---|---:|---:|---:|")
    for engine in a.engines.split(","):
        # Processes of 1 and of `--threads` threads take turns, so that a slow spell of a shared
        # machine weighs on both columns alike. (NumPy's BLAS threads would spin beside them.)
        rates = {1: [], a.threads: []}
        for _ in range(a.rounds):
            for t in rates:
                rates[t].append(child(["--child", engine, str(t), json.dumps(chosen), *common], {"RAYON_NUM_THREADS": str(t), "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"})["rows_per_s"])
        one, many = max(rates[1]), max(rates[a.threads])
        print(f"| {engine} | {one:,.0f} | {many:,.0f} | {many / one:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
