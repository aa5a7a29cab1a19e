"""The Python package against the engine's own answers: masks written into NumPy rows in place
(one matcher, and many on threads with per-row errors), token acceptance that agrees with the
masks, drafts, rollback, forks, jump-forward, structural tags, and compile errors that keep
their fields."""

import json
import pathlib

import numpy as np
import pytest

import sieve

ROOT = pathlib.Path(__file__).resolve().parents[3]
SMOLLM2 = (ROOT / "crates/sieve-core/tests/fixtures/smollm2.json").read_text()


@pytest.fixture(scope="module")
def vocab():
    return sieve.Vocabulary.from_tokenizer_json(SMOLLM2)


def allowed(row, width):
    """Token ids whose bit is set in a bitmask row."""
    bits = np.unpackbits(row.view(np.uint8), bitorder="little")[:width]
    return set(np.flatnonzero(bits).tolist())


def tokens_of(vocab, text):
    """Greedy longest-match ids for `text` over the SmolLM2 fixture (enough for ASCII here)."""
    table = {tok: i for i, tok in enumerate(json.loads(SMOLLM2)["model"]["vocab"])}
    ids, rest = [], text.replace(" ", "Ġ")
    while rest:
        piece = next(rest[:n] for n in range(len(rest), 0, -1) if rest[:n] in table)
        ids.append(table[piece])
        rest = rest[len(piece):]
    return ids


def test_a_mask_row_is_what_the_matcher_accepts(vocab):
    c = sieve.Constraint.regex("(yes|no|maybe)!")
    m = sieve.Matcher(c, vocab)
    mask = np.zeros((3, vocab.mask_words), dtype=np.int32)
    m.fill_next_token_bitmask(mask, 1)
    assert not mask[0].any() and not mask[2].any(), "only row 1 is written"
    ok = allowed(mask[1], vocab.width)
    assert ok, "some token may start the output"
    for t in range(vocab.size):
        assert m.fork().accept_token(t) == (t in ok), t
    assert m.accept_tokens(tokens_of(vocab, "yes!"))
    m.fill_next_token_bitmask(mask, 0)
    assert allowed(mask[0], vocab.width) == set(vocab.eos_ids)
    assert m.is_accepting() and not m.is_terminated()
    assert m.accept_token(vocab.eos_ids[0]) and m.is_terminated()


def test_drafts_rollback_fork_reset_and_jump_forward(vocab):
    c = sieve.Constraint.json_schema({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"], "additionalProperties": False})
    m = sieve.Matcher(c, vocab)
    good = tokens_of(vocab, '{"ok": true}')
    assert m.validate_tokens(good + good) == len(good)
    assert not m.accept_tokens(good + [good[0]]), "a rejected draft takes nothing"
    assert m.accept_tokens(good[:2])
    copy = m.fork()
    m.rollback(2)
    assert m.accept_tokens(good) and m.is_accepting()
    assert copy.accept_tokens(good[2:]) and copy.is_accepting()
    m.reset()
    assert not m.is_accepting() and m.validate_tokens(good) == len(good)
    with pytest.raises(sieve.MatchError):
        m.rollback(1)
    code = sieve.Matcher(sieve.Constraint.regex("id-[0-9]+"), vocab)
    assert code.jump_forward() == (b"id-", 0, [])
    forced, backoff, canonical = code.jump_forward(lambda b: tokens_of(vocab, b.decode()))
    assert (forced, backoff, canonical) == (b"id-", 0, tokens_of(vocab, "id-"))
    assert code.accept_tokens(canonical) and code.jump_forward() == (b"", 0, [])


def test_many_rows_on_threads_equal_one_at_a_time(vocab):
    sources = [
        sieve.Constraint.regex("[0-9]{3}-[a-z]+"),
        sieve.Constraint.any_json(),
        sieve.Constraint.choices(["red", "green", "blue"]),
        sieve.Constraint.grammar('root ::= "(" [0-9]+ ("+" [0-9]+)* ")"'),
    ]
    matchers = [sieve.Matcher(sources[i % 4], vocab) for i in range(16)]
    for i, m in enumerate(matchers):
        m.accept_tokens(tokens_of(vocab, ["12", "{", "gr", "(1"][i % 4]))
    batch = np.zeros((20, vocab.mask_words), dtype=np.int32)
    rows = [19 - i for i in range(16)]
    assert sieve.fill_next_token_bitmasks(matchers, batch, rows) == [None] * 16
    one = np.zeros((1, vocab.mask_words), dtype=np.int32)
    for m, r in zip(matchers, rows):
        m.fill_next_token_bitmask(one)
        assert np.array_equal(one[0], batch[r])
    # A finished matcher allows nothing more.
    done = sieve.Matcher(sources[2], vocab)
    assert done.accept_tokens(tokens_of(vocab, "red") + [vocab.eos_ids[0]]) and done.is_terminated()
    assert sieve.fill_next_token_bitmasks([matchers[0], done], batch) == [None, None]
    assert not batch[1].any()
    with pytest.raises(ValueError):
        sieve.fill_next_token_bitmasks(matchers[:2], batch, [3, 3])


def test_bad_bitmasks_are_refused(vocab):
    m = sieve.Matcher(sieve.Constraint.any_json(), vocab)
    with pytest.raises((ValueError, BufferError)):
        m.fill_next_token_bitmask(np.zeros((1, vocab.mask_words), dtype=np.int64))
    with pytest.raises(ValueError):
        m.fill_next_token_bitmask(np.zeros((1, vocab.mask_words - 1), dtype=np.int32))
    with pytest.raises(ValueError):
        m.fill_next_token_bitmask(np.zeros((1, vocab.mask_words), dtype=np.int32), 1)
    with pytest.raises(ValueError):
        m.fill_next_token_bitmask(np.zeros((vocab.mask_words, 2), dtype=np.int32).T)


def test_structural_tags_and_compile_errors_keep_their_fields():
    tag = sieve.Constraint.structural_tag({"structures": [{"begin": "<n>", "schema": {"type": "integer"}, "end": "</n>"}], "triggers": ["<n>"]})
    assert tag.matches("Sum: <n>42</n>.") and not tag.matches("<n>4x</n>")
    with pytest.raises(sieve.CompileError) as e:
        sieve.Constraint.json_schema('{"type": "object", "properties": {"n": {"type": "integr"}}}')
    assert (e.value.kind, e.value.keyword, e.value.pointer) == ("schema", "type", "/properties/n")
    with pytest.raises(sieve.CompileError) as e:
        sieve.Constraint.regex("a(b")
    assert e.value.kind == "regex" and e.value.line == 1 and isinstance(e.value.offset, int)
    with pytest.raises(sieve.CompileError) as e:
        sieve.Constraint.json_schema({"type": "string", "pattern": "(?=a)"})
    assert e.value.kind == "unsupported"
    lenient = sieve.Constraint.json_schema({"type": "string", "pattern": "(?=a)"}, strict=False)
    assert lenient.warnings and lenient.memory_bytes() > 0
    pair = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "additionalProperties": False}
    assert not sieve.Constraint.json_schema(pair).matches('{"b": 1, "a": 2}')
    assert sieve.Constraint.json_schema(pair, property_order=2).matches('{"b": 1, "a": 2}')
    assert not sieve.Constraint.json_schema(pair, whitespace="compact").matches('{"a": 1}')
    assert sieve.Constraint.json_schema({"type": "object"}, additional_properties=False).matches("{}")
    assert not sieve.Constraint.json_schema({"type": "object"}, additional_properties=False).matches('{"x": 1}')
    with pytest.raises(ValueError):
        sieve.Constraint.json_schema(pair, whitespace="lots")


def test_the_cache_shares_constraints_and_logits_are_masked_in_place(vocab):
    cache = sieve.ConstraintCache(capacity=2)
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}}
    first = cache.json_schema(schema)
    assert len(cache) == 1 and cache.json_schema(json.dumps(schema)) is not None and len(cache) == 1
    cache.regex("[0-9]+")
    cache.choices(["a", "b"])
    assert len(cache) == 2, "the oldest goes first"
    with pytest.raises(sieve.CompileError) as e:
        cache.json_schema({"type": "integr"})
    assert (e.value.kind, e.value.keyword) == ("schema", "type")
    m = sieve.Matcher(first, vocab)
    bitmask = np.zeros((2, vocab.mask_words), dtype=np.int32)
    m.fill_next_token_bitmask(bitmask, 1)
    logits = np.random.default_rng(1).standard_normal((1, vocab.width + 7), dtype=np.float32)
    before = logits.copy()
    sieve.apply_token_bitmask_inplace(logits, bitmask, [1])
    ok = allowed(bitmask[1], vocab.width)
    kept = set(np.flatnonzero(np.isfinite(logits[0])).tolist())
    assert kept == ok and np.array_equal(logits[0, sorted(ok)], before[0, sorted(ok)])


def test_a_huggingface_tokenizer_gives_the_same_vocabulary(vocab):
    transformers = pytest.importorskip("transformers")
    fixture = ROOT / "crates/sieve-core/tests/fixtures/smollm2.json"
    tokenizer = transformers.PreTrainedTokenizerFast(tokenizer_file=str(fixture), eos_token="<|im_end|>")
    hf = sieve.Vocabulary.from_huggingface(tokenizer, width=49_216)
    assert (hf.size, hf.width, hf.eos_ids) == (vocab.size, 49_216, [tokenizer.eos_token_id])
    c = sieve.Constraint.regex("[A-Z][a-z]+!")
    a = np.zeros((1, hf.mask_words), dtype=np.int32)
    b = np.zeros((1, vocab.mask_words), dtype=np.int32)
    sieve.Matcher(c, hf).fill_next_token_bitmask(a)
    sieve.Matcher(c, vocab).fill_next_token_bitmask(b)
    assert allowed(a[0], hf.width) and allowed(a[0], hf.width) == allowed(b[0], vocab.width)
    with pytest.raises(ValueError):
        sieve.Vocabulary.from_huggingface(object())
