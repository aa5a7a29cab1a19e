#!/usr/bin/env python3
"""MaskBench side by side: sieve, llguidance and xgrammar on the same files.

The protocol is the one `sieve maskbench` runs (crates/sieve-cli/src/maskbench.rs):
per file, compile the schema (timed); per test, write `data` as JSON with ", "
and ": " separators and non-ASCII kept, tokenize it canonically without special
tokens as the continuation of a prompt (no SentencePiece "\u2581" in front), and for every token compute the full mask and commit the token (timed
together). The token must be allowed; the matcher must accept at the end.
Everything runs single-threaded on the CPU.

    pip install llguidance xgrammar transformers crates/sieve-py
    python3 bench/maskbench.py --tokenizer assets/tokenizers/llama3.json \
        --sieve target/release/sieve --out-dir /tmp/mb DIR_OR_FILES...

Each engine writes <out-dir>/<engine>.jsonl (one line per file, the same shape
as `sieve maskbench --out`), and the script prints the summary tables side by side;
`--table-only` prints them from the records already there (an engine run apart,
such as xgrammar for hours, joins the others' table).
The Python engines run in a worker process: a file that takes more than
--timeout-s seconds (an engine's compile can run for minutes) is recorded as
failed with `"timeout": true`, counted among the compile errors, and its time
so far counts as its compile time.
"""

import argparse
import json
import multiprocessing
import os
import subprocess
import sys
import time


def spaced(v):
    return json.dumps(v, ensure_ascii=False, separators=(", ", ": "))


def files_of(paths):
    out = []
    for p in paths:
        if os.path.isdir(p):
            out.extend(sorted(os.path.join(p, f) for f in os.listdir(p) if os.path.isfile(os.path.join(p, f))))
        else:
            out.append(p)
    return out


def run_file(path, tokenize, compile_fn):
    """The record of one file. compile_fn(schema) -> (matcher factory, bytes the
    compiled schema holds, or None where the engine does not say); a matcher has
    mask_allows(tok) (computes the full mask), commit(tok) -> bool, accepting()."""
    with open(path) as f:
        doc = json.load(f)
    rec = {"id": os.path.basename(path), "mask_us": [], "tests": [], "warnings": []}
    t0 = time.perf_counter()
    try:
        factory, memory = compile_fn(doc["schema"])
    except Exception as e:  # an engine's compile error fails this schema only
        rec["ttfm_us"] = int((time.perf_counter() - t0) * 1e6)
        rec["compile_error"] = str(e)[:500]
        return rec
    rec["ttfm_us"] = int((time.perf_counter() - t0) * 1e6)
    if memory is not None:
        rec["memory_bytes"] = memory
    for t in doc.get("tests", []):
        ids = tokenize(spaced(t["data"]))
        m = factory()
        rejected_at = None
        for i, tok in enumerate(ids):
            s = time.perf_counter()
            ok = m.mask_allows(tok) and m.commit(tok)
            rec["mask_us"].append(int((time.perf_counter() - s) * 1e6))
            if not ok:
                rejected_at = i
                break
        accepted = rejected_at is None and m.accepting()
        rec["tests"].append({"valid": t["valid"], "accepted": accepted, "rejected_at": rejected_at})
    return rec


def continuation_tokenizer(tokenizer_path):
    """The tokenizer as generation continues a prompt, as `sieve maskbench` has it: a
    SentencePiece tokenizer's "\u2581" in front of the text (a Prepend normalizer, or the
    Metaspace pre-tokenizer's prepend scheme) is left out."""
    from tokenizers import Tokenizer

    def is_prepend(v):
        return isinstance(v, dict) and v.get("type") == "Prepend"

    def strip(v):
        if isinstance(v, dict):
            if v.get("type") == "Metaspace":
                v["prepend_scheme"] = "never"
            if isinstance(v.get("normalizers"), list):
                v["normalizers"] = [p for p in v["normalizers"] if not is_prepend(p)]
            for inner in v.values():
                strip(inner)
        elif isinstance(v, list):
            for inner in v:
                strip(inner)

    with open(tokenizer_path, encoding="utf-8") as f:
        spec = json.load(f)
    if is_prepend(spec.get("normalizer")):
        spec["normalizer"] = None
    strip(spec.get("normalizer"))
    strip(spec.get("pre_tokenizer"))
    return Tokenizer.from_str(json.dumps(spec))


def worker(engine, tokenizer_path, conn):
    """Sets up `engine` once, then answers each path sent with its record."""
    compile_fn = ENGINES[engine](tokenizer_path)
    tk = continuation_tokenizer(tokenizer_path)
    tokenize = lambda s: tk.encode(s, add_special_tokens=False).ids
    conn.send("ready")
    while (path := conn.recv()) is not None:
        conn.send(run_file(path, tokenize, compile_fn))


def run_engine(engine, tokenizer_path, files, out_path, timeout_s):
    """Runs the protocol with a Python engine over `files`, one worker
    process at a time, replaced when a file runs past `timeout_s`."""
    ctx = multiprocessing.get_context("fork")
    proc = conn = None
    with open(out_path, "w") as out:
        for path in files:
            if proc is None:
                conn, child = ctx.Pipe()
                proc = ctx.Process(target=worker, args=(engine, tokenizer_path, child), daemon=True)
                proc.start()
                try:
                    ready = conn.poll(600) and conn.recv() == "ready"
                except EOFError:  # it failed while setting the engine up
                    ready = False
                if not ready:
                    raise RuntimeError(f"{engine}: the worker did not start (exit code {proc.exitcode})")
            t0 = time.perf_counter()
            conn.send(path)
            failed = {"id": os.path.basename(path), "mask_us": [], "tests": [], "warnings": []}
            try:
                if not conn.poll(timeout_s):
                    failed.update(ttfm_us=int((time.perf_counter() - t0) * 1e6), timeout=True,
                                  compile_error=f"no result within {timeout_s} s")
                    raise TimeoutError
                rec = conn.recv()
            except (TimeoutError, EOFError):  # past the time limit, or the engine took the worker down
                proc.kill()
                proc.join()
                failed.setdefault("ttfm_us", int((time.perf_counter() - t0) * 1e6))
                failed.setdefault("compile_error", f"the worker exited ({proc.exitcode})")
                rec, proc = failed, None
            out.write(json.dumps(rec) + "\n")
            out.flush()
    if proc is not None:
        conn.send(None)
        proc.join()


def llguidance_engine(tokenizer_path):
    import llguidance
    import llguidance.hf
    import llguidance.numpy
    import numpy as np
    from transformers import PreTrainedTokenizerFast

    hf = PreTrainedTokenizerFast(tokenizer_file=tokenizer_path)
    tok = llguidance.hf.from_tokenizer(hf)
    n = tok.vocab_size

    class M:
        def __init__(self, grammar):
            self.m = llguidance.LLMatcher(tok, grammar)
            self.mask = llguidance.numpy.allocate_token_bitmask(1, n)

        def mask_allows(self, t):
            llguidance.numpy.fill_next_token_bitmask(self.m, self.mask, 0)
            return bool((int(self.mask[0, t // 32]) >> (t % 32)) & 1)

        def commit(self, t):
            return self.m.consume_token(t)

        def accepting(self):
            return self.m.is_accepting()

    def compile_fn(schema):
        grammar = llguidance.LLMatcher.grammar_from_json_schema(json.dumps(schema))
        msg = llguidance.LLMatcher.validate_grammar(grammar, tok)
        if msg:
            raise RuntimeError(msg)
        probe = M(grammar)
        if probe.m.is_error():
            raise RuntimeError(probe.m.get_error())
        return lambda: M(grammar), None

    return compile_fn


def xgrammar_engine(tokenizer_path):
    import torch
    import xgrammar as xgr
    from transformers import PreTrainedTokenizerFast

    torch.set_num_threads(1)
    hf = PreTrainedTokenizerFast(tokenizer_file=tokenizer_path)
    info = xgr.TokenizerInfo.from_huggingface(hf)
    compiler = xgr.GrammarCompiler(info, max_threads=1, cache_enabled=False)
    n = info.vocab_size

    class M:
        def __init__(self, compiled):
            self.m = xgr.GrammarMatcher(compiled)
            self.mask = xgr.allocate_token_bitmask(1, n)

        def mask_allows(self, t):
            self.m.fill_next_token_bitmask(self.mask)
            return bool((int(self.mask[0, t // 32]) >> (t % 32)) & 1)

        def commit(self, t):
            return self.m.accept_token(t)

        def accepting(self):
            return self.m.is_completed()

    def compile_fn(schema):
        compiled = compiler.compile_json_schema(json.dumps(schema), any_whitespace=True, strict_mode=False)
        return lambda: M(compiled), compiled.memory_size_bytes

    return compile_fn


def sieve_py_engine(tokenizer_path):
    """sieve through its Python package (crates/sieve-py), for the same call overhead as the
    other Python engines."""
    import numpy as np
    import sieve

    with open(tokenizer_path) as f:
        vocab = sieve.Vocabulary.from_tokenizer_json(f.read())

    class M:
        def __init__(self, constraint):
            self.m = sieve.Matcher(constraint, vocab)
            self.mask = np.zeros((1, vocab.mask_words), dtype=np.int32)

        def mask_allows(self, t):
            self.m.fill_next_token_bitmask(self.mask)
            return bool((int(self.mask[0, t // 32]) >> (t % 32)) & 1)

        def commit(self, t):
            return self.m.accept_token(t)

        def accepting(self):
            return self.m.is_accepting()

    def compile_fn(schema):
        # As `sieve maskbench` by default: any order for objects of up to 10 properties.
        constraint = sieve.Constraint.json_schema(schema, property_order=10)
        return lambda: M(constraint), constraint.memory_bytes()

    return compile_fn


ENGINES = {"llguidance": llguidance_engine, "xgrammar": xgrammar_engine, "sieve-py": sieve_py_engine}
# The module each Python engine imports.
MODULES = {"llguidance": "llguidance", "xgrammar": "xgrammar", "sieve-py": "sieve"}


def pct(v, q):
    if not v:
        return 0
    v = sorted(v)
    return v[min(len(v) - 1, round((len(v) - 1) * q))]


def summary(path):
    rows = [json.loads(line) for line in open(path)]
    masks = [x for r in rows for x in r["mask_us"]]
    compiles = [r["ttfm_us"] for r in rows if "compile_error" not in r or r.get("timeout")]
    memory = [r["memory_bytes"] for r in rows if "memory_bytes" in r]
    tests = sum(len(r["tests"]) for r in rows)
    vr, ia = misjudged(rows)
    passing = sum(1 for r in rows if "compile_error" not in r and all(t["valid"] == t["accepted"] for t in r["tests"]))
    return {
        "schemas": len(rows),
        "passing": f"{passing} ({100 * passing / max(1, len(rows)):.1f}%)",
        "compile errors": sum(1 for r in rows if "compile_error" in r),
        "timeouts": sum(1 for r in rows if r.get("timeout")),
        "valid rejected": f"{vr} ({100 * vr / max(1, tests):.2f}%)",
        "invalid accepted": ia,
        "mask p50 us": pct(masks, 0.5),
        "mask p75 us": pct(masks, 0.75),
        "mask p90 us": pct(masks, 0.9),
        "mask p99 us": pct(masks, 0.99),
        "mask p99.9 us": pct(masks, 0.999),
        "mask max us": max(masks) if masks else 0,
        "compile p50 us": pct(compiles, 0.5),
        "compile p90 us": pct(compiles, 0.9),
        "compile p99 us": pct(compiles, 0.99),
        "compile max us": max(compiles) if compiles else 0,
        "memory p50 KiB": pct(memory, 0.5) // 1024 if memory else "-",
        "memory max KiB": max(memory) // 1024 if memory else "-",
    }


def misjudged(rows):
    """Valid tests rejected, and invalid tests accepted, in `rows`."""
    vr = sum(1 for r in rows for t in r["tests"] if t["valid"] and not t["accepted"])
    ia = sum(1 for r in rows for t in r["tests"] if not t["valid"] and t["accepted"])
    return vr, ia


def compiled_ids(path):
    return {r["id"] for r in map(json.loads, open(path)) if "compile_error" not in r}


def on_common(path, ids):
    """Valid rejected and invalid accepted over the schemas every engine in the table compiled:
    an engine that refuses a schema rejects none of its tests, so the totals alone favour it."""
    rows = [r for r in map(json.loads, open(path)) if r["id"] in ids]
    vr, ia = misjudged(rows)
    return {"common schemas": len(rows), "common valid rej.": vr, "common invalid acc.": ia}


def fastest_of(paths, out_path):
    """One record per file from the runs' records of it: each mask's and the compile's least
    time over the runs. The work of a mask is the same in every run (each starts cold), so the
    least time leaves out what the machine did meanwhile: a virtual machine's processor taken
    away for milliseconds, a page fault, another process. Results must agree run to run."""
    runs = [[json.loads(line) for line in open(p)] for p in paths]
    with open(out_path, "w") as out:
        for recs in zip(*runs):
            first = recs[0]
            assert all(r["id"] == first["id"] and r["tests"] == first["tests"] and len(r["mask_us"]) == len(first["mask_us"]) for r in recs), first["id"]
            merged = dict(first, ttfm_us=min(r["ttfm_us"] for r in recs), mask_us=[min(m) for m in zip(*(r["mask_us"] for r in recs))])
            out.write(json.dumps(merged) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokenizer", help="tokenizer.json (e.g. assets/tokenizers/llama3.json)")
    ap.add_argument("--sieve", default="target/release/sieve", help="the sieve binary")
    ap.add_argument("--engines", default="sieve,sieve-py,llguidance,xgrammar")
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--timeout-s", type=float, default=120, help="most seconds per file for a Python engine")
    ap.add_argument("--every", type=int, default=1, help="take every Nth file (sorted by name), for a quick run")
    ap.add_argument("--runs", type=int, default=1, help="run each engine this many times and keep each mask's and "
                    "compile's least time (the tails of one run on a shared or virtual machine are its pauses)")
    ap.add_argument("--table-only", action="store_true", help="run nothing: print the table of the engines' "
                    "records already in --out-dir (engines run at different times, e.g. xgrammar's hours)")
    ap.add_argument("paths", nargs="*")
    a = ap.parse_args()
    if not a.table_only and not (a.paths and a.tokenizer):
        ap.error("give --tokenizer and the MaskBench files or folders to run")
    os.makedirs(a.out_dir, exist_ok=True)
    files = files_of(a.paths)[a.every - 1 :: a.every]
    engines = a.engines.split(",")
    done = []
    for e in engines:
        out = os.path.join(a.out_dir, f"{e}.jsonl")
        if a.table_only:
            if os.path.exists(out):
                done.append((e, out))
            continue
        if e != "sieve":
            try:
                __import__(MODULES[e])
            except ImportError as err:
                print(f"{e}: not installed ({err}); skipped", file=sys.stderr)
                continue
        runs = [out] if a.runs == 1 else [os.path.join(a.out_dir, f"{e}.run{i}.jsonl") for i in range(a.runs)]
        for run in runs:
            if e == "sieve":
                subprocess.run([a.sieve, "maskbench", "--tokenizer", a.tokenizer, "--out", run, *files],
                               check=True, stdout=subprocess.DEVNULL)
            else:
                run_engine(e, a.tokenizer, files, run, a.timeout_s)
        if a.runs > 1:
            fastest_of(runs, out)
        done.append((e, out))
    common = set.intersection(*(compiled_ids(out) for _, out in done)) if done else set()
    done = [(e, {**summary(out), **on_common(out, common)}) for e, out in done]
    keys = list(done[0][1].keys()) if done else []
    print(f"{'':<20}" + "".join(f"{e:>20}" for e, _ in done))
    for k in keys:
        print(f"{k:<20}" + "".join(f"{str(s[k]):>20}" for _, s in done))


if __name__ == "__main__":
    main()
