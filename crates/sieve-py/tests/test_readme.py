"""The README's Python examples, run as written: the engine's own in a folder holding a
tokenizer.json, the transformers one with its model path pointing at a small random-weight Llama
saved beside the SmolLM2 tokenizer (no network)."""

import contextlib
import io
import json
import os

import pytest

from conftest import ROOT

README = (ROOT / "README.md").read_text()


def example(name):
    block = README.split(f"<!-- {name} example -->\n```python\n")[1].split("\n```")[0]
    assert block.strip(), f"the README has its {name} example"
    return block


def run(code, cwd):
    out = io.StringIO()
    here = os.getcwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(code, "README.md", "exec"), {})
    finally:
        os.chdir(here)
    return out.getvalue()


def test_the_python_example(tmp_path):
    (tmp_path / "tokenizer.json").write_text((ROOT / "crates/sieve-core/tests/fixtures/smollm2.json").read_text())
    run(example("python"), tmp_path)


def test_the_transformers_example(tmp_path):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    tokenizer = transformers.PreTrainedTokenizerFast(tokenizer_file=str(ROOT / "crates/sieve-core/tests/fixtures/smollm2.json"), eos_token="<|im_end|>", pad_token="<|im_end|>")
    torch.manual_seed(0)
    config = transformers.LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1, eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)
    transformers.LlamaForCausalLM(config).save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    code = example("hf")
    assert 'model_path = "HuggingFaceTB/SmolLM2-135M-Instruct"' in code
    printed = run(code.replace('"HuggingFaceTB/SmolLM2-135M-Instruct"', repr(str(tmp_path))), tmp_path)
    assert json.loads(printed)["city"] in ("Paris", "Rome"), printed
