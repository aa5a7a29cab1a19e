//! Decoders of Llama's shape ([`crate::config::Architecture`]: llama, qwen2, qwen3, phi3), on the
//! CPU or on any burn device.
//!
//! Pre-norm decoder blocks (RMSNorm, grouped-query attention with interleaved RoPE, SiLU-gated
//! MLP), a final RMSNorm and an output head (tied to the token embedding where the file has no
//! `output.weight`); qwen2 adds biases to Q, K and V, qwen3 normalizes each head of the queries
//! and keys before RoPE, phi3 fuses tensors. [`Llama::forward`] runs
//! any number of new tokens in one pass against a [`KvCache`] and returns the logits of the last
//! one, so a prompt or a forced continuation is prefilled in one call. Three implementations
//! run it ([`Backend`]): the CPU kernels ([`crate::cpu`]) on the GGUF's own blocks, the WGSL
//! kernels on a wgpu device, and burn's ops on any other device, the reference.
//!
//! # Weight layout
//!
//! On a burn device, projections are kept as `[in, out]` f32 matrices so that `x.matmul(w)`
//! applies them; Q, K and V are fused into one matrix, gate and up into another, to halve the
//! matmul launches per layer. The CPU path keeps each tensor as the GGUF has it.
//!
//! | GGUF tensor                | GGUF shape (outer first) | field                                 |
//! |----------------------------|--------------------------|---------------------------------------|
//! | `token_embd.weight`        | `[V, D]`                 | `embed` (and the output head if tied) |
//! | `blk.{i}.attn_norm.weight` | `[D]`                    | `layers[i].attn_norm`                 |
//! | `blk.{i}.attn_q.weight`    | `[H*hd, D]`              | `layers[i].wqkv[:, 0..H*hd]`          |
//! | `blk.{i}.attn_k.weight`    | `[Hkv*hd, D]`            | `layers[i].wqkv[:, H*hd..+Hkv*hd]`    |
//! | `blk.{i}.attn_v.weight`    | `[Hkv*hd, D]`            | `layers[i].wqkv[:, ..last Hkv*hd]`    |
//! | `blk.{i}.attn_output.weight` | `[D, H*hd]`            | `layers[i].wo`                        |
//! | `blk.{i}.ffn_norm.weight`  | `[D]`                    | `layers[i].ffn_norm`                  |
//! | `blk.{i}.ffn_gate.weight`  | `[F, D]`                 | `layers[i].w_gate_up[:, 0..F]`        |
//! | `blk.{i}.ffn_up.weight`    | `[F, D]`                 | `layers[i].w_gate_up[:, F..2F]`       |
//! | `blk.{i}.ffn_down.weight`  | `[D, F]`                 | `layers[i].w_down`                    |
//! | `output_norm.weight`       | `[D]`                    | `norm`                                |
//! | `output.weight` (optional) | `[V, D]`                 | `head` (absent: tied to `embed`)      |
//!
//! qwen2 adds `blk.{i}.attn_{q,k,v}.bias` (`[rows]`), qwen3 `blk.{i}.attn_{q,k}_norm.weight`
//! (`[hd]`); phi3 has `blk.{i}.attn_qkv.weight` (`[(H + 2 Hkv) hd, D]`) for the three and
//! `blk.{i}.ffn_up.weight` (`[2F, D]`, gate rows first) for gate and up. A llama GGUF stores Q and K rows in llama.cpp's order, in which RoPE rotates
//! adjacent pairs `(2i, 2i+1)` of each head: that is the rotation applied here. The others'
//! rotate head halves `(i, i + hd/2)`; their Q and K rows (and biases and norms) are reordered
//! to adjacent pairs at load ([`LlamaConfig::adjacent_pair_rows`]), which leaves every dot
//! product of a query with a key unchanged.

use burn::tensor::{Device, Tensor};

use crate::burn_forward::{BurnWeights, LayerData};
use crate::config::LayerExtras;
pub use crate::config::LlamaConfig;
use crate::cpu::parts::{Helpers, Shard};
use crate::cpu::{CpuCache, CpuForward, LayerRows};
use crate::error::ModelError;
use crate::gguf::Gguf;
use crate::wgsl_forward::{GpuCache, WgslForward};

/// Where a model runs.
#[derive(Debug, Clone)]
pub enum Placement {
    /// sieve's CPU kernels on the weights' own encoding (see [`crate::cpu`]), on this many
    /// threads (one in the browser).
    Cpu { threads: usize },
    /// A burn device: the WGSL kernels on a wgpu device, burn's ops on any other (the
    /// reference the tests hold the other paths to).
    Device(Device),
}

impl Placement {
    /// The CPU kernels on every thread the machine has.
    pub fn cpu() -> Self {
        Self::Cpu { threads: crate::cpu::threads::Threads::available() }
    }
}

impl From<&Device> for Placement {
    fn from(device: &Device) -> Self {
        Self::Device(device.clone())
    }
}

impl From<Device> for Placement {
    fn from(device: Device) -> Self {
        Self::Device(device)
    }
}

/// Which implementation runs a model's forward pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// The CPU kernels, on `threads` threads.
    Cpu { threads: usize },
    /// The WGSL kernels on a wgpu device (WebGPU in the browser, Vulkan natively).
    Gpu,
    /// burn's ops, on a device the WGSL kernels do not cover (burn's CPU backend in tests).
    Reference,
}

enum Weights {
    /// Tensors on a burn device, and the WGSL pass over them on wgpu devices.
    Burn(BurnWeights, Option<WgslForward>),
    Cpu(CpuForward),
}

/// A Llama-architecture decoder with its weights where it runs ([`Placement`]).
pub struct Llama {
    config: LlamaConfig,
    weights: Weights,
}

/// The last token's logits of a forward pass, where the pass left them.
pub enum Logits {
    /// On the model's burn device, `[1, V]`.
    Device(Tensor<2>),
    /// In memory (the CPU path).
    Host(Vec<f32>),
}

impl Logits {
    /// The logits as values (read back from the device when they are there).
    pub async fn into_vec(self) -> Result<Vec<f32>, ModelError> {
        match self {
            Logits::Host(values) => Ok(values),
            Logits::Device(tensor) => {
                let data = tensor.into_data_async().await.map_err(|e| ModelError::Backend(format!("logits readback: {e:?}")))?;
                data.try_into_vec::<f32>().map_err(|e| ModelError::Backend(format!("logits are not f32: {e:?}")))
            }
        }
    }
}

/// The keys and values of the tokens seen so far, per layer.
pub struct KvCache {
    store: CacheStore,
    len: usize,
}

enum CacheStore {
    /// burn tensors (`[Hkv, len, hd]` each) that grow with every pass.
    Tensors(Vec<Option<(Tensor<3>, Tensor<3>)>>),
    /// The WGSL path's buffers for the whole context.
    Gpu(GpuCache),
    /// The CPU path's keys and values in memory.
    Cpu(CpuCache),
}

impl KvCache {
    /// An empty cache for `model`.
    pub fn new(model: &Llama) -> Self {
        let store = match &model.weights {
            Weights::Burn(_, Some(wgsl)) => CacheStore::Gpu(wgsl.new_cache()),
            Weights::Burn(..) => CacheStore::Tensors((0..model.config.layers).map(|_| None).collect()),
            Weights::Cpu(cpu) => CacheStore::Cpu(cpu.new_cache()),
        };
        Self { store, len: 0 }
    }

    /// Number of cached positions.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no position is cached.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Forgets every position from `len` on (to re-tokenize the end of a sequence).
    pub fn truncate(&mut self, len: usize) {
        if len >= self.len {
            return;
        }
        match &mut self.store {
            CacheStore::Tensors(layers) => {
                for entry in layers {
                    *entry = match entry.take() {
                        Some((k, v)) if len > 0 => Some((k.narrow(1, 0, len), v.narrow(1, 0, len))),
                        _ => None,
                    };
                }
            }
            CacheStore::Gpu(_) => {}
            CacheStore::Cpu(cache) => cache.truncate(len),
        }
        self.len = len;
    }
}

/// Row-major `[rows, cols]` to `[cols, rows]`.
fn transpose(data: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    let mut out = vec![0.0; data.len()];
    for (r, row) in data.chunks_exact(cols).enumerate() {
        for (c, &x) in row.iter().enumerate() {
            out[c * rows + r] = x;
        }
    }
    out
}

/// Several `[rows_i, cols]` matrices stacked on rows, then transposed: `[cols, sum rows_i]`.
fn stack_transposed(parts: &[Vec<f32>], cols: usize) -> Vec<f32> {
    let stacked: Vec<f32> = parts.concat();
    let rows = stacked.len() / cols;
    transpose(&stacked, rows, cols)
}

/// Deterministic weights in `[-scale, scale)` from a SplitMix64 stream.
fn random_weights(state: &mut u64, n: usize, scale: f32) -> Vec<f32> {
    (0..n)
        .map(|_| {
            *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = *state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            ((z >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * scale
        })
        .collect()
}

impl Llama {
    /// Loads the weights of a llama GGUF where `placement` says: kept in their encoding for the
    /// CPU path, dequantized to f32 burn tensors on a device.
    pub fn from_gguf(gguf: &Gguf<'_>, config: LlamaConfig, placement: impl Into<Placement>) -> Result<Self, ModelError> {
        Self::from_gguf_with_progress(gguf, config, placement, &mut |_| {})
    }

    /// [`Llama::from_gguf`], calling `on_progress` with the fraction (0 to 1) of the weights
    /// loaded so far, once per layer.
    pub fn from_gguf_with_progress(
        gguf: &Gguf<'_>,
        config: LlamaConfig,
        placement: impl Into<Placement>,
        on_progress: &mut dyn FnMut(f64),
    ) -> Result<Self, ModelError> {
        config.validate()?;
        let device = match placement.into() {
            Placement::Cpu { threads } => {
                let cpu = CpuForward::from_gguf(gguf, config.clone(), threads, on_progress)?;
                on_progress(1.0);
                return Ok(Self { config, weights: Weights::Cpu(cpu) });
            }
            Placement::Device(device) => device,
        };
        let (d, hd, f) = (config.hidden, config.head_dim, config.ffn);
        let (qd, kd) = (config.heads * hd, config.kv_heads * hd);
        let get = |name: &str, shape: &[usize]| gguf.tensor_f32(name, shape);
        let mut layers = Vec::with_capacity(config.layers);
        for i in 0..config.layers {
            let p = |s: &str| format!("blk.{i}.{s}.weight");
            // Fused tensors (phi3) are split into the separate ones' rows.
            let [q, k, v] = match gguf.tensors.contains_key(&p("attn_qkv")) {
                true => {
                    let qkv = get(&p("attn_qkv"), &[qd + 2 * kd, d])?;
                    let (q, kv) = qkv.split_at(qd * d);
                    let (k, v) = kv.split_at(kd * d);
                    [q.to_vec(), k.to_vec(), v.to_vec()]
                }
                false => [get(&p("attn_q"), &[qd, d])?, get(&p("attn_k"), &[kd, d])?, get(&p("attn_v"), &[kd, d])?],
            };
            let qkv = [config.to_adjacent_pairs(q, qd, d), config.to_adjacent_pairs(k, kd, d), v];
            let gate_up = match gguf.tensors.contains_key(&p("ffn_gate")) {
                true => [get(&p("ffn_gate"), &[f, d])?, get(&p("ffn_up"), &[f, d])?],
                false => {
                    let both = get(&p("ffn_up"), &[2 * f, d])?;
                    let (gate, up) = both.split_at(f * d);
                    [gate.to_vec(), up.to_vec()]
                }
            };
            layers.push(LayerData {
                attn_norm: get(&p("attn_norm"), &[d])?,
                wqkv: stack_transposed(&qkv, d),
                extras: LayerExtras::from_gguf(gguf, &config, i)?,
                wo: transpose(&get(&p("attn_output"), &[d, qd])?, d, qd),
                ffn_norm: get(&p("ffn_norm"), &[d])?,
                w_gate_up: stack_transposed(&gate_up, d),
                w_down: transpose(&get(&p("ffn_down"), &[d, f])?, d, f),
            });
            on_progress((i + 1) as f64 / (config.layers + 1) as f64);
        }
        let embed = get("token_embd.weight", &[config.vocab, d])?;
        let head = match gguf.tensors.contains_key("output.weight") {
            true => Some(get("output.weight", &[config.vocab, d])?),
            false => None,
        };
        let norm = get("output_norm.weight", &[d])?;
        let weights = BurnWeights::new(&config, embed, head, layers, norm, &device);
        let model = Self::on_device(config, weights);
        on_progress(1.0);
        Ok(model)
    }

    /// A model with deterministic random weights drawn from `seed`, for tests: the same weights
    /// wherever it is placed.
    pub fn random(config: LlamaConfig, seed: u64, placement: impl Into<Placement>) -> Result<Self, ModelError> {
        config.validate()?;
        let (d, hd, f) = (config.hidden, config.head_dim, config.ffn);
        let qkv_width = (config.heads + 2 * config.kv_heads) * hd;
        let mut s = seed;
        let w = 1.0 / (d as f32).sqrt();
        let layers: Vec<LayerData> = (0..config.layers)
            .map(|_| LayerData {
                attn_norm: random_weights(&mut s, d, 0.2).iter().map(|x| 1.0 + x).collect(),
                wqkv: random_weights(&mut s, d * qkv_width, w),
                extras: LayerExtras::default(),
                wo: random_weights(&mut s, config.heads * hd * d, w),
                ffn_norm: random_weights(&mut s, d, 0.2).iter().map(|x| 1.0 + x).collect(),
                w_gate_up: random_weights(&mut s, d * 2 * f, w),
                w_down: random_weights(&mut s, f * d, 1.0 / (f as f32).sqrt()),
            })
            .collect();
        let embed = random_weights(&mut s, config.vocab * d, 0.1);
        let norm = vec![1.0; d];
        match placement.into() {
            Placement::Device(device) => {
                let weights = BurnWeights::new(&config, embed, None, layers, norm, &device);
                Ok(Self::on_device(config, weights))
            }
            Placement::Cpu { threads } => {
                let (qd, kd) = (config.heads * hd, config.kv_heads * hd);
                let rows = layers
                    .into_iter()
                    .map(|l| {
                        let qkv = transpose(&l.wqkv, d, qkv_width);
                        let gate_up = transpose(&l.w_gate_up, d, 2 * f);
                        LayerRows {
                            attn_norm: l.attn_norm,
                            q: qkv[..qd * d].to_vec(),
                            k: qkv[qd * d..(qd + kd) * d].to_vec(),
                            v: qkv[(qd + kd) * d..].to_vec(),
                            wo: transpose(&l.wo, qd, d),
                            ffn_norm: l.ffn_norm,
                            gate: gate_up[..f * d].to_vec(),
                            up: gate_up[f * d..].to_vec(),
                            down: transpose(&l.w_down, f, d),
                        }
                    })
                    .collect();
                let cpu = CpuForward::from_rows(config.clone(), threads, embed, rows, norm)?;
                Ok(Self { config, weights: Weights::Cpu(cpu) })
            }
        }
    }

    /// The model on the device of `weights`, run by the WGSL kernels where they cover it.
    fn on_device(config: LlamaConfig, weights: BurnWeights) -> Self {
        let wgsl = WgslForward::new(&config, &weights);
        Self { config, weights: Weights::Burn(weights, wgsl) }
    }

    /// The model's hyper-parameters.
    pub fn config(&self) -> &LlamaConfig {
        &self.config
    }

    /// The burn device holding the weights (none on the CPU path).
    pub fn device(&self) -> Option<&Device> {
        match &self.weights {
            Weights::Burn(w, _) => Some(&w.device),
            Weights::Cpu(_) => None,
        }
    }

    /// On the CPU path: from now on this worker computes part 0 of every product's rows and
    /// `helpers` the others (workers holding [`Llama::shard`]s of the same model). An error
    /// elsewhere.
    pub fn set_helpers(&mut self, helpers: Box<dyn Helpers>) -> Result<(), ModelError> {
        match &mut self.weights {
            Weights::Cpu(cpu) => {
                cpu.set_helpers(helpers);
                Ok(())
            }
            Weights::Burn(..) => Err(ModelError::Input("helpers are for the CPU path".into())),
        }
    }

    /// On the CPU path: part `part` of `parts` of every product's rows, for a helper of a worker
    /// running the same model (see [`crate::cpu::parts`]). An error elsewhere.
    pub fn shard(&self, part: usize, parts: usize) -> Result<Shard, ModelError> {
        match &self.weights {
            Weights::Cpu(cpu) => cpu.shard(part, parts),
            Weights::Burn(..) => Err(ModelError::Input("shards are of the CPU path".into())),
        }
    }

    /// Which implementation runs the forward pass.
    pub fn backend(&self) -> Backend {
        match &self.weights {
            Weights::Burn(_, Some(_)) => Backend::Gpu,
            Weights::Burn(..) => Backend::Reference,
            Weights::Cpu(cpu) => Backend::Cpu { threads: cpu.threads() },
        }
    }

    /// Bytes the weights take where they run (f32 on a burn device, the GGUF's encoding on the
    /// CPU path).
    pub fn weight_bytes(&self) -> usize {
        match &self.weights {
            Weights::Burn(w, _) => 4 * w.values(&self.config),
            Weights::Cpu(cpu) => cpu.weight_bytes(),
        }
    }

    /// Sends the work queued on the device to it, so that it runs while the caller goes on
    /// (nothing to do on the CPU path, whose passes run when called).
    pub fn flush(&self) -> Result<(), ModelError> {
        match &self.weights {
            Weights::Burn(w, _) => w.device.flush().map_err(|e| ModelError::Backend(format!("flush: {e:?}"))),
            Weights::Cpu(_) => Ok(()),
        }
    }

    /// GPU launches the last forward pass made when the WGSL kernels run it (wgpu devices; the
    /// same for a prefill as for one token, 0 before the first pass); `None` where burn's ops or
    /// the CPU path run it.
    pub fn launches_per_pass(&self) -> Option<usize> {
        match &self.weights {
            Weights::Burn(_, Some(wgsl)) => Some(wgsl.launches()),
            _ => None,
        }
    }

    /// Runs `tokens` (one or many) after the positions in `cache`, appends their keys and values
    /// to it, and returns the logits of the last token: in memory on the CPU path, on the
    /// device elsewhere (the WGSL kernels' pass on wgpu, [`Llama::launches_per_pass`] launches;
    /// burn's ops on other devices).
    pub fn forward(&self, tokens: &[u32], cache: &mut KvCache) -> Result<Logits, ModelError> {
        let c = &self.config;
        let n = tokens.len();
        if n == 0 {
            return Err(ModelError::Input("no tokens to run".into()));
        }
        if let Some(&bad) = tokens.iter().find(|&&t| t as usize >= c.vocab) {
            return Err(ModelError::Input(format!("token id {bad} is past the vocabulary ({})", c.vocab)));
        }
        let start = cache.len;
        if start + n > c.max_seq {
            return Err(ModelError::Input(format!("{} positions exceed the context of {}", start + n, c.max_seq)));
        }
        let mismatch = || ModelError::Input("KV cache belongs to a different model".into());
        let (weights, layers) = match (&mut cache.store, &self.weights) {
            (CacheStore::Cpu(store), Weights::Cpu(cpu)) if store.layers() == c.layers => {
                let logits = cpu.forward(tokens, start, store)?;
                cache.len = start + n;
                return Ok(Logits::Host(logits));
            }
            (CacheStore::Gpu(gpu), Weights::Burn(_, Some(wgsl))) if gpu.layers() == c.layers => {
                let logits = wgsl.forward(tokens, start, gpu)?;
                cache.len = start + n;
                return Ok(Logits::Device(logits));
            }
            (CacheStore::Tensors(layers), Weights::Burn(w, None)) if layers.len() == c.layers => (w, layers),
            _ => return Err(mismatch()),
        };
        let logits = weights.forward(c, tokens, start, layers);
        cache.len = start + n;
        Ok(Logits::Device(logits))
    }
}

