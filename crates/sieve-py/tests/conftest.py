"""Shared by the tests: a model directory as serving engines load one."""

import json
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
WIDTH = 151_936  # the Qwen3 model's logits; its tokenizer has 151,669 tokens


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory):
    """A Qwen3 configuration beside the real Qwen3 tokenizer."""
    d = tmp_path_factory.mktemp("qwen3")
    (d / "tokenizer.json").write_text((ROOT / "assets/tokenizers/qwen3.json").read_text())
    (d / "tokenizer_config.json").write_text((ROOT / "assets/tokenizers/qwen3.config.json").read_text())
    config = {
        "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "vocab_size": WIDTH, "hidden_size": 64,
        "intermediate_size": 128, "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1,
        "head_dim": 32, "max_position_embeddings": 4096, "rms_norm_eps": 1e-6, "rope_theta": 1000000,
        "tie_word_embeddings": True, "torch_dtype": "bfloat16", "bos_token_id": 151643, "eos_token_id": 151645,
    }
    (d / "config.json").write_text(json.dumps(config))
    return str(d)
