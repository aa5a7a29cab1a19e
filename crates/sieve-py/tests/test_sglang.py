"""sieve inside SGLang (the real package from PyPI), driven as SGLang's scheduler drives a grammar
backend: compiled on the backend's thread pool and cached the way ``GrammarManager`` does, masks
allocated, filled in a batch with rows of other requests, moved and applied as
``SamplingBatchInfo`` does, tokens taken as the batch result processor takes them, and single
tokens rolled back as the speculative tree walk does. No model runs (SGLang's model runner needs
a GPU); the tokenizer is the real Qwen3 one."""

import numpy as np
import pytest

import sieve

pytest.importorskip("sglang")
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import sieve.sglang  # noqa: E402
from sglang.srt.constrained.base_grammar_backend import GRAMMAR_BACKEND_REGISTRY, GrammarMask, GrammarRow, InvalidGrammarObject  # noqa: E402

from conftest import WIDTH  # noqa: E402


@pytest.fixture(scope="module")
def tokenizer(model_dir):
    return transformers.AutoTokenizer.from_pretrained(model_dir)


@pytest.fixture(scope="module")
def backend(tokenizer):
    return sieve.sglang.SieveGrammarBackend(tokenizer, WIDTH, {tokenizer.eos_token_id})


def compiled(backend, key):
    """As GrammarManager: a cached copy, or the future's grammar (then cached as a copy)."""
    value, hit = backend.get_cached_or_future_value(key, False)
    if hit:
        return value
    grammar = value.result()
    if not isinstance(grammar, InvalidGrammarObject):
        backend.set_cache(key, grammar.copy())
    return grammar


def allowed(row, t):
    return bool((int(row[t // 32]) >> (t % 32)) & 1)


def test_a_batch_decodes_as_the_scheduler_runs_it(backend, tokenizer):
    eos = tokenizer.eos_token_id
    schema = ("json", '{"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}')
    texts = {schema: '{"id": 7}', ("regex", "[a-c]{2}!"): "ab!", ("ebnf", 'root ::= "x" [0-9]+'): "x42", ("json", "$$ANY$$"): "[true]"}
    grammars = {key: compiled(backend, key) for key in texts}
    again = compiled(backend, schema)
    assert again is not grammars[schema] and isinstance(again, sieve.sglang.SieveGrammar), "a cache hit is a fresh copy"
    queues = {key: tokenizer.encode(text, add_special_tokens=False) + [eos] for key, text in texts.items()}
    references = {key: g.matcher.fork() for key, g in grammars.items()}
    batch = [None, *grammars.values()]  # row 0: a request without a constraint
    keys = [None, *grammars]
    own = np.zeros((1, (WIDTH + 31) // 32), dtype=np.int32)
    while any(g is not None and not g.is_terminated() for g in batch):
        first = next(g for g in batch if g is not None)
        mask = first.allocate_vocab_mask(vocab_size=WIDTH, batch_size=len(batch), device="cpu")
        assert mask.dtype == torch.int32 and bool((mask == -1).all())
        rows = [GrammarRow(i, g) for i, g in enumerate(batch) if g is not None and not g.finished and not g.is_terminated()]
        first.fill_vocab_mask_batched(rows, mask)
        mask = first.move_vocab_mask(mask, "cpu")
        logits = torch.zeros((len(batch), WIDTH))
        GrammarMask(first, mask).apply(logits)
        assert bool(torch.isfinite(logits[0]).all()) and bool((mask[0] == -1).all()), "a free row stays free"
        for row in rows:
            key = keys[row.row]
            token = queues[key].pop(0)
            references[key].fill_next_token_bitmask(own)
            assert np.array_equal(mask[row.row].numpy(), own[0])
            assert allowed(own[0], token) and torch.isfinite(logits[row.row, token])
            assert int(torch.isfinite(logits[row.row]).sum()) == int(np.unpackbits(own[0].view(np.uint8)).sum())
            row.grammar.accept_token(token)
            references[key].accept_token(token)
            row.grammar.finished = token == eos
    assert all(not q for q in queues.values())


def test_bad_tokens_raise_and_single_tokens_roll_back(backend, tokenizer):
    grammar = compiled(backend, ("regex", "[0-9]{2}"))
    with pytest.raises(ValueError):
        grammar.accept_token(tokenizer.encode("x", add_special_tokens=False)[0])
    digit = tokenizer.convert_tokens_to_ids("7")
    grammar.accept_token(digit)
    grammar.accept_token(digit)
    grammar.accept_token(tokenizer.eos_token_id)
    assert grammar.is_terminated()
    grammar.accept_token(tokenizer.eos_token_id)  # after the end: ignored
    grammar.rollback(1)
    assert not grammar.is_terminated()
    grammar.rollback(1)
    mask = grammar.allocate_vocab_mask(WIDTH, 1, "cpu")
    grammar.fill_vocab_mask(mask, 0)
    assert allowed(mask[0], digit) and not allowed(mask[0], tokenizer.eos_token_id)


def test_constraints_that_do_not_compile_fail_their_request(backend):
    for key in [("json", '{"type": "strin"}'), ("regex", "a(b"), ("ebnf", "root ::= missing"), ("structural_tag", "{not json")]:
        grammar = compiled(backend, key)
        assert isinstance(grammar, InvalidGrammarObject) and grammar.error_message, key
    tag = compiled(backend, ("structural_tag", '{"structures": [{"begin": "<f>", "schema": {"type": "integer"}, "end": "</f>"}], "triggers": ["<f>"]}'))
    assert isinstance(tag, sieve.sglang.SieveGrammar)


def test_the_plugin_entry_point_registers_the_backend(tokenizer):
    from importlib.metadata import entry_points

    from sglang.srt.server_args import GRAMMAR_BACKEND_CHOICES

    (plugin,) = [e for e in entry_points(group="sglang.srt.plugins") if e.name == "sieve"]
    assert plugin.load() is sieve.sglang.register
    sieve.sglang.register()
    assert "sieve" in GRAMMAR_BACKEND_CHOICES
    settings = type("ServerArgs", (), {"constrained_json_disable_any_whitespace": True})()
    made = GRAMMAR_BACKEND_REGISTRY["sieve"](settings, tokenizer, WIDTH, {tokenizer.eos_token_id})
    assert isinstance(made, sieve.sglang.SieveGrammarBackend)
    compact = compiled(made, ("json", '{"type": "array"}'))
    assert compact.matcher.fork().accept_tokens(tokenizer.encode("[1,2]", add_special_tokens=False))
    assert not compact.matcher.fork().accept_tokens(tokenizer.encode("[1, 2]", add_special_tokens=False))
