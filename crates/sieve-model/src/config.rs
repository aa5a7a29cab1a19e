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
    /// `phi3`: Q, K and V in one tensor (`attn_qkv`), gate and up in one (`ffn_up`, gate rows
    /// first); LongRoPE; a sliding window on every layer where the file sets one.
    Phi3,
    /// `gemma3`: the embedding scaled by `sqrt(D)`; per-head query/key norms; norms after the
    /// attention and the feed-forward too (`post_attention_norm`, `post_ffw_norm`), before the
    /// residual sums; a GELU (tanh) gate; five layers of six attend through a sliding window
    /// with RoPE base 10,000, the sixth sees everything with the file's base and scaling. Its
    /// norms' weights hold the `1 +` of Gemma's RMSNorm (llama.cpp's converter adds it).
    Gemma3,
}

impl Architecture {
    /// Every supported architecture.
    pub const ALL: [Self; 5] = [Self::Llama, Self::Qwen2, Self::Qwen3, Self::Phi3, Self::Gemma3];

    /// The name GGUF metadata gives it, which also prefixes its keys.
    pub fn name(self) -> &'static str {
        match self {
            Self::Llama => "llama",
            Self::Qwen2 => "qwen2",
            Self::Qwen3 => "qwen3",
            Self::Phi3 => "phi3",
            Self::Gemma3 => "gemma3",
        }
    }

    /// Whether the Q, K and V projections add a bias (`blk.{i}.attn_{q,k,v}.bias`).
    pub fn qkv_bias(self) -> bool {
        self == Self::Qwen2
    }

    /// Whether each head of the queries and keys is RMS-normalized before RoPE
    /// (`blk.{i}.attn_{q,k}_norm.weight`, `[hd]`).
    pub fn qk_norm(self) -> bool {
        matches!(self, Self::Qwen3 | Self::Gemma3)
    }

    /// Whether the attention's and the feed-forward's outputs are RMS-normalized before they are
    /// added to the residual stream (`blk.{i}.post_attention_norm.weight`,
    /// `blk.{i}.post_ffw_norm.weight`).
    pub fn post_norms(self) -> bool {
        self == Self::Gemma3
    }

    /// The feed-forward's gate: `gelu_tanh(gate) * up` where true, `silu(gate) * up` elsewhere.
    pub fn gelu(self) -> bool {
        self == Self::Gemma3
    }

    /// The factor on the token embedding as the first layer reads it.
    pub fn embedding_scale(self, hidden: usize) -> f32 {
        match self {
            Self::Gemma3 => (hidden as f32).sqrt(),
            _ => 1.0,
        }
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
    pub rope: Rope,
    /// The rotary embedding of the layers with a sliding window, where it differs from `rope`
    /// (gemma3).
    pub rope_local: Option<Rope>,
    /// How many positions (the token's own included) a layer with a sliding window attends to
    /// ([`LlamaConfig::window`]); `None`: every layer sees the whole context.
    pub sliding_window: Option<usize>,
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
            rope: Rope::new(1e5),
            rope_local: None,
            sliding_window: None,
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
            rope: Rope::new(1e4),
            rope_local: None,
            sliding_window: None,
            max_seq: 256,
        }
    }

    /// Reads the metadata of a GGUF of a supported architecture (its keys prefixed with the
    /// architecture's name); the context is capped at `max_seq`.
    pub fn from_gguf(gguf: &Gguf<'_>, max_seq: usize) -> Result<Self, ModelError> {
        let name = gguf.get_str("general.architecture")?;
        let arch = Architecture::ALL.into_iter().find(|a| a.name() == name).ok_or_else(|| ModelError::Metadata {
            key: "general.architecture".into(),
            message: format!("`{name}` is not supported (supported: llama, qwen2, qwen3, phi3, gemma3)"),
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
            rope: Rope::new(gguf.get_f64(&key("rope.freq_base")).unwrap_or(1e4) as f32),
            // llama.cpp's base for gemma3's local layers (the files do not carry it).
            rope_local: (arch == Architecture::Gemma3).then(|| Rope::new(1e4)),
            sliding_window: match gguf.get_u64(&key("attention.sliding_window")) {
                Ok(_) => Some(int("attention.sliding_window")?),
                Err(_) => None,
            },
            max_seq: max_seq.min(int("context_length")?),
        };
        for unsupported in ["final_logit_softcapping", "attn_logit_softcapping"] {
            if gguf.get(&key(unsupported)).is_ok() {
                return Err(ModelError::Metadata { key: key(unsupported), message: "logit soft-capping is not supported".into() });
            }
        }
        let config = Self { rope: Rope::from_gguf(gguf, name, head_dim, config.max_seq)?, ..config };
        config.validate()?;
        if let Ok(dim) = gguf.get_u64(&key("rope.dimension_count"))
            && dim as usize != config.head_dim
        {
            return Err(ModelError::Metadata {
                key: key("rope.dimension_count"),
                message: format!("partial rotary ({dim} of {}) is not supported", config.head_dim),
            });
        }
        Ok(config)
    }

    /// How many positions layer `layer` attends to, the token's own included, when it attends
    /// through a sliding window: every layer where the file sets a window, but gemma3's every
    /// sixth layer (llama.cpp's pattern for it) sees the whole context.
    pub fn window(&self, layer: usize) -> Option<usize> {
        let global = self.arch == Architecture::Gemma3 && (layer + 1).is_multiple_of(6);
        self.sliding_window.filter(|_| !global)
    }

    /// The model's distinct rotary embeddings: `rope`, then `rope_local` where there is one.
    pub fn ropes(&self) -> Vec<&Rope> {
        std::iter::once(&self.rope).chain(&self.rope_local).collect()
    }

    /// Which of [`LlamaConfig::ropes`] layer `layer` applies.
    pub fn rope_index(&self, layer: usize) -> usize {
        usize::from(self.rope_local.is_some() && self.window(layer).is_some())
    }

    pub(crate) fn validate(&self) -> Result<(), ModelError> {
        let ok = self.heads > 0
            && self.kv_heads > 0
            && self.heads.is_multiple_of(self.kv_heads)
            && self.head_dim > 0
            && self.head_dim.is_multiple_of(2)
            && self.max_seq > 0
            && self.sliding_window != Some(0)
            && self.vocab > 0
            && self.vocab <= i32::MAX as usize;
        if ok {
            Ok(())
        } else {
            Err(ModelError::Input(format!("inconsistent model shape {self:?}")))
        }
    }
}

/// A layer's tensors beyond Llama's, as f32 values with Q and K rows in adjacent-pair order (see
/// [`Architecture::rope_halves`]).
#[derive(Default)]
pub(crate) struct LayerExtras {
    /// `[(H + 2 Hkv) hd]`: the biases of Q, K and V, concatenated.
    pub(crate) qkv_bias: Option<Vec<f32>>,
    /// `[hd]` each: the weights of the queries' and the keys' per-head RMSNorm.
    pub(crate) qk_norm: Option<[Vec<f32>; 2]>,
    /// `[D]` each: the weights of the norms on the attention's and the feed-forward's outputs.
    pub(crate) post_norms: Option<[Vec<f32>; 2]>,
}

impl LayerExtras {
    /// Layer `i`'s extra tensors, as `config.arch` has them.
    pub(crate) fn from_gguf(gguf: &Gguf<'_>, config: &LlamaConfig, i: usize) -> Result<Self, ModelError> {
        let (hd, qd, kd) = (config.head_dim, config.heads * config.head_dim, config.kv_heads * config.head_dim);
        let qkv_bias = match config.arch.qkv_bias() {
            true => {
                let bias = |part: &str, rows: usize| {
                    let values = gguf.tensor_f32(&format!("blk.{i}.attn_{part}.bias"), &[rows])?;
                    Ok::<_, ModelError>(config.to_adjacent_pairs(values))
                };
                Some([bias("q", qd)?, bias("k", kd)?, gguf.tensor_f32(&format!("blk.{i}.attn_v.bias"), &[kd])?].concat())
            }
            false => None,
        };
        let qk_norm = match config.arch.qk_norm() {
            true => {
                let norm = |part: &str| Ok::<_, ModelError>(config.to_adjacent_pairs(gguf.tensor_f32(&format!("blk.{i}.attn_{part}_norm.weight"), &[hd])?));
                Some([norm("q")?, norm("k")?])
            }
            false => None,
        };
        let post_norms = match config.arch.post_norms() {
            true => {
                let norm = |name: &str| gguf.tensor_f32(&format!("blk.{i}.{name}.weight"), &[config.hidden]);
                Some([norm("post_attention_norm")?, norm("post_ffw_norm")?])
            }
            false => None,
        };
        Ok(Self { qkv_bias, qk_norm, post_norms })
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

    /// `values` (whole heads: biases, norm weights) in adjacent-pair order
    /// ([`Self::adjacent_pair_rows`]).
    pub(crate) fn to_adjacent_pairs(&self, values: Vec<f32>) -> Vec<f32> {
        match self.adjacent_pair_rows(values.len()) {
            Some(order) => order.iter().map(|&r| values[r]).collect(),
            None => values,
        }
    }
}

/// The tensors [`LlamaConfig::from_gguf`] reads (the rotary embedding's factors), where a file
/// has them.
pub(crate) const CONFIG_TENSORS: [&str; 3] = ["rope_freqs.weight", "rope_factors_long.weight", "rope_factors_short.weight"];

/// The rotary embedding: pair `i` of a head turns by `pos * theta^(-2i / hd) / divisors[i]` at
/// position `pos`, and the rotation is scaled by `magnitude`.
#[derive(Debug, Clone, PartialEq)]
pub struct Rope {
    /// The frequency base.
    pub theta: f32,
    /// Per-pair divisors of the frequencies (`[hd / 2]`), where the model scales them: llama.cpp's
    /// frequency factors (`rope_freqs.weight`, Llama 3's scaling), LongRoPE's short or long
    /// factors (Phi-3), a linear scaling's factor.
    pub divisors: Option<Vec<f32>>,
    /// The factor on cosines and sines (LongRoPE's attention factor), 1 elsewhere.
    pub magnitude: f32,
}

impl Rope {
    /// Plain RoPE with base `theta`.
    pub fn new(theta: f32) -> Self {
        Self { theta, divisors: None, magnitude: 1.0 }
    }

    /// The rotary embedding a GGUF of architecture `arch` describes, for a context of `max_seq`
    /// (LongRoPE takes its long factors past the original context, as llama.cpp does).
    fn from_gguf(gguf: &Gguf<'_>, arch: &str, head_dim: usize, max_seq: usize) -> Result<Self, ModelError> {
        let key = |k: &str| format!("{arch}.rope.{k}");
        let mut rope = Self::new(gguf.get_f64(&key("freq_base")).unwrap_or(1e4) as f32);
        let half = head_dim / 2;
        let long = match gguf.get_u64(&key("scaling.original_context_length")) {
            Ok(original) => max_seq as u64 > original,
            Err(_) => false,
        };
        let [freqs, long_factors, short_factors] = CONFIG_TENSORS;
        let factors = [freqs, if long { long_factors } else { short_factors }];
        if let Some(name) = factors.into_iter().find(|name| gguf.tensors.contains_key(*name)) {
            let divisors = gguf.tensor_f32(name, &[half])?;
            if divisors.iter().any(|d| !(d.is_finite() && *d > 0.0)) {
                return Err(ModelError::Tensor { name: name.into(), message: "frequency factors must be positive".into() });
            }
            rope.divisors = Some(divisors);
        }
        match gguf.get_str(&key("scaling.type")).unwrap_or("none") {
            "none" => {}
            // Its factors are the tensors above; without them it is not what the file says.
            "longrope" if rope.divisors.is_some() => {}
            "linear" => {
                let factor = gguf.get_f64(&key("scaling.factor"))? as f32;
                if !(factor.is_finite() && factor > 0.0) {
                    return Err(ModelError::Metadata { key: key("scaling.factor"), message: format!("{factor} is not a positive factor") });
                }
                let divisors = rope.divisors.get_or_insert_with(|| vec![1.0; half]);
                divisors.iter_mut().for_each(|d| *d *= factor);
            }
            other => {
                return Err(ModelError::Metadata { key: key("scaling.type"), message: format!("RoPE scaling `{other}` is not supported") });
            }
        }
        if let Ok(factor) = gguf.get_f64(&key("scaling.attn_factor")) {
            rope.magnitude = factor as f32;
        }
        Ok(rope)
    }
}

/// Cosines and sines of the rotary angles of `rope`, `[max_seq, hd / 2]` each.
pub(crate) fn rope_tables(config: &LlamaConfig, rope: &Rope) -> (Vec<f32>, Vec<f32>) {
    let hd = config.head_dim;
    let half = hd / 2;
    let freqs: Vec<f64> = (0..half)
        .map(|i| {
            let divisor = rope.divisors.as_ref().map_or(1.0, |d| f64::from(d[i]));
            f64::from(rope.theta).powf(-((2 * i) as f64) / hd as f64) / divisor
        })
        .collect();
    let magnitude = f64::from(rope.magnitude);
    let mut cos = Vec::with_capacity(config.max_seq * half);
    let mut sin = Vec::with_capacity(config.max_seq * half);
    for pos in 0..config.max_seq {
        for freq in &freqs {
            let angle = pos as f64 * freq;
            cos.push((angle.cos() * magnitude) as f32);
            sin.push((angle.sin() * magnitude) as f32);
        }
    }
    (cos, sin)
}
