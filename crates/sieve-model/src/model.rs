//! Decoders of Llama's shape ([`crate::config::Architecture`]: llama, qwen2, qwen3, phi3,
//! gemma3), on the CPU or on any burn device.
//!
//! Pre-norm decoder blocks (RMSNorm, grouped-query attention with interleaved RoPE, SiLU-gated
//! MLP), a final RMSNorm and an output head (tied to the token embedding where the file has no
//! `output.weight`); qwen2 adds biases to Q, K and V, qwen3 normalizes each head of the queries
//! and keys before RoPE, phi3 fuses tensors, gemma3 adds output norms, a GELU gate and
//! sliding-window layers (see `Architecture`). [`Llama::forward`] runs
//! any number of new tokens in one pass against a [`KvCache`] and returns the logits of the last
//! one, so a prompt or a forced continuation is prefilled in one call. Three implementations
//! run it ([`Backend`]): the CPU kernels ([`crate::cpu`]) on the GGUF's own blocks, the WGSL
//! kernels on a wgpu device, and burn's ops on any other device, the reference.
//!
//! # Weight layout
//!
//! Every path reads a layer through [`crate::cpu::Layer::from_gguf`]. The CPU path keeps each
//! tensor as the GGUF has it; the WGSL path uploads it in a GPU form (shaders/weights.wgsl); on
//! another burn device projections are kept as `[in, out]` f32 matrices so that `x.matmul(w)`
//! applies them, Q, K and V fused into one matrix, gate and up into another.
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

use std::slice::from_ref;

use burn::tensor::{Device, Tensor};

use crate::burn_forward::{BurnWeights, LayerData};
pub use crate::config::LlamaConfig;
use crate::cpu::parts::{Helpers, Shard, part_of};
use crate::cpu::matrix::Matrix;
use crate::cpu::{CpuCache, CpuForward, Layer, LayerRows, shard_of};
use crate::error::ModelError;
use crate::gguf::Gguf;
use crate::load::Part;
use crate::wgsl_forward::{GpuCache, WgslForward, WgslUpload};

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
    /// Tensors on a burn device that the WGSL kernels do not cover: burn's ops.
    Burn(BurnWeights),
    /// The WGSL kernels' buffers on a wgpu device.
    Wgsl(WgslForward),
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
            Weights::Wgsl(wgsl) => CacheStore::Gpu(wgsl.new_cache()),
            Weights::Burn(_) => CacheStore::Tensors((0..model.config.layers).map(|_| None).collect()),
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

/// A model's weights put where a [`Placement`] says as each part arrives, in any order: the
/// token embedding, the output head (where it is not the embedding), the final norm and each
/// layer. The WGSL path uploads each part at once, so that the device's copy is the only whole
/// one; the CPU path keeps them; burn's ops take them at the end.
pub(crate) struct Assembler {
    config: LlamaConfig,
    target: Target,
    embed: Option<Matrix>,
    head: Option<Matrix>,
    norm: Option<Vec<f32>>,
    layers: Vec<Option<Layer>>,
    /// Layers placed so far.
    placed: usize,
}

enum Target {
    /// The CPU path, keeping part `part` of `parts` of every product's rows (see
    /// [`crate::cpu::parts`]).
    Cpu { threads: usize, part: usize, parts: usize },
    Wgsl(Box<WgslUpload>),
    Burn(Device),
}

impl Assembler {
    /// An assembler of a model of `config` (validated) on `placement`.
    pub(crate) fn new(config: LlamaConfig, placement: Placement) -> Result<Self, ModelError> {
        config.validate()?;
        let target = match placement {
            Placement::Cpu { threads } => Target::Cpu { threads, part: 0, parts: 1 },
            Placement::Device(device) => match WgslUpload::start(&config, &device) {
                Some(upload) => Target::Wgsl(Box::new(upload?)),
                None => Target::Burn(device),
            },
        };
        let layers = (0..config.layers).map(|_| None).collect();
        Ok(Self { config, target, embed: None, head: None, norm: None, layers, placed: 0 })
    }

    /// The model's hyper-parameters.
    pub(crate) fn config(&self) -> &LlamaConfig {
        &self.config
    }

    /// On the CPU path, keeps only part `part` of `parts` of every product's rows as they are
    /// placed (before any is); an error on another path.
    pub(crate) fn keep_part(&mut self, part: usize, parts: usize) -> Result<(), ModelError> {
        match &mut self.target {
            Target::Cpu { part: p, parts: n, .. } if part < parts && self.placed == 0 => {
                (*p, *n) = (part, parts);
                Ok(())
            }
            Target::Cpu { .. } => Err(ModelError::Input(format!("part {part} of {parts}"))),
            _ => Err(ModelError::Input("parts of a model's rows are for the CPU path".into())),
        }
    }

    /// The token embedding, `[V, D]`. A helper's part (past part 0) keeps its rows of it as the
    /// head, and only where it is the head too (the file has no `output.weight`).
    pub(crate) fn embed(&mut self, embed: Matrix) -> Result<(), ModelError> {
        match &mut self.target {
            Target::Wgsl(upload) => upload.embed(&embed)?,
            Target::Cpu { part, parts, .. } if *part > 0 => {
                if self.head.is_none() {
                    self.head = Some(part_of(from_ref(&embed), *part, *parts).remove(0));
                }
            }
            _ => self.embed = Some(embed),
        }
        Ok(())
    }

    /// The output head, `[V, D]`, where the model has one of its own.
    pub(crate) fn head(&mut self, head: Matrix) -> Result<(), ModelError> {
        match &mut self.target {
            Target::Wgsl(upload) => upload.head(&head)?,
            Target::Cpu { part, parts, .. } => self.head = Some(part_of(from_ref(&head), *part, *parts).remove(0)),
            Target::Burn(_) => self.head = Some(head),
        }
        Ok(())
    }

    /// The final norm's weights, `[D]`.
    pub(crate) fn norm(&mut self, norm: Vec<f32>) {
        self.norm = Some(norm);
    }

    /// Layer `i`.
    pub(crate) fn layer(&mut self, i: usize, mut layer: Layer) -> Result<(), ModelError> {
        match &mut self.target {
            Target::Wgsl(upload) => upload.layer(i, &layer)?,
            Target::Cpu { part, parts, .. } => {
                if *parts > 1 {
                    layer.keep_part(*part, *parts);
                }
                self.layers[i] = Some(layer);
            }
            Target::Burn(_) => self.layers[i] = Some(layer),
        }
        self.placed += 1;
        Ok(())
    }

    /// The fraction of the layers placed so far.
    pub(crate) fn fraction(&self) -> f64 {
        self.placed as f64 / (self.config.layers + 1) as f64
    }

    /// The model, once every part is placed (the head only where the model has one); on the
    /// CPU path, the one that holds part 0 of the rows.
    pub(crate) fn finish(self) -> Result<Llama, ModelError> {
        let missing = |what: &str| ModelError::Tensor { name: what.into(), message: "missing".into() };
        let norm = self.norm.ok_or_else(|| missing("output_norm.weight"))?;
        if self.placed < self.config.layers {
            return Err(missing(&format!("blk.{}", self.placed)));
        }
        let weights = match self.target {
            Target::Wgsl(upload) => Weights::Wgsl(upload.finish(&norm)?),
            Target::Cpu { part, parts, .. } if part > 0 => {
                return Err(ModelError::Input(format!("part {part} of {parts} of the rows makes a shard, not a model")));
            }
            Target::Cpu { threads, parts, .. } => {
                let embed = self.embed.ok_or_else(|| missing("token_embd.weight"))?;
                let layers = self.layers.into_iter().flatten().collect();
                Weights::Cpu(CpuForward::new(self.config.clone(), threads, embed, self.head, layers, norm, parts)?)
            }
            Target::Burn(device) => {
                let embed = self.embed.ok_or_else(|| missing("token_embd.weight"))?;
                let (d, f) = (self.config.hidden, self.config.ffn);
                let layers = self
                    .layers
                    .into_iter()
                    .flatten()
                    .map(|l| {
                        let [q, k, v] = &l.qkv;
                        let [gate, up] = &l.gate_up;
                        LayerData {
                            wqkv: stack_transposed(&[dense(q), dense(k), dense(v)], d),
                            wo: transpose(&dense(&l.wo), d, l.wo.cols()),
                            w_gate_up: stack_transposed(&[dense(gate), dense(up)], d),
                            w_down: transpose(&dense(&l.down), d, f),
                            attn_norm: l.attn_norm,
                            extras: l.extras,
                            ffn_norm: l.ffn_norm,
                        }
                    })
                    .collect();
                Weights::Burn(BurnWeights::new(&self.config, dense(&embed), self.head.as_ref().map(dense), layers, norm, &device))
            }
        };
        Ok(Llama { config: self.config, weights })
    }

    /// A helper's shard, once every layer and the head are placed: part `part` (past 0) of the
    /// rows ([`Assembler::keep_part`]).
    pub(crate) fn finish_shard(self) -> Result<Shard, ModelError> {
        let missing = |what: &str| ModelError::Tensor { name: what.into(), message: "missing".into() };
        let Target::Cpu { part, parts, .. } = self.target else {
            return Err(ModelError::Input("shards are of the CPU path".into()));
        };
        if part == 0 {
            return Err(ModelError::Input("part 0 of the rows makes the model, not a shard".into()));
        }
        if self.placed < self.config.layers {
            return Err(missing(&format!("blk.{}", self.placed)));
        }
        let head = self.head.ok_or_else(|| missing("output.weight"))?;
        Ok(shard_of(&self.config, part, parts, self.layers.into_iter().flatten().collect(), head))
    }
}

/// A matrix's values as f32, row-major.
fn dense(m: &Matrix) -> Vec<f32> {
    let mut out = vec![0.0; m.rows() * m.cols()];
    for (r, row) in out.chunks_exact_mut(m.cols()).enumerate() {
        m.row_into(r, row);
    }
    out
}

impl Llama {
    /// Loads the weights of a GGUF where `placement` says: kept in their encoding for the CPU
    /// path, uploaded for the WGSL kernels on a wgpu device (quantized matrices as runs of 4-,
    /// 6- or 8-bit values, F16 and BF16 ones 16-bit, see shaders/weights.wgsl), dequantized to
    /// f32 burn tensors on another device. (A file that arrives in pieces loads with
    /// [`crate::ModelLoader`].)
    pub fn from_gguf(gguf: &Gguf<'_>, config: LlamaConfig, placement: impl Into<Placement>) -> Result<Self, ModelError> {
        let mut assembler = Assembler::new(config, placement.into())?;
        for part in Part::all(gguf, assembler.config.layers) {
            part.place(gguf, &mut assembler)?;
        }
        assembler.finish()
    }

    /// A model with deterministic random weights drawn from `seed`, for tests: the same weights
    /// wherever it is placed.
    pub fn random(config: LlamaConfig, seed: u64, placement: impl Into<Placement>) -> Result<Self, ModelError> {
        config.validate()?;
        let (d, hd, f) = (config.hidden, config.head_dim, config.ffn);
        let (qd, kd) = (config.heads * hd, config.kv_heads * hd);
        let mut s = seed;
        let w = 1.0 / (d as f32).sqrt();
        let qkv_width = qd + 2 * kd;
        // Drawn input-major (`[in, out]`), the layout of burn's tensors, then turned into rows.
        let layers: Vec<LayerRows> = (0..config.layers)
            .map(|_| {
                let attn_norm = random_weights(&mut s, d, 0.2).iter().map(|x| 1.0 + x).collect();
                let qkv = transpose(&random_weights(&mut s, d * qkv_width, w), d, qkv_width);
                let wo = transpose(&random_weights(&mut s, qd * d, w), qd, d);
                let ffn_norm = random_weights(&mut s, d, 0.2).iter().map(|x| 1.0 + x).collect();
                let gate_up = transpose(&random_weights(&mut s, d * 2 * f, w), d, 2 * f);
                let down = transpose(&random_weights(&mut s, f * d, 1.0 / (f as f32).sqrt()), f, d);
                LayerRows {
                    attn_norm,
                    q: qkv[..qd * d].to_vec(),
                    k: qkv[qd * d..(qd + kd) * d].to_vec(),
                    v: qkv[(qd + kd) * d..].to_vec(),
                    wo,
                    ffn_norm,
                    gate: gate_up[..f * d].to_vec(),
                    up: gate_up[f * d..].to_vec(),
                    down,
                }
            })
            .collect();
        let embed = Matrix::from_f32(config.vocab, d, random_weights(&mut s, config.vocab * d, 0.1));
        let norm = vec![1.0; d];
        let mut assembler = Assembler::new(config, placement.into())?;
        assembler.embed(embed)?;
        assembler.norm(norm);
        for (i, rows) in layers.into_iter().enumerate() {
            let layer = Layer::from_rows(&assembler.config, rows);
            assembler.layer(i, layer)?;
        }
        assembler.finish()
    }

    /// The model's hyper-parameters.
    pub fn config(&self) -> &LlamaConfig {
        &self.config
    }

    /// The burn device holding the weights (none on the CPU path).
    pub fn device(&self) -> Option<&Device> {
        match &self.weights {
            Weights::Burn(w) => Some(&w.device),
            Weights::Wgsl(wgsl) => Some(wgsl.device()),
            Weights::Cpu(_) => None,
        }
    }

    /// On the CPU path: from now on this worker computes part 0 of every product's rows and
    /// `helpers` the others (workers holding [`Llama::shard`]s of the same model). An error
    /// elsewhere.
    pub fn set_helpers(&mut self, helpers: Box<dyn Helpers>) -> Result<(), ModelError> {
        match &mut self.weights {
            Weights::Cpu(cpu) => cpu.set_helpers(helpers),
            Weights::Burn(_) | Weights::Wgsl(_) => Err(ModelError::Input("helpers are for the CPU path".into())),
        }
    }

    /// On the CPU path: part `part` of `parts` of every product's rows, for a helper of a worker
    /// running the same model (see [`crate::cpu::parts`]). An error elsewhere.
    pub fn shard(&self, part: usize, parts: usize) -> Result<Shard, ModelError> {
        match &self.weights {
            Weights::Cpu(cpu) => cpu.shard(part, parts),
            Weights::Burn(_) | Weights::Wgsl(_) => Err(ModelError::Input("shards are of the CPU path".into())),
        }
    }

    /// Which implementation runs the forward pass.
    pub fn backend(&self) -> Backend {
        match &self.weights {
            Weights::Wgsl(_) => Backend::Gpu,
            Weights::Burn(_) => Backend::Reference,
            Weights::Cpu(cpu) => Backend::Cpu { threads: cpu.threads() },
        }
    }

    /// Bytes the weights take where they run: the GGUF's encoding on the CPU path; on a wgpu
    /// device 1 byte per weight of a 4-bit matrix, 1.5 of another quantized one and 4 of a
    /// float one; f32 tensors on other burn devices.
    pub fn weight_bytes(&self) -> usize {
        match &self.weights {
            Weights::Burn(w) => 4 * w.values(&self.config),
            Weights::Wgsl(wgsl) => wgsl.weight_bytes(),
            Weights::Cpu(cpu) => cpu.weight_bytes(),
        }
    }

    /// Sends the work queued on the device to it, so that it runs while the caller goes on
    /// (nothing to do on the CPU path, whose passes run when called).
    pub fn flush(&self) -> Result<(), ModelError> {
        match &self.weights {
            Weights::Burn(w) => w.device.flush().map_err(|e| ModelError::Backend(format!("flush: {e:?}"))),
            Weights::Wgsl(wgsl) => wgsl.device().flush().map_err(|e| ModelError::Backend(format!("flush: {e:?}"))),
            Weights::Cpu(_) => Ok(()),
        }
    }

    /// GPU launches the last forward pass made when the WGSL kernels run it (wgpu devices; the
    /// same for a prefill as for one token, 0 before the first pass); `None` where burn's ops or
    /// the CPU path run it.
    pub fn launches_per_pass(&self) -> Option<usize> {
        match &self.weights {
            Weights::Wgsl(wgsl) => Some(wgsl.launches()),
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
            (CacheStore::Gpu(gpu), Weights::Wgsl(wgsl)) if gpu.layers() == c.layers => {
                let logits = wgsl.forward(tokens, start, gpu)?;
                cache.len = start + n;
                return Ok(Logits::Device(logits));
            }
            (CacheStore::Tensors(layers), Weights::Burn(w)) if layers.len() == c.layers => (w, layers),
            _ => return Err(mismatch()),
        };
        let logits = weights.forward(c, tokens, start, layers);
        cache.len = start + n;
        Ok(Logits::Device(logits))
    }
}

