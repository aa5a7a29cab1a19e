//! The hyper-parameters of a Llama-architecture model, read from GGUF metadata, and the rotary
//! tables every implementation of the forward pass shares.

use crate::error::ModelError;
use crate::gguf::Gguf;

/// Hyper-parameters of a Llama-architecture model.
#[derive(Debug, Clone, PartialEq)]
pub struct LlamaConfig {
    /// Logits width `V` (token ids `0..V`).
    pub vocab: usize,
    /// Residual width `D`.
    pub hidden: usize,
    pub layers: usize,
    /// Query heads `H`.
    pub heads: usize,
    /// Key/value heads `Hkv`; `H` must be a multiple of it.
    pub kv_heads: usize,
    /// MLP width `F`.
    pub ffn: usize,
    pub rms_eps: f32,
    pub rope_theta: f32,
    /// Longest sequence the KV cache and RoPE tables accept.
    pub max_seq: usize,
}

impl LlamaConfig {
    /// SmolLM2-135M's shape with a context of `max_seq` tokens.
    pub fn smollm2_135m(max_seq: usize) -> Self {
        Self {
            vocab: 49152,
            hidden: 576,
            layers: 30,
            heads: 9,
            kv_heads: 3,
            ffn: 1536,
            rms_eps: 1e-5,
            rope_theta: 1e5,
            max_seq,
        }
    }

    /// A small model of the same architecture for tests: 2 layers, 4/2 heads of width 8.
    pub fn tiny(vocab: usize) -> Self {
        Self { vocab, hidden: 32, layers: 2, heads: 4, kv_heads: 2, ffn: 48, rms_eps: 1e-5, rope_theta: 1e4, max_seq: 256 }
    }

    /// Reads the `llama.*` metadata of a GGUF; the context is capped at `max_seq`.
    pub fn from_gguf(gguf: &Gguf<'_>, max_seq: usize) -> Result<Self, ModelError> {
        let arch = gguf.get_str("general.architecture")?;
        if arch != "llama" {
            return Err(ModelError::Metadata { key: "general.architecture".into(), message: format!("`{arch}` is not llama") });
        }
        let int = |k: &str| -> Result<usize, ModelError> {
            let v = gguf.get_u64(k)?;
            usize::try_from(v).ok().filter(|&v| v > 0 && v <= 1 << 24).ok_or_else(|| ModelError::Metadata {
                key: k.into(),
                message: format!("{v} is out of range"),
            })
        };
        let vocab = match gguf.get_u64("llama.vocab_size") {
            Ok(_) => int("llama.vocab_size")?,
            Err(_) => gguf.get_array("tokenizer.ggml.tokens")?.len(),
        };
        let config = Self {
            vocab,
            hidden: int("llama.embedding_length")?,
            layers: int("llama.block_count")?,
            heads: int("llama.attention.head_count")?,
            kv_heads: int("llama.attention.head_count_kv")?,
            ffn: int("llama.feed_forward_length")?,
            rms_eps: gguf.get_f64("llama.attention.layer_norm_rms_epsilon")? as f32,
            rope_theta: gguf.get_f64("llama.rope.freq_base").unwrap_or(1e4) as f32,
            max_seq: max_seq.min(int("llama.context_length")?),
        };
        config.validate()?;
        if let Ok(dim) = gguf.get_u64("llama.rope.dimension_count")
            && dim as usize != config.head_dim()
        {
            return Err(ModelError::Metadata {
                key: "llama.rope.dimension_count".into(),
                message: format!("partial rotary ({dim} of {}) is not supported", config.head_dim()),
            });
        }
        Ok(config)
    }

    /// Width of one attention head.
    pub fn head_dim(&self) -> usize {
        self.hidden / self.heads
    }

    pub(crate) fn validate(&self) -> Result<(), ModelError> {
        let ok = self.heads > 0
            && self.kv_heads > 0
            && self.hidden.is_multiple_of(self.heads)
            && self.heads.is_multiple_of(self.kv_heads)
            && self.head_dim().is_multiple_of(2)
            && self.max_seq > 0
            && self.vocab > 0
            && self.vocab <= i32::MAX as usize;
        if ok {
            Ok(())
        } else {
            Err(ModelError::Input(format!("inconsistent model shape {self:?}")))
        }
    }
}

/// Cosines and sines of the rotary angles, `[max_seq, hd / 2]` each: pair `i` of a head turns
/// by `pos * theta^(-2i / hd)` at position `pos`.
pub(crate) fn rope_tables(config: &LlamaConfig) -> (Vec<f32>, Vec<f32>) {
    let hd = config.head_dim();
    let half = hd / 2;
    let mut cos = Vec::with_capacity(config.max_seq * half);
    let mut sin = Vec::with_capacity(config.max_seq * half);
    for pos in 0..config.max_seq {
        for i in 0..half {
            let freq = (config.rope_theta as f64).powf(-((2 * i) as f64) / hd as f64);
            let angle = pos as f64 * freq;
            cos.push(angle.cos() as f32);
            sin.push(angle.sin() as f32);
        }
    }
    (cos, sin)
}
