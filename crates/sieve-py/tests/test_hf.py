"""``sieve.hf.LogitsProcessor`` in ``transformers``' own ``model.generate``: a small
random-weight Llama with the SmolLM2 tokenizer, several sequences at once, sampled, greedy and
by beam search; every output parses and matches the schema."""

import json

import pytest

import sieve

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
import sieve.hf  # noqa: E402

from test_sieve import ROOT  # noqa: E402

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "pattern": "^[a-z]{1,6}$"},
        "size": {"enum": [1, 12, 99.5]},
        "tags": {"type": "array", "items": {"enum": ["red", "blue"]}, "maxItems": 2},
    },
    "required": ["name", "size", "tags"],
    "additionalProperties": False,
}


@pytest.fixture(scope="module")
def tokenizer():
    fixture = ROOT / "crates/sieve-core/tests/fixtures/smollm2.json"
    return transformers.PreTrainedTokenizerFast(tokenizer_file=str(fixture), eos_token="<|im_end|>", pad_token="<|im_end|>")


@pytest.fixture(scope="module")
def model(tokenizer):
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=256,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
    )
    return transformers.LlamaForCausalLM(config).eval()


def check(outputs, prompt_length, tokenizer, constraint, vocab):
    """Every row is a whole output: the matcher takes its tokens up to the end-of-sequence one,
    and the text parses and matches the schema."""
    for row in outputs:
        generated = row[prompt_length:].tolist()
        matcher = sieve.Matcher(constraint, vocab)
        assert matcher.accept_tokens(generated[: generated.index(tokenizer.eos_token_id) + 1]) and matcher.is_terminated()
        text = tokenizer.decode(row[prompt_length:], skip_special_tokens=True)
        value = json.loads(text)
        assert set(value) == {"name", "size", "tags"}, text
        assert 1 <= len(value["name"]) <= 6 and value["name"].isalpha() and value["name"].islower(), text
        assert value["size"] in (1, 12, 99.5), text
        assert len(value["tags"]) <= 2 and set(value["tags"]) <= {"red", "blue"}, text


@pytest.mark.parametrize(
    "how",
    [
        {"do_sample": True, "top_k": 0, "num_return_sequences": 3},
        {"do_sample": False},
        {"do_sample": False, "num_beams": 3, "num_return_sequences": 2},
    ],
    ids=["sampled", "greedy", "beams"],
)
def test_generate_follows_the_schema(model, tokenizer, how):
    vocab = sieve.Vocabulary.from_huggingface(tokenizer, width=model.config.vocab_size)
    constraint = sieve.Constraint.json_schema(SCHEMA, whitespace="compact")
    prompts = tokenizer(["Describe a cat as JSON:", "A box, please, as JSON"], return_tensors="pt", padding=True, padding_side="left")
    torch.manual_seed(1)
    processor = sieve.hf.LogitsProcessor(constraint, vocab)
    outputs = model.generate(**prompts, logits_processor=[processor], max_new_tokens=60, **how)
    assert outputs.shape[0] == 2 * how.get("num_return_sequences", 1)
    check(outputs, prompts["input_ids"].shape[1], tokenizer, constraint, vocab)
    again = model.generate(**prompts, logits_processor=[processor], max_new_tokens=60, do_sample=False)
    check(again, prompts["input_ids"].shape[1], tokenizer, constraint, vocab)


def test_sequences_that_do_not_continue_the_last_step_are_refused(tokenizer):
    vocab = sieve.Vocabulary.from_huggingface(tokenizer)
    processor = sieve.hf.LogitsProcessor(sieve.Constraint.regex("[a-z]+"), vocab)
    letter = tokenizer.convert_tokens_to_ids("a")
    scores = torch.zeros((2, vocab.width))
    processor(torch.tensor([[5, 6], [7, 8]]), scores)
    assert torch.isfinite(scores[0, letter]) and not torch.isfinite(scores[0, tokenizer.eos_token_id])
    with pytest.raises(sieve.MatchError):
        processor(torch.tensor([[5, 6, letter], [9, 9, letter]]), torch.zeros((2, vocab.width)))
    processor(torch.tensor([[5, 6, letter], [7, 8, letter]]), torch.zeros((2, vocab.width)))
    with pytest.raises(sieve.MatchError, match="not allowed"):
        processor(torch.tensor([[5, 6, letter, tokenizer.eos_token_id], [7, 8, letter, 0]]), torch.zeros((2, vocab.width)))
