"""sieve inside vLLM (the real package from PyPI), driven through vLLM's own classes: requests
built and checked by ``SamplingParams.verify`` as the front end does, compiled by the
``StructuredOutputManager`` on its thread pool, bitmasks filled by ``grammar_bitmask``, tokens
taken by ``accept_tokens``, drafts checked and rolled back on the speculative path. The model is
a configuration only (a small Qwen3 with the real Qwen3 tokenizer): no weights run, as no part
of vLLM's model runner can run on a machine without a GPU."""

import json
import os
import time

import numpy as np
import pytest

import sieve

pytest.importorskip("vllm")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import sieve.vllm  # noqa: E402
import vllm.v1.structured_output as manager_module  # noqa: E402
import vllm.v1.structured_output.backend_guidance as guidance_module  # noqa: E402
import vllm.v1.structured_output.backend_xgrammar as xgrammar_module  # noqa: E402
from vllm.config import DeviceConfig, ModelConfig, SpeculativeConfig, StructuredOutputsConfig, VllmConfig  # noqa: E402
from vllm.sampling_params import SamplingParams, StructuredOutputsParams  # noqa: E402
from vllm.v1.request import Request  # noqa: E402
from vllm.v1.structured_output import StructuredOutputManager  # noqa: E402

from conftest import ROOT, WIDTH  # noqa: E402


@pytest.fixture
def installed(monkeypatch):
    """sieve.vllm.install(), undone after the test."""
    for module, name in [(manager_module, "XgrammarBackend"), (manager_module, "GuidanceBackend"), (xgrammar_module, "XgrammarBackend"), (guidance_module, "GuidanceBackend")]:
        monkeypatch.setattr(module, name, getattr(module, name))
    sieve.vllm.install()


def engine(model_dir, speculative=0, backend="auto", **options):
    model = ModelConfig(model=model_dir, tokenizer=model_dir, dtype="float32", max_model_len=1024)
    spec = SpeculativeConfig(method="ngram", num_speculative_tokens=speculative, prompt_lookup_max=3, prompt_lookup_min=1) if speculative else None
    config = VllmConfig(model_config=model, structured_outputs_config=StructuredOutputsConfig(backend=backend, **options), device_config=DeviceConfig(device="cpu"), speculative_config=spec)
    return model, config, StructuredOutputManager(config)


def request(model, config, manager, rid, stop_token_ids=None, **constraint):
    """A request as vLLM's front end makes it, compiled by the manager."""
    params = SamplingParams(max_tokens=64, stop_token_ids=stop_token_ids, structured_outputs=StructuredOutputsParams(**constraint))
    return submit(model, config, manager, rid, params)


def submit(model, config, manager, rid, params):
    """A request of these sampling parameters, checked as the front end does and compiled."""
    params.update_from_generation_config({}, manager.tokenizer.eos_token_id)
    params.verify(model, config.speculative_config, config.structured_outputs_config, manager.tokenizer)
    req = Request(rid, prompt_token_ids=[1, 2, 3], sampling_params=params, pooling_params=None)
    manager.grammar_init(req)
    deadline = time.time() + 60
    while not req.structured_output_request.is_grammar_ready and time.time() < deadline:
        time.sleep(0.01)
    return req


def allowed(row, t):
    return bool((int(row[t // 32]) >> (t % 32)) & 1)


CASES = {
    "json": ({"json": {"type": "object", "properties": {"name": {"type": "string"}, "n": {"type": "integer"}}, "required": ["name", "n"]}}, '{"name": "Ada", "n": 36}'),
    "json_object": ({"json_object": True}, '{"k": [1, 2]}'),
    "regex": ({"regex": r"[A-Z]{2}-[0-9]{3}"}, "QX-042"),
    "choice": ({"choice": ["apple", "banana split"]}, "banana split"),
    "grammar": ({"grammar": 'root ::= "(" [0-9]+ (" + " [0-9]+)* ")"'}, "(12 + 7)"),
    "structural_tag": (
        {"structural_tag": json.dumps({"type": "structural_tag", "structures": [{"begin": "<n>", "schema": {"type": "integer"}, "end": "</n>"}], "triggers": ["<n>"]})},
        "Two: <n>2</n>.",
    ),
}


@pytest.mark.parametrize("kind", CASES)
def test_requests_of_every_kind_follow_their_constraint(model_dir, installed, kind):
    model, config, manager = engine(model_dir)
    constraint, text = CASES[kind]
    req = request(model, config, manager, "r", **constraint)
    grammar = req.structured_output_request.grammar
    assert isinstance(manager.backend, sieve.vllm.SieveBackend) and isinstance(grammar, sieve.vllm.SieveGrammar), grammar
    tok = manager.tokenizer
    eos = tok.eos_token_id
    reference = grammar.matcher.fork()
    own = np.zeros((1, (WIDTH + 31) // 32), dtype=np.int32)
    for t in tok.encode(text, add_special_tokens=False) + [eos]:
        rows = manager.grammar_bitmask({"r": req}, ["r"], {})
        reference.fill_next_token_bitmask(own)
        assert np.array_equal(rows[0], own[0]), "the manager's row is the matcher's own"
        assert allowed(rows[0], t), (kind, tok.decode([t]))
        assert allowed(rows[0], eos) == reference.is_accepting(), "the end only where the output is complete"
        req.append_output_token_ids(t)
        assert manager.accept_tokens(req, [t])
        assert reference.accept_token(t)
    assert grammar.is_terminated()
    fresh = request(model, config, manager, "bad", **constraint).structured_output_request.grammar
    assert not fresh.accept_tokens("bad", [tok.convert_tokens_to_ids("<|im_start|>")]), "a token outside the constraint is refused"
    assert fresh.validate_tokens(tok.encode(text, add_special_tokens=False) + [eos]) == tok.encode(text, add_special_tokens=False) + [eos]


def test_the_readme_request_through_the_openai_front_end(model_dir, installed):
    """The README's request, turned into sampling parameters by vLLM's OpenAI server code."""
    from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest

    block = (ROOT / "README.md").read_text().split("SIEVE_VLLM=1 vllm serve")[1].split("\n```")[0]
    body = json.loads(block.split("-d '")[1].rsplit("'", 1)[0])
    model, config, manager = engine(model_dir)
    req = submit(model, config, manager, "r", ChatCompletionRequest.model_validate(body).to_sampling_params(64, {}))
    assert isinstance(req.structured_output_request.grammar, sieve.vllm.SieveGrammar)
    tok = manager.tokenizer
    for text, follows in [('{"name": 7}', False), ('{"name": "Oslo"}', True)]:
        tokens = tok.encode(text, add_special_tokens=False) + [tok.eos_token_id]
        assert (manager.validate_tokens(req, tokens) == tokens) == follows, text


def test_a_constraint_that_does_not_compile_fails_its_request_only(model_dir, installed):
    model, config, manager = engine(model_dir)
    bad = request(model, config, manager, "bad", json={"type": "string", "pattern": "(?=a)b"})
    assert isinstance(bad.structured_output_request.grammar, sieve.CompileError)
    good = request(model, config, manager, "good", regex="[0-9]+")
    assert isinstance(good.structured_output_request.grammar, sieve.vllm.SieveGrammar)


def test_stop_tokens_and_engine_options(model_dir, installed):
    # (vLLM takes these options only with the xgrammar and guidance names.)
    model, config, manager = engine(model_dir, backend="guidance", disable_any_whitespace=True)
    tok = manager.tokenizer
    stop = tok.convert_tokens_to_ids("<|endoftext|>")
    req = request(model, config, manager, "r", stop_token_ids=[stop], json={"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]})
    rows = manager.grammar_bitmask({"r": req}, ["r"], {})
    assert not allowed(rows[0], stop) and not allowed(rows[0], tok.encode(" ", add_special_tokens=False)[0]), "compact JSON, and no stop yet"
    for t in tok.encode('{"a":1}', add_special_tokens=False):
        req.append_output_token_ids(t)
        assert manager.accept_tokens(req, [t])
    rows = manager.grammar_bitmask({"r": req}, ["r"], {})
    assert allowed(rows[0], stop) and allowed(rows[0], tok.eos_token_id)


def test_drafts_are_checked_and_rolled_back(model_dir, installed):
    model, config, manager = engine(model_dir, speculative=3)
    tok = manager.tokenizer
    req = request(model, config, manager, "r", regex="[0-9]{3}")
    grammar = req.structured_output_request.grammar
    digit = [tok.convert_tokens_to_ids(c) for c in "0123456789"]
    x = tok.encode("x", add_special_tokens=False)[0]
    assert manager.validate_tokens(req, [digit[1], digit[2], x]) == [digit[1], digit[2]]
    before = grammar.matcher.fork()
    rows = manager.grammar_bitmask({"r": req}, ["r"], {"r": [digit[1], digit[2], digit[3]]})
    assert rows.shape[0] == 4
    assert [allowed(rows[3], d) for d in digit] == [False] * 10 and allowed(rows[3], tok.eos_token_id), "after three digits: the end"
    assert all(allowed(rows[i], digit[5]) for i in range(3))
    assert grammar.validate_tokens([digit[0]] * 4) == [digit[0]] * 3, "the state is as before the drafts"
    assert manager.accept_tokens(req, [digit[1], digit[2], digit[3], tok.eos_token_id]) and grammar.is_terminated()
    grammar.rollback(2)
    assert not grammar.is_terminated() and grammar.accept_tokens("r", [digit[4], tok.eos_token_id])
    assert before.accept_tokens([digit[7]] * 3)


def test_the_plugin_entry_point_installs_only_when_asked(monkeypatch, installed):
    from importlib.metadata import entry_points

    (plugin,) = [e for e in entry_points(group="vllm.general_plugins") if e.name == "sieve"]
    assert plugin.load() is sieve.vllm.register
    monkeypatch.delenv("SIEVE_VLLM", raising=False)
    monkeypatch.setattr(manager_module, "GuidanceBackend", object)
    sieve.vllm.register()
    assert manager_module.GuidanceBackend is object
    monkeypatch.setenv("SIEVE_VLLM", "1")
    sieve.vllm.register()
    assert manager_module.GuidanceBackend is sieve.vllm.SieveBackend
