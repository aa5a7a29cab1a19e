//! The architectures and hyper-parameters of a model, read from GGUF metadata, and the rotary
//! tables every implementation of the forward pass shares.

use crate::error::ModelError;
use crate::gguf::Gguf;

/// The GGUF architectures (`general.architecture`) sieve runs: pre-norm decoders of Llama's
/// shape that differ in a few places.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Architecture {
    /// `llama`: SmolLM2, Llama 2 and 3, TinyLlama.
    Llama,
    /// `qwen2`: biases on the Q, K and V projections.
    Qwen2,
    /// `qwen3`: an RMSNorm over each head of the queries and keys before RoPE; a head width that
    /// need not be the residual width over the heads.
    Qwen3,
}

impl Architecture {
    /// Every supported architecture.
    pub const ALL: [Self; 3] = [Self::Llama, Self::Qwen2, Self::Qwen3];

    /// The name GGUF metadata gives it, which also prefixes its keys.
    pub fn name(self) -> &'static str {
        match self {
            Self::Llama => "llama",
            Self::Qwen2 => "qwen2",
            Self::Qwen3 => "qwen3",
        }
    }

    /// Whether the Q, K and V projections add a bias (`blk.{i}.attn_{q,k,v}.bias`).
    pub fn qkv_bias(self) -> bool {
        self == Self::Qwen2
    }

    /// Whether each head of the queries and keys is RMS-normalized before RoPE
    /// (`blk.{i}.attn_{q,k}_norm.weight`, `[hd]`).
    pub fn qk_norm(self) -> bool {
        self == Self::Qwen3
    }

    /// Whether the GGUF's Q and K rows rotate the halves of a head as RoPE pairs `(i, i + hd/2)`
    /// (llama.cpp permutes llama's rows to adjacent pairs at conversion, not the others'). The
    /// loaders reorder such rows to adjacent pairs, the one rotation every pass applies.
    pub(crate) fn rope_halves(self) -> bool {
        self != Self::Llama
    }
}

/// Hyper-parameters of a decoder of one of the [`Architecture`]s.
#[derive(Debug, Clone, PartialEq)]
pub struct LlamaConfig {
    pub arch: Architecture,
    /// Logits width `V` (token ids `0..V`).
    pub vocab: usize,
    /// Residual width `D`.
    pub hidden: usize,
    pub layers: usize,
    /// Query heads `H`.
    pub heads: usize,
    /// Key/value heads `Hkv`; `H` must be a multiple of it.
    pub kv_heads: usize,
    /// Width `hd` of one attention head (often `D / H`).
    pub head_dim: usize,
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
            arch: Architecture::Llama,
            vocab: 49152,
            hidden: 576,
            layers: 30,
            heads: 9,
            kv_heads: 3,
            head_dim: 64,
            ffn: 1536,
            rms_eps: 1e-5,
            rope_theta: 1e5,
            max_seq,
        }
    }

    /// A small llama for tests: 2 layers, 4/2 heads of width 8.
    pub fn tiny(vocab: usize) -> Self {
        Self {
            arch: Architecture::Llama,
            vocab,
            hidden: 32,
            layers: 2,
            heads: 4,
            kv_heads: 2,
            head_dim: 8,
            ffn: 48,
            rms_eps: 1e-5,
            rope_theta: 1e4,
            max_seq: 256,
        }
    }

    /// Reads the metadata of a GGUF of a supported architecture (its keys prefixed with the
    /// architecture's name); the context is capped at `max_seq`.
    pub fn from_gguf(gguf: &Gguf<'_>, max_seq: usize) -> Result<Self, ModelError> {
        let name = gguf.get_str("general.architecture")?;
        let arch = Architecture::ALL.into_iter().find(|a| a.name() == name).ok_or_else(|| ModelError::Metadata {
            key: "general.architecture".into(),
            message: format!("`{name}` is not supported (supported: llama, qwen2, qwen3)"),
        })?;
        let key = |k: &str| format!("{name}.{k}");
        let int = |k: &str| -> Result<usize, ModelError> {
            let k = key(k);
            let v = gguf.get_u64(&k)?;
            usize::try_from(v).ok().filter(|&v| v > 0 && v <= 1 << 24).ok_or_else(|| ModelError::Metadata {
                key: k.clone(),
                message: format!("{v} is out of range"),
            })
        };
        let vocab = match gguf.get_u64(&key("vocab_size")) {
            Ok(_) => int("vocab_size")?,
            Err(_) => gguf.get_array("tokenizer.ggml.tokens")?.len(),
        };
        let (hidden, heads) = (int("embedding_length")?, int("attention.head_count")?);
        let head_dim = match gguf.get_u64(&key("attention.key_length")) {
            Ok(_) => int("attention.key_length")?,
            Err(_) if hidden.is_multiple_of(heads) => hidden / heads,
            Err(_) => {
                return Err(ModelError::Metadata {
                    key: key("attention.key_length"),
                    message: format!("missing, and {heads} heads do not divide the width {hidden}"),
                });
            }
        };
        if let Ok(v) = gguf.get_u64(&key("attention.value_length"))
            && v as usize != head_dim
        {
            return Err(ModelError::Metadata {
                key: key("attention.value_length"),
                message: format!("values of width {v} beside keys of {head_dim} are not supported"),
            });
        }
        let config = Self {
            arch,
            vocab,
            hidden,
            layers: int("block_count")?,
            heads,
            kv_heads: int("attention.head_count_kv")?,
            head_dim,
            ffn: int("feed_forward_length")?,
            rms_eps: gguf.get_f64(&key("attention.layer_norm_rms_epsilon"))? as f32,
            rope_theta: gguf.get_f64(&key("rope.freq_base")).unwrap_or(1e4) as f32,
            max_seq: max_seq.min(int("context_length")?),
        };
        config.validate()?;
        if let Ok(dim) = gguf.get_u64(&key("rope.dimension_count"))
            && dim as usize != config.head_dim
        {
            return Err(ModelError::Metadata {
                key: key("rope.dimension_count"),
                message: format!("partial rotary ({dim} of {}) is not supported", config.head_dim),
            });
        }
        if let Ok(scaling) = gguf.get_str(&key("rope.scaling.type"))
            && scaling != "none"
        {
            return Err(ModelError::Metadata { key: key("rope.scaling.type"), message: format!("RoPE scaling `{scaling}` is not supported") });
        }
        Ok(config)
    }

    pub(crate) fn validate(&self) -> Result<(), ModelError> {
        let ok = self.heads > 0
            && self.kv_heads > 0
            && self.heads.is_multiple_of(self.kv_heads)
            && self.head_dim > 0
            && self.head_dim.is_multiple_of(2)
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

/// A layer's attention tensors beyond Llama's, as f32 values with Q and K rows in adjacent-pair
/// order (see [`Architecture::rope_halves`]).
pub(crate) struct AttentionExtras {
    /// `[(H + 2 Hkv) hd]`: the biases of Q, K and V, concatenated.
    pub(crate) qkv_bias: Option<Vec<f32>>,
    /// `[hd]` each: the weights of the queries' and the keys' per-head RMSNorm.
    pub(crate) qk_norm: Option<[Vec<f32>; 2]>,
}

impl AttentionExtras {
    /// Layer `i`'s extra tensors, as `config.arch` has them.
    pub(crate) fn from_gguf(gguf: &Gguf<'_>, config: &LlamaConfig, i: usize) -> Result<Self, ModelError> {
        let (hd, qd, kd) = (config.head_dim, config.heads * config.head_dim, config.kv_heads * config.head_dim);
        let qkv_bias = match config.arch.qkv_bias() {
            true => {
                let bias = |part: &str, rows: usize| {
                    let values = gguf.tensor_f32(&format!("blk.{i}.attn_{part}.bias"), &[rows])?;
                    Ok::<_, ModelError>(config.to_adjacent_pairs(values, rows, 1))
                };
                Some([bias("q", qd)?, bias("k", kd)?, gguf.tensor_f32(&format!("blk.{i}.attn_v.bias"), &[kd])?].concat())
            }
            false => None,
        };
        let qk_norm = match config.arch.qk_norm() {
            true => {
                let norm = |part: &str| Ok::<_, ModelError>(config.to_adjacent_pairs(gguf.tensor_f32(&format!("blk.{i}.attn_{part}_norm.weight"), &[hd])?, hd, 1));
                Some([norm("q")?, norm("k")?])
            }
            false => None,
        };
        Ok(Self { qkv_bias, qk_norm })
    }
}

impl LlamaConfig {
    /// For an architecture whose GGUF rotates head halves: the row of the file each row of a Q or
    /// K projection with `rows` rows (whole heads) comes from, so that RoPE rotates adjacent
    /// pairs `(2i, 2i+1)`. `None` where the file's order is that already.
    pub(crate) fn adjacent_pair_rows(&self, rows: usize) -> Option<Vec<usize>> {
        let (hd, half) = (self.head_dim, self.head_dim / 2);
        self.arch.rope_halves().then(|| (0..rows).map(|r| r - r % hd + (r % 2) * half + (r % hd) / 2).collect())
    }

    /// `values`, `rows` rows of `cols`, in adjacent-pair order ([`Self::adjacent_pair_rows`]).
    pub(crate) fn to_adjacent_pairs(&self, values: Vec<f32>, rows: usize, cols: usize) -> Vec<f32> {
        match self.adjacent_pair_rows(rows) {
            Some(order) => order.iter().flat_map(|&r| values[r * cols..][..cols].iter().copied()).collect(),
            None => values,
        }
    }
}

/// Cosines and sines of the rotary angles, `[max_seq, hd / 2]` each: pair `i` of a head turns
/// by `pos * theta^(-2i / hd)` at position `pos`.
pub(crate) fn rope_tables(config: &LlamaConfig) -> (Vec<f32>, Vec<f32>) {
    let hd = config.head_dim;
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
