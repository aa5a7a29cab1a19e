"""Torch tensors in and out of the engine: bitmasks written into CPU tensors through DLPack
without a copy, and logits masked in every float type by the engine or by torch's kernels, with
the same result as NumPy arrays."""

import numpy as np
import pytest

import sieve

torch = pytest.importorskip("torch")

from test_sieve import SMOLLM2, allowed, tokens_of  # noqa: E402


@pytest.fixture(scope="module")
def vocab():
    return sieve.Vocabulary.from_tokenizer_json(SMOLLM2)


def matchers(vocab):
    sources = [sieve.Constraint.regex("[0-9]{2}-[a-z]+"), sieve.Constraint.any_json(), sieve.Constraint.choices(["left", "right"])]
    out = []
    for i, text in enumerate(["1", "{", "ri"]):
        m = sieve.Matcher(sources[i], vocab)
        assert m.accept_tokens(tokens_of(vocab, text))
        out.append(m)
    return out


def test_bitmasks_are_written_into_torch_tensors_in_place(vocab):
    ms = matchers(vocab)
    ours = torch.zeros((4, vocab.mask_words), dtype=torch.int32)
    theirs = np.zeros((4, vocab.mask_words), dtype=np.int32)
    address = ours.data_ptr()
    ms[0].fill_next_token_bitmask(ours, 3)
    ms[0].fill_next_token_bitmask(theirs, 3)
    assert ours.data_ptr() == address and np.array_equal(ours.numpy(), theirs) and ours[3].any()
    assert sieve.fill_next_token_bitmasks(ms, ours, [2, 0, 1]) == [None] * 3
    assert sieve.fill_next_token_bitmasks(ms, theirs, [2, 0, 1]) == [None] * 3
    assert np.array_equal(ours.numpy(), theirs)
    with pytest.raises(ValueError, match="CPU memory"):
        ms[0].fill_next_token_bitmask(torch.zeros((1, vocab.mask_words), dtype=torch.int32, device="meta"))
    with pytest.raises(ValueError):
        ms[0].fill_next_token_bitmask(torch.zeros((vocab.mask_words, 2), dtype=torch.int32).T)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("layout", ["contiguous", "strided"])
def test_logits_are_masked_alike_in_every_type_and_layout(vocab, dtype, layout):
    ms = matchers(vocab)
    bitmask = np.zeros((3, vocab.mask_words), dtype=np.int32)
    assert sieve.fill_next_token_bitmasks(ms, bitmask) == [None] * 3
    width = vocab.width + 5
    base = torch.randn((3, width), generator=torch.Generator().manual_seed(7))
    logits = base.to(getattr(torch, dtype))
    if layout == "strided":
        logits = torch.stack([logits, logits], dim=1)[:, 0, :]
        assert not logits.is_contiguous()
    before = logits.clone()
    sieve.apply_token_bitmask_inplace(logits, torch.from_numpy(bitmask), [2, 0, 1])
    for row, b in zip(range(3), [2, 0, 1]):
        ok = allowed(bitmask[b], vocab.width)
        kept = set(torch.nonzero(torch.isfinite(logits[row].float())).flatten().tolist())
        assert ok and kept == ok, row
        assert torch.equal(logits[row, sorted(ok)], before[row, sorted(ok)])
    reference = base.numpy().copy()
    sieve.apply_token_bitmask_inplace(reference, bitmask, [2, 0, 1])
    assert np.array_equal(np.isfinite(reference), torch.isfinite(logits.float()).numpy())
    one = logits[0].clone()
    sieve.apply_token_bitmask_inplace(one, bitmask[2])
    assert torch.equal(torch.isfinite(one), torch.isfinite(logits[0]))
    with pytest.raises(ValueError):
        sieve.apply_token_bitmask_inplace(logits, bitmask, [0])
