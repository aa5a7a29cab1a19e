#!/usr/bin/env python3
"""Writes small random-weight models of each supported architecture as GGUF, with the outputs
Hugging Face `transformers` (float32) gives for them: the parity tests' fixtures.

    python scripts/tiny-models.py OUT_DIR
    python scripts/tiny-models.py --shape qwen3-0.6b q4_k_m OUT.gguf   (a benchmark model)

For each architecture a model is built by `transformers` from a fixed seed and written the way
llama.cpp's converter names its tensors and keys (llama's Q and K rows permuted to adjacent RoPE
pairs, qwen's not). Each weight type is a variant of the llama model: its matrices encoded by the
`gguf` package's quantizers (random blocks for the K-quants, which it only decodes), decoded again
and loaded back into the `transformers` model, whose outputs are then the reference. Next to
every `NAME.gguf`, `NAME.json` holds the prompt, the greedy continuation and each step's top
logits, from a full forward pass per step.

`qwen3-chat.gguf` is a small random-weight Qwen3 with the real Qwen3 tokenizer and chat template
(assets/tokenizers, from scripts/fetch-assets.sh), written as the converter writes them: a
second family for the end-to-end tests of the CLI and the demo page, whose outputs the
constraint alone makes valid.
"""

import argparse
import json
from pathlib import Path

import numpy as np
import torch
import gguf
from gguf import GGMLQuantizationType as Q
from transformers import (Gemma3ForCausalLM, Gemma3TextConfig, LlamaConfig, LlamaForCausalLM, Phi3Config, Phi3ForCausalLM,
                          Qwen2Config, Qwen2ForCausalLM, Qwen3Config, Qwen3ForCausalLM)

VOCAB = 512
CONTEXT = 256
PROMPT_LEN = 7
STEPS = 8
TOP = 5
# Greedy choices closer than this (in logits) would make the parity of the greedy tokens depend
# on rounding; the models are drawn so that none is.
MIN_MARGIN = 1e-2

COMMON = dict(vocab_size=VOCAB, hidden_size=256, intermediate_size=256, num_hidden_layers=2,
              num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=CONTEXT,
              rms_norm_eps=1e-5)

HALF_HEAD = COMMON["hidden_size"] // COMMON["num_attention_heads"] // 2
# name: (GGUF architecture, transformers classes, config, seed)
MODELS = {
    "llama": ("llama", LlamaConfig, LlamaForCausalLM, dict(tie_word_embeddings=True, rope_parameters={"rope_type": "default", "rope_theta": 1e4}), 1),
    # Llama 3's frequency scaling, which the converter writes as per-pair factors (rope_freqs).
    "llama3-rope": ("llama", LlamaConfig, LlamaForCausalLM, dict(tie_word_embeddings=True, rope_parameters={
        "rope_type": "llama3", "rope_theta": 1e4, "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
        "original_max_position_embeddings": 16}), 4),
    "qwen2": ("qwen2", Qwen2Config, Qwen2ForCausalLM, dict(tie_word_embeddings=False, rope_parameters={"rope_type": "default", "rope_theta": 1e6}), 2),
    # A head width other than hidden / heads, as Qwen3's models have.
    "qwen3": ("qwen3", Qwen3Config, Qwen3ForCausalLM, dict(tie_word_embeddings=False, head_dim=32, rope_parameters={"rope_type": "default", "rope_theta": 1e6}), 3),
    # Fused Q/K/V and gate/up tensors, LongRoPE (short factors: the runs are shorter than the
    # original context).
    "phi3": ("phi3", Phi3Config, Phi3ForCausalLM, dict(tie_word_embeddings=False, pad_token_id=0, bos_token_id=1, eos_token_id=2, original_max_position_embeddings=64, rope_parameters={
        "rope_type": "longrope", "rope_theta": 1e4, "short_factor": [1 + 0.05 * i for i in range(HALF_HEAD)],
        "long_factor": [2 + 0.1 * i for i in range(HALF_HEAD)]}), 6),
    # Six layers: five with a sliding window of 4 positions and RoPE base 1e4, then one that sees
    # everything with base 1e6.
    "gemma3": ("gemma3", Gemma3TextConfig, Gemma3ForCausalLM, dict(num_hidden_layers=6, head_dim=64, query_pre_attn_scalar=64,
        sliding_window=4, pad_token_id=0, bos_token_id=1, eos_token_id=2, rope_parameters={
            "sliding_attention": {"rope_type": "default", "rope_theta": 1e4},
            "full_attention": {"rope_type": "default", "rope_theta": 1e6}}), 7),
}
# Gemma's RMSNorm multiplies by `1 + weight`; llama.cpp's converter writes `1 + weight`.
NORM_SHIFT = {"gemma3": 1.0}

# The llama model's weight-type variants: (file suffix, matrix type).
WEIGHT_TYPES = [("f16", Q.F16), ("bf16", Q.BF16), ("q8_0", Q.Q8_0), ("q4_0", Q.Q4_0), ("q4_1", Q.Q4_1), ("q5_0", Q.Q5_0), ("q5_1", Q.Q5_1),
                ("q4_k", Q.Q4_K), ("q5_k", Q.Q5_K), ("q6_k", Q.Q6_K)]


def build(name):
    arch, config_cls, model_cls, extra, seed = MODELS[name]
    torch.manual_seed(seed)
    model = model_cls(config_cls(**{**COMMON, **extra})).float().eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(1 - NORM_SHIFT.get(arch, 0.0) + 0.2 * (2 * torch.rand_like(p) - 1))
            elif name.endswith("bias"):
                p.normal_(0, 0.5)
            elif "embed_tokens" in name:  # gemma3 reads its embedding scaled by sqrt(D)
                p.normal_(0, 0.1 if arch == "gemma3" else 0.3)
            else:
                p.normal_(0, p.shape[1] ** -0.5)
    return model


def permute(w, heads):
    """llama.cpp's converter's reordering of Q/K rows: each head's halves interleaved."""
    return w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def unpermute(w, heads):
    return w.reshape(heads, w.shape[0] // heads // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def gguf_tensors(model, arch):
    """(GGUF name, HF parameter name, row permutation heads or None) for each tensor."""
    cfg = model.config
    out = [("token_embd.weight", "model.embed_tokens.weight", None), ("output_norm.weight", "model.norm.weight", None)]
    if not cfg.tie_word_embeddings:
        out.append(("output.weight", "lm_head.weight", None))
    for i in range(cfg.num_hidden_layers):
        hf = f"model.layers.{i}."
        heads = {"q": cfg.num_attention_heads, "k": cfg.num_key_value_heads} if arch == "llama" else {}
        if arch == "phi3":
            out.append((f"blk.{i}.attn_qkv.weight", f"{hf}self_attn.qkv_proj.weight", None))
        else:
            for part in "qkv":
                out.append((f"blk.{i}.attn_{part}.weight", f"{hf}self_attn.{part}_proj.weight", heads.get(part)))
                if arch == "qwen2":
                    out.append((f"blk.{i}.attn_{part}.bias", f"{hf}self_attn.{part}_proj.bias", None))
        if arch in ("qwen3", "gemma3"):
            out.append((f"blk.{i}.attn_q_norm.weight", f"{hf}self_attn.q_norm.weight", None))
            out.append((f"blk.{i}.attn_k_norm.weight", f"{hf}self_attn.k_norm.weight", None))
        out += [
            (f"blk.{i}.attn_output.weight", f"{hf}self_attn.o_proj.weight", None),
            (f"blk.{i}.attn_norm.weight", f"{hf}input_layernorm.weight", None),
            (f"blk.{i}.ffn_down.weight", f"{hf}mlp.down_proj.weight", None),
        ]
        if arch == "gemma3":
            out += [
                (f"blk.{i}.post_attention_norm.weight", f"{hf}post_attention_layernorm.weight", None),
                (f"blk.{i}.ffn_norm.weight", f"{hf}pre_feedforward_layernorm.weight", None),
                (f"blk.{i}.post_ffw_norm.weight", f"{hf}post_feedforward_layernorm.weight", None),
            ]
        else:
            out.append((f"blk.{i}.ffn_norm.weight", f"{hf}post_attention_layernorm.weight", None))
        if arch == "phi3":  # gate rows, then up rows
            out.append((f"blk.{i}.ffn_up.weight", f"{hf}mlp.gate_up_proj.weight", None))
        else:
            out += [(f"blk.{i}.ffn_gate.weight", f"{hf}mlp.gate_proj.weight", None), (f"blk.{i}.ffn_up.weight", f"{hf}mlp.up_proj.weight", None)]
    return out


def random_k_blocks(rng, qtype, rows, cols):
    """Random K-quant blocks with scales that keep the decoded values near 1 / sqrt(cols)."""
    block, size = gguf.GGML_QUANT_SIZES[qtype]
    data = rng.integers(0, 256, size=(rows, cols // block, size), dtype=np.uint8)

    def f16(value):
        return np.frombuffer(np.float16(value).tobytes(), dtype=np.uint8)

    if qtype == Q.Q6_K:  # ql[128] qh[64] scales[16] d
        data[..., 208:210] = f16(2e-5)
    else:  # d dmin scales[12] (qh[32]) qs[128]
        data[..., 0:2] = f16(2e-4 if qtype == Q.Q4_K else 1e-4)
        data[..., 2:4] = f16(1e-4)
    return data.reshape(rows, -1)


def encode(rng, w, qtype):
    """A matrix in `qtype`: (bytes or values for the writer, the values they decode to)."""
    if qtype in (Q.Q4_K, Q.Q5_K, Q.Q6_K):
        data = random_k_blocks(rng, qtype, *w.shape)
    elif qtype == Q.F16:
        data = w.astype(np.float16)
        return data, data.astype(np.float32)
    else:
        data = gguf.quants.quantize(w, qtype)
    return data, gguf.quants.dequantize(data, qtype).astype(np.float32)


def llama3_rope_factors(rope, head_dim):
    """The per-pair frequency divisors llama.cpp's converter writes for Llama 3's scaling."""
    freqs = 1.0 / (rope["rope_theta"] ** (np.arange(0, head_dim, 2, dtype=np.float64) / head_dim))
    factor, low, high = rope["factor"], rope["low_freq_factor"], rope["high_freq_factor"]
    old = rope["original_max_position_embeddings"]
    out = []
    for freq in freqs:
        wavelen = 2 * np.pi / freq
        if wavelen < old / high:
            out.append(1.0)
        elif wavelen > old / low:
            out.append(factor)
        else:
            smooth = (old / wavelen - low) / (high - low)
            out.append(1 / ((1 - smooth) / factor + smooth))
    return np.array(out, dtype=np.float32)


def run(model, prompt):
    """Greedy continuation and each step's top logits, a full forward pass per step."""
    ids, steps = list(prompt), []
    with torch.no_grad():
        for _ in range(STEPS):
            logits = model(torch.tensor([ids])).logits[0, -1]
            top = torch.topk(logits, TOP)
            margin = float(top.values[0] - top.values[1])
            assert margin > MIN_MARGIN, f"greedy margin {margin} at step {len(steps)}"
            steps.append({"ids": top.indices.tolist(), "logits": top.values.tolist()})
            ids.append(int(top.indices[0]))
    return {"prompt": list(prompt), "greedy": ids[len(prompt):], "steps": steps}


def write(path, arch, model, qtype=None, seed=0):
    """Writes the model as GGUF (matrices in `qtype`, else f32) and loads the decoded weights
    back into `model`."""
    cfg = model.config
    rng = np.random.default_rng(seed)
    w = gguf.GGUFWriter(str(path), arch)
    w.add_name(f"tiny {arch}")
    w.add_context_length(CONTEXT)
    w.add_embedding_length(cfg.hidden_size)
    w.add_block_count(cfg.num_hidden_layers)
    w.add_feed_forward_length(cfg.intermediate_size)
    w.add_head_count(cfg.num_attention_heads)
    w.add_head_count_kv(cfg.num_key_value_heads)
    w.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    rope = cfg.rope_parameters
    if "full_attention" in rope:  # gemma3: the global layers' base; the local one is fixed
        rope = rope["full_attention"]
    if getattr(cfg, "sliding_window", None):
        w.add_sliding_window(cfg.sliding_window)
    w.add_rope_freq_base(rope["rope_theta"])
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    if arch in ("llama", "phi3"):
        w.add_rope_dimension_count(head_dim)
    else:
        w.add_key_length(head_dim)
        w.add_value_length(head_dim)
    if rope["rope_type"] == "llama3":
        w.add_tensor("rope_freqs.weight", llama3_rope_factors(rope, head_dim))
    if rope["rope_type"] == "longrope":
        w.add_rope_scaling_attn_factors(model.model.rotary_emb.attention_scaling)
        w.add_rope_scaling_orig_ctx_len(cfg.original_max_position_embeddings)
        w.add_tensor("rope_factors_long.weight", np.array(rope["long_factor"], dtype=np.float32))
        w.add_tensor("rope_factors_short.weight", np.array(rope["short_factor"], dtype=np.float32))
    w.add_vocab_size(VOCAB)
    w.add_file_type(int(qtype or Q.F32))
    w.add_tokenizer_model("gpt2")
    w.add_token_list([f"<{i}>" for i in range(VOCAB)])
    w.add_token_types([1] * VOCAB)
    params = dict(model.named_parameters())
    with torch.no_grad():
        for name, hf, heads in gguf_tensors(model, arch):
            value = params[hf].detach().numpy().astype(np.float32)
            if heads:
                value = permute(value, heads)
            if name.endswith("norm.weight"):
                value = value + np.float32(NORM_SHIFT.get(arch, 0.0))
            if qtype is not None and value.ndim == 2:
                data, decoded = encode(rng, value, qtype)
                w.add_tensor(name, data, raw_dtype=qtype if qtype != Q.F16 else None)
                params[hf].copy_(torch.from_numpy(unpermute(decoded, heads) if heads else decoded))
            else:
                w.add_tensor(name, value)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


# Real models' shapes for write_shaped, with random weights: for benchmarks (a model's speed does
# not depend on its weights' values), and the tiny Qwen3 of the end-to-end tests. Each carries its
# family's tokenizer where the registries have it (TOKENIZERS); Gemma's is not there, so Gemma 3's
# shape carries Llama 2's SentencePiece tokenizer, its ids past Llama 2's unused control tokens.
SHAPES = {
    "qwen3-tiny": dict(name="tiny Qwen3 (random weights)", arch="qwen3", tokenizer="qwen3", vocab=151680, hidden=64, ffn=128, layers=2, heads=4, kv_heads=2, head_dim=16),
    "qwen3-0.6b": dict(arch="qwen3", tokenizer="qwen3", vocab=151936, hidden=1024, ffn=3072, layers=28, heads=16, kv_heads=8, head_dim=128),
    # Qwen 2.5 and Qwen 3 share their vocabulary and merges.
    "qwen2.5-0.5b": dict(arch="qwen2", tokenizer="qwen3", vocab=151936, hidden=896, ffn=4864, layers=24, heads=14, kv_heads=2, head_dim=64),
    "llama3.2-1b": dict(arch="llama", tokenizer="llama3", vocab=128256, hidden=2048, ffn=8192, layers=16, heads=32, kv_heads=8, head_dim=64),
    "gemma3-270m": dict(arch="gemma3", tokenizer="llama2", vocab=262144, hidden=640, ffn=2048, layers=18, heads=4, kv_heads=1, head_dim=256),
    "phi3.5-mini": dict(arch="phi3", tokenizer="llama2", vocab=32064, hidden=3072, ffn=8192, layers=32, heads=32, kv_heads=32, head_dim=96),
}

# (tokenizer.json in assets/tokenizers, byte-level BPE's pre-tokenizer or None for SentencePiece,
# end of sequence, beginning of sequence, whether a prompt starts with it)
TOKENIZERS = {
    "qwen3": ("qwen3.json", "qwen2", 151645, 151643, False),
    "llama3": ("llama3.json", "llama-bpe", 128009, 128000, True),
    "llama2": ("llama2.json", None, 2, 1, True),
}


def add_tokenizer(w, tokenizers, name, vocab):
    """A `tokenizer.json` as the converter writes it: ids in order, added tokens control or
    user-defined, byte-level BPE's merges and pre-tokenizer, or SentencePiece's byte tokens and
    scores (each piece ranked by the first merge that makes it). Ids past the tokenizer's are
    padding: user-defined where the family pads so (Qwen), unused control tokens where the
    tokenizer stands in for another family's."""
    file, pre, eos, bos, add_bos = TOKENIZERS[name]
    T = gguf.TokenType
    tok = json.loads((tokenizers / file).read_text())
    tokens = [f"[PAD{i}]" for i in range(vocab)]
    types = [T.USER_DEFINED if name == "qwen3" else T.CONTROL] * vocab
    for token, i in tok["model"]["vocab"].items():
        tokens[i], types[i] = token, T.NORMAL
    unk = tok["model"].get("unk_token")
    for added in tok["added_tokens"]:
        special = T.UNKNOWN if added["content"] == unk else T.CONTROL
        tokens[added["id"]] = added["content"]
        types[added["id"]] = special if added["special"] else T.USER_DEFINED
    merges = [m if isinstance(m, str) else " ".join(m) for m in tok["model"]["merges"]]
    if pre:
        w.add_tokenizer_model("gpt2")
        w.add_tokenizer_pre(pre)
        w.add_token_merges(merges)
    else:
        ids = {t: i for i, t in enumerate(tokens)}
        scores = np.zeros(vocab, dtype=np.float32)
        for rank, merge in reversed(list(enumerate(merges))):
            scores[ids[merge.replace(" ", "")]] = -rank
        for i, token in enumerate(tokens):
            if types[i] == T.NORMAL and len(token) == 6 and token.startswith("<0x"):
                types[i] = T.BYTE
        w.add_tokenizer_model("llama")
        w.add_token_scores(scores.tolist())
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_eos_token_id(eos)
    w.add_bos_token_id(bos)
    w.add_add_bos_token(add_bos)
    if name == "qwen3":
        w.add_pad_token_id(bos)
        w.add_chat_template(json.loads((tokenizers / "qwen3.config.json").read_text())["chat_template"])


def write_shaped(path, tokenizers, shape, mix, seed=11):
    """A random-weight model of `shape` (SHAPES) as the converter writes its architecture, with
    its tokenizer: matrices in F16, BF16, Q8_0 or Q4_0 (`mix` "f16", "bf16", "q8_0", "q4_0") or
    as llama.cpp's Q4_K_M and Q5_K_M mix them ("q4_k_m", "q5_k_m": Q6_K for the embedding,
    the output head, attn_v and ffn_down, Q4_K or Q5_K elsewhere, random blocks; Q5_0 and Q8_0
    for rows not whole 256-value blocks, as llama.cpp falls back)."""
    s = SHAPES[shape]
    arch = s["arch"]
    rng = np.random.default_rng(seed)
    w = gguf.GGUFWriter(str(path), arch)
    w.add_name(s.get("name", f"{shape} shape (random weights)"))
    w.add_context_length({"phi3": 131072, "llama": 131072, "gemma3": 32768}.get(arch, 40960))
    w.add_embedding_length(s["hidden"])
    w.add_block_count(s["layers"])
    w.add_feed_forward_length(s["ffn"])
    w.add_head_count(s["heads"])
    w.add_head_count_kv(s["kv_heads"])
    w.add_layer_norm_rms_eps(1e-6)
    d, hd = s["hidden"], s["head_dim"]
    if arch in ("llama", "phi3"):
        w.add_rope_dimension_count(hd)
    else:
        w.add_key_length(hd)
        w.add_value_length(hd)
    w.add_rope_freq_base({"llama": 5e5, "phi3": 1e4}.get(arch, 1e6))
    if arch == "gemma3":
        w.add_sliding_window(512)
    if arch == "llama":
        rope = dict(rope_theta=5e5, factor=32.0, low_freq_factor=1.0, high_freq_factor=4.0, original_max_position_embeddings=8192)
        w.add_tensor("rope_freqs.weight", llama3_rope_factors(rope, hd))
    if arch == "phi3":
        w.add_rope_scaling_attn_factors(1.19)
        w.add_rope_scaling_orig_ctx_len(4096)
        w.add_tensor("rope_factors_long.weight", (1 + 0.5 * rng.random(hd // 2)).astype(np.float32))
        w.add_tensor("rope_factors_short.weight", (1 + 0.05 * rng.random(hd // 2)).astype(np.float32))
    F = gguf.LlamaFileType
    w.add_file_type(int({"f16": F.MOSTLY_F16, "bf16": F.MOSTLY_BF16, "q8_0": F.MOSTLY_Q8_0, "q4_0": F.MOSTLY_Q4_0, "q5_k_m": F.MOSTLY_Q5_K_M}.get(mix, F.MOSTLY_Q4_K_M)))
    add_tokenizer(w, tokenizers, s["tokenizer"], s["vocab"])

    def matrix(name, rows, cols):
        qtype = {"f16": Q.F16, "bf16": Q.BF16, "q4_0": Q.Q4_0}.get(mix, Q.Q8_0)
        if mix in ("q4_k_m", "q5_k_m"):
            mixed = Q.Q4_K if mix == "q4_k_m" else Q.Q5_K
            qtype = Q.Q6_K if any(part in name for part in ("token_embd", "output.", "attn_v", "ffn_down")) else mixed
            if cols % 256:
                qtype = Q.Q8_0 if qtype == Q.Q6_K else Q.Q5_0
        if qtype == Q.F16:
            w.add_tensor(name, (rng.standard_normal((rows, cols), dtype=np.float32) / np.float32(cols ** 0.5)).astype(np.float16))
        elif qtype in (Q.BF16, Q.Q8_0, Q.Q4_0, Q.Q5_0):
            values = rng.standard_normal((rows, cols), dtype=np.float32) / np.float32(cols ** 0.5)
            w.add_tensor(name, gguf.quants.quantize(values, qtype), raw_dtype=qtype)
        else:
            w.add_tensor(name, random_k_blocks(rng, qtype, rows, cols), raw_dtype=qtype)

    def vector(name, n):
        w.add_tensor(name, (1 + 0.2 * (2 * rng.random(n, dtype=np.float32) - 1)).astype(np.float32))

    qd, kd, f = s["heads"] * hd, s["kv_heads"] * hd, s["ffn"]
    matrix("token_embd.weight", s["vocab"], d)
    vector("output_norm.weight", d)
    if arch == "phi3":
        matrix("output.weight", s["vocab"], d)
    for i in range(s["layers"]):
        if arch == "phi3":
            matrix(f"blk.{i}.attn_qkv.weight", qd + 2 * kd, d)
        else:
            matrix(f"blk.{i}.attn_q.weight", qd, d)
            matrix(f"blk.{i}.attn_k.weight", kd, d)
            matrix(f"blk.{i}.attn_v.weight", kd, d)
        if arch == "qwen2":
            for part, n in (("q", qd), ("k", kd), ("v", kd)):
                w.add_tensor(f"blk.{i}.attn_{part}.bias", (0.1 * rng.standard_normal(n)).astype(np.float32))
        matrix(f"blk.{i}.attn_output.weight", d, qd)
        if arch in ("qwen3", "gemma3"):
            vector(f"blk.{i}.attn_q_norm.weight", hd)
            vector(f"blk.{i}.attn_k_norm.weight", hd)
        vector(f"blk.{i}.attn_norm.weight", d)
        vector(f"blk.{i}.ffn_norm.weight", d)
        if arch == "gemma3":
            vector(f"blk.{i}.post_attention_norm.weight", d)
            vector(f"blk.{i}.post_ffw_norm.weight", d)
        if arch == "phi3":  # gate rows, then up rows
            matrix(f"blk.{i}.ffn_up.weight", 2 * f, d)
        else:
            matrix(f"blk.{i}.ffn_gate.weight", f, d)
            matrix(f"blk.{i}.ffn_up.weight", f, d)
        matrix(f"blk.{i}.ffn_down.weight", d, f)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path, help="the fixtures' folder, or with --shape the GGUF file to write")
    parser.add_argument("--shape", nargs=2, metavar=("SHAPE", "MIX"), help="write one random-weight model of a real one's shape "
                        f"(shapes: {', '.join(SHAPES)}; mixes: f16, bf16, q8_0, q4_0, q4_k_m, q5_k_m) instead, for benchmarks")
    args = parser.parse_args()
    tokenizers = Path(__file__).resolve().parent.parent / "assets" / "tokenizers"
    if args.shape:
        write_shaped(args.out, tokenizers, *args.shape)
        return
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    prompt = np.random.default_rng(7).integers(0, VOCAB, PROMPT_LEN).tolist()
    models = [(name, name, None) for name in MODELS]
    models += [(f"llama-{suffix}", "llama", qtype) for suffix, qtype in WEIGHT_TYPES]
    for i, (name, base, qtype) in enumerate(models):
        arch = MODELS[base][0]
        model = build(base)
        write(out / f"{name}.gguf", arch, model, qtype, seed=i)
        reference = {"file": f"{name}.gguf", "architecture": arch, "weights": qtype.name if qtype else "F32", **run(model, prompt)}
        (out / f"{name}.json").write_text(json.dumps(reference))
        print(f"{name}: greedy {reference['greedy']}")
    write_shaped(out / "qwen3-chat.gguf", tokenizers, "qwen3-tiny", "q8_0")
    print("qwen3-chat.gguf")


if __name__ == "__main__":
    main()
