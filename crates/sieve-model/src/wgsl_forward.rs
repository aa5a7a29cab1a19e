//! The forward pass as hand-written WGSL kernels, on wgpu devices.
//!
//! Built from burn's generic ops, a decoder layer is about fifty launches (each element-wise
//! step of RMSNorm, RoPE, softmax and SiLU is its own kernel, the KV cache is re-concatenated
//! every step) and a general matmul that is slow for one row. Where launches are expensive
//! (WebGPU in a browser, above all on a software adapter) that dominates a decode step. Here a
//! layer is five launches over the model's own weight buffers:
//!
//! 1. `qkv_rope`: RMSNorm, the fused Q/K/V projection (and its bias) and RoPE; keys and values
//!    go straight into a preallocated cache (in f16, two to a word), so truncating the cache
//!    only moves its length.
//!    Where the architecture normalises each head of the queries and keys (qwen3, gemma3),
//!    `qk_norm_rope` does that and RoPE as a sixth launch.
//! 2. `attention`: causal grouped-query attention with an online softmax, a workgroup per row
//!    and head, its invocations splitting the positions (the window's, on layers with a
//!    sliding window); where rows and heads are too few workgroups to fill a GPU (a decode
//!    step), the positions are split over workgroups too and `attention_merge` combines them.
//! 3. `linear_residual`: the output projection added to the residual stream.
//! 4. `swiglu`: RMSNorm, the fused gate/up projection and `silu(gate) * up`.
//! 5. `linear_residual`: the down projection added to the residual stream.
//!
//! Where the architecture normalises the attention's and the feed-forward's outputs (gemma3),
//! 3 and 5 store their projections and `norm_add` adds them normalised, two more launches.
//! plus one embedding lookup and one final norm with the output head per pass. In a prefill an
//! invocation of a projection computes four output columns for eight rows; in a decode step,
//! whose one row alone would leave a GPU nearly idle, sixteen invocations share each group of
//! four columns (see `shaders/projection.wgsl`).
//! [`crate::model::Llama::forward`] runs this path on wgpu devices and burn's ops elsewhere;
//! tests hold the two to each other.

use burn::backend::Wgpu;
use burn::backend::wgpu::CubeTensor;
use burn::cubecl::CubeCount;
use burn::cubecl::bytes::Bytes;
use burn::cubecl::client::Client;
use burn::cubecl::server::Handle;
use burn::cubecl::server::BufferBinding;
use burn::tensor::{DType, Device, Shape, Tensor};
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::error::ModelError;
use crate::gguf::TensorType;
use crate::kernels::{WeightForm, Wgsl};
use crate::cpu::Layer;
use crate::cpu::matrix::Matrix;
use crate::config::{LlamaConfig, rope_tables};

/// Invocations per workgroup of every kernel here.
const WG: u32 = 64;
/// Widest head the attention kernel holds (`4 * MAX_QUADS` in attention.wgsl, at most
/// `4 * WG`: an invocation owns a quad of the output).
const MAX_HEAD_DIM: usize = 256;
/// Rows per invocation of the projections in a prefill (a decode step uses one).
const PREFILL_ROWS: u32 = 8;
/// Invocations sharing each output column's sum in a decode step's projections (a prefill's
/// rows give the GPU enough invocations without): a single row's columns alone are a few
/// hundred invocations, too few to fill a GPU.
const STEP_SLICES: u32 = 16;

fn shader(name: &'static str, source: &'static str, rows: u32, slices: u32, weights: WeightForm) -> Wgsl {
    Wgsl { name, source, workgroup_size: WG, rows, slices, weights }
}

fn qkv_rope(rows: u32, slices: u32, weights: WeightForm) -> Wgsl {
    let source = concat!(
        include_str!("../shaders/projection.wgsl"),
        include_str!("../shaders/weights.wgsl"),
        include_str!("../shaders/norms.wgsl"),
        include_str!("../shaders/qkv_rope.wgsl")
    );
    shader("qkv_rope.wgsl", source, rows, slices, weights)
}

fn swiglu(rows: u32, slices: u32, weights: WeightForm) -> Wgsl {
    let source = concat!(
        include_str!("../shaders/projection.wgsl"),
        include_str!("../shaders/weights.wgsl"),
        include_str!("../shaders/norms.wgsl"),
        include_str!("../shaders/swiglu.wgsl")
    );
    shader("swiglu.wgsl", source, rows, slices, weights)
}

fn linear_residual(rows: u32, slices: u32, weights: WeightForm) -> Wgsl {
    let source = concat!(include_str!("../shaders/projection.wgsl"), include_str!("../shaders/weights.wgsl"), include_str!("../shaders/linear_residual.wgsl"));
    shader("linear_residual.wgsl", source, rows, slices, weights)
}

fn embed(weights: WeightForm) -> Wgsl {
    shader("embed.wgsl", concat!(include_str!("../shaders/weights.wgsl"), include_str!("../shaders/embed.wgsl")), 1, 1, weights)
}

fn lm_head(weights: WeightForm) -> Wgsl {
    shader("lm_head.wgsl", concat!(include_str!("../shaders/weights.wgsl"), include_str!("../shaders/lm_head.wgsl")), 1, 1, weights)
}

const ATTENTION: Wgsl = shader_const("attention.wgsl", include_str!("../shaders/attention.wgsl"));
const ATTENTION_MERGE: Wgsl = shader_const("attention_merge.wgsl", include_str!("../shaders/attention_merge.wgsl"));
const NORM_ADD: Wgsl = shader_const("norm_add.wgsl", concat!(include_str!("../shaders/sum.wgsl"), include_str!("../shaders/norm_add.wgsl")));
const QK_NORM_ROPE: Wgsl =
    shader_const("qk_norm_rope.wgsl", concat!(include_str!("../shaders/sum.wgsl"), include_str!("../shaders/qk_norm_rope.wgsl")));

const fn shader_const(name: &'static str, source: &'static str) -> Wgsl {
    Wgsl { name, source, workgroup_size: WG, rows: 1, slices: 1, weights: WeightForm::F32 }
}

/// A weight matrix `[N outputs, K inputs]` in one of the forms of shaders/weights.wgsl.
struct GpuMatrix {
    buffer: Handle,
    form: WeightForm,
    bytes: usize,
    /// Outputs (N).
    rows: u32,
}

impl GpuMatrix {
    /// Rows `range` of `parts` (`[rows_i, K]` each) stacked on their rows, uploaded in their
    /// form ([`GpuMatrix::form`]). An error when the matrix is larger than the device binds in
    /// one buffer (`max_bytes`).
    fn upload(client: &Client, parts: &[&Matrix], range: Range<usize>, max_bytes: u64, what: &str) -> Result<Self, ModelError> {
        let k = parts[0].cols();
        let n = range.len();
        let quads = n / 4;
        let form = Self::form(parts);
        let run = form.run() as usize;
        let bytes = quads * Self::quad_bytes(form, k);
        if bytes as u64 > max_bytes {
            return Err(too_large(what, bytes, max_bytes));
        }
        let rows = parts.iter().flat_map(|m| (0..m.rows()).map(move |r| (*m, r))).skip(range.start).take(n);
        // Whole vec4s (the 16-bit forms' may end on half of one).
        let mut words = vec![0u32; bytes.div_ceil(16) * 4];
        match form {
            WeightForm::F32 | WeightForm::F16 | WeightForm::Bf16 => {
                let mut row = vec![0.0; k];
                for (col, (m, r)) in rows.enumerate() {
                    m.row_into(r, &mut row);
                    for (i, &v) in row.iter().enumerate() {
                        let at = i * n + col;
                        // The 16-bit forms hold the file's own bits: the f32 values came from them.
                        match form {
                            WeightForm::F16 => words[at / 2] |= u32::from(half::f16::from_f32(v).to_bits()) << (16 * (at % 2)),
                            WeightForm::Bf16 => words[at / 2] |= (v.to_bits() >> 16) << (16 * (at % 2)),
                            _ => words[at] = v.to_bits(),
                        }
                    }
                }
            }
            WeightForm::Quantized { bits, minimum, .. } => {
                let cells = k / run * quads;
                // Words of a cell's values (a run of inputs of a column quad), after the cells'
                // scales (and minimums).
                let value_words = run * bits as usize / 8;
                let values = if minimum { 8 } else { 4 } * cells;
                let zero = 1i32 << (bits - 1);
                let mut runs: Vec<(f32, f32, [i8; 16])> = Vec::with_capacity(k / 16);
                for (col, (m, r)) in rows.enumerate() {
                    let (quad, lane) = (col / 4, col % 4);
                    runs.clear();
                    m.row_int8_blocks(r, |scale, min, q| runs.push((scale, min, *q)));
                    for (c, cell_runs) in runs.chunks_exact(run / 16).enumerate() {
                        let cell = c * quads + quad;
                        let (scale, min, _) = cell_runs[0];
                        // Signed values are moved up by 2^(bits - 1) and the minimum takes the
                        // shift (without one, the shader's minimum is that shift).
                        let shift = !minimum || cell_runs.iter().any(|(_, _, q)| q.iter().any(|&q| q < 0));
                        let shift = if shift { zero } else { 0 };
                        words[cell * 4 + lane] = scale.to_bits();
                        if minimum {
                            words[(cells + cell) * 4 + lane] = (min - shift as f32 * scale).to_bits();
                        }
                        let base = values + cell * value_words;
                        let lane = 8 * lane;
                        for (j, &q) in cell_runs.iter().flat_map(|(_, _, q)| q).enumerate() {
                            let u = (i32::from(q) + shift) as u32;
                            if bits == 8 {
                                // Word j holds input j of the four columns, a byte each.
                                words[base + j] |= u << lane;
                                continue;
                            }
                            // Word j / 2 holds the low nibbles of inputs j and j + 1 of the four
                            // columns, a byte each, the first in the low nibble; for 6 bits,
                            // word RUN / 2 + j / 4 their top two bits, two bits an input.
                            words[base + j / 2] |= (u & 0x0f) << (lane + 4 * (j % 2));
                            if bits == 6 {
                                words[base + run / 2 + j / 4] |= (u >> 4) << (lane + 2 * (j % 4));
                            }
                        }
                    }
                }
            }
        }
        let bytes = words.len() * 4;
        // Handed over as it is: a copy of a large table would double what the upload holds.
        let buffer = client.create(Bytes::from_elems(words));
        Ok(Self { buffer, form, bytes, rows: n as u32 })
    }

    /// The form of `parts` stacked: F16 or BF16 where every part is; where every part is of a
    /// quantized type, runs of 32 or 16 values (the longest run over which every part's rows
    /// share their scales and that divides K) of as many bits as the widest part's, with
    /// minimums unless every part's values are centred on zero; f32 otherwise.
    fn form(parts: &[&Matrix]) -> WeightForm {
        let k = parts[0].cols();
        for (ty, form) in [(TensorType::F16, WeightForm::F16), (TensorType::BF16, WeightForm::Bf16)] {
            if parts.iter().all(|m| m.tensor_type() == ty) {
                return form;
            }
        }
        let shared: Option<Vec<usize>> = parts.iter().map(|m| m.scale_run()).collect();
        let run = shared.and_then(|shared| [32, 16].into_iter().find(|&run| k.is_multiple_of(run) && shared.iter().all(|s| s.is_multiple_of(run))));
        let bits: Option<Vec<u32>> = parts.iter().map(|m| m.tensor_type().value_bits()).collect();
        match (run, bits) {
            (Some(run), Some(bits)) => WeightForm::Quantized {
                run: run as u32,
                bits: bits.into_iter().max().unwrap_or(8),
                minimum: !parts.iter().all(|m| m.tensor_type().centred()),
            },
            _ => WeightForm::F32,
        }
    }

    /// Bytes of one column quad (four outputs) of `k` inputs in `form`.
    fn quad_bytes(form: WeightForm, k: usize) -> usize {
        let run = form.run() as usize;
        match form {
            WeightForm::F32 => 16 * k,
            WeightForm::F16 | WeightForm::Bf16 => 8 * k,
            WeightForm::Quantized { bits, minimum, .. } => k / run * (if minimum { 32 } else { 16 } + run * bits as usize / 2),
        }
    }
}

/// A `[V, D]` table (the token embedding, the output head) as blocks of consecutive rows, each
/// in a buffer no larger than the device binds: a large vocabulary's table exceeds one binding
/// (WebGPU's default limit is 128 MiB, lavapipe's too). The lookup and the head launch once per
/// block.
struct RowBlocks {
    /// Each block's first row and its rows.
    blocks: Vec<(usize, GpuMatrix)>,
}

impl RowBlocks {
    fn upload(client: &Client, table: &Matrix, max_bytes: u64, what: &str) -> Result<Self, ModelError> {
        let quad_bytes = GpuMatrix::quad_bytes(GpuMatrix::form(&[table]), table.cols());
        // Whole column quads a block.
        let block_rows = 4 * (usize::try_from(max_bytes).unwrap_or(usize::MAX) / quad_bytes.max(1));
        if block_rows == 0 {
            return Err(too_large(what, quad_bytes, max_bytes));
        }
        let blocks = (0..table.rows())
            .step_by(block_rows)
            .map(|first| {
                let rows = first..(first + block_rows).min(table.rows());
                Ok((first, GpuMatrix::upload(client, &[table], rows, max_bytes, what)?))
            })
            .collect::<Result<_, ModelError>>()?;
        Ok(Self { blocks })
    }

    fn bytes(&self) -> usize {
        self.blocks.iter().map(|(_, m)| m.bytes).sum()
    }
}

/// The error for a buffer the device cannot bind.
fn too_large(what: &str, bytes: usize, max_bytes: u64) -> ModelError {
    ModelError::Backend(format!(
        "{what} takes {} MB in one GPU buffer; this device binds at most {} MB: run the model on the CPU",
        bytes.div_ceil(1 << 20),
        max_bytes / (1 << 20)
    ))
}

/// The weight buffers of one decoder layer.
struct LayerBuffers {
    attn_norm: Handle,
    wqkv: GpuMatrix,
    /// `[(H + 2 Hkv) hd]`, zeros where the architecture has no bias.
    qkv_bias: Handle,
    /// The queries' and keys' per-head norm weights, where the architecture has them.
    qk_norm: Option<[Handle; 2]>,
    /// The weights of the norms on the attention's and the feed-forward's outputs, where the
    /// architecture has them.
    post_norms: Option<[Handle; 2]>,
    wo: GpuMatrix,
    ffn_norm: Handle,
    w_gate_up: GpuMatrix,
    w_down: GpuMatrix,
}

/// The model's weights as raw buffers on one wgpu device, and the kernels' fixed shapes.
pub(crate) struct WgslForward {
    client: Client,
    device: burn::cubecl::Device,
    /// The burn device the logits are returned on.
    burn_device: Device,
    config: LlamaConfig,
    embed: RowBlocks,
    /// The output head, where it is not the embedding.
    head: Option<RowBlocks>,
    norm: Handle,
    /// Cosines and sines of each of the config's ropes.
    ropes: Vec<(Handle, Handle)>,
    layers: Vec<LayerBuffers>,
    /// Launches of the last pass.
    launches: AtomicUsize,
    /// Bytes of the weight buffers.
    weight_bytes: usize,
}

/// Bytes of a cached key or value component: f16, two to a word (WGSL's `pack2x16float`, which
/// every adapter has; the arithmetic stays f32).
const KV_BYTES: usize = 2;

/// Per-layer key and value buffers for the whole context (`[Hkv, max_seq, hd]` f16 each),
/// allocated once.
pub(crate) struct GpuCache {
    layers: Vec<(Handle, Handle)>,
}

impl GpuCache {
    pub(crate) fn layers(&self) -> usize {
        self.layers.len()
    }
}

/// The wgpu client and device behind a burn device, or `None` for another kind of device.
fn wgpu_client(device: &Device) -> Option<(Client, burn::cubecl::Device)> {
    let probe = Tensor::<1>::zeros([1], device);
    let primitive: CubeTensor = probe.try_into_primitive::<Wgpu>().ok()?;
    Some((primitive.client, primitive.device))
}

fn bytes(values: &[u32]) -> &[u8] {
    bytemuck::cast_slice(values)
}

fn floats(client: &Client, values: &[f32]) -> Handle {
    client.create_from_slice(bytemuck::cast_slice(values))
}

/// The WGSL path's weights as they are uploaded, a part at a time and in any order (the
/// model's assembler places each part as it becomes whole), then [`WgslUpload::finish`]ed into
/// the pass.
pub(crate) struct WgslUpload {
    config: LlamaConfig,
    client: Client,
    device: burn::cubecl::Device,
    burn_device: Device,
    /// The largest buffer the device binds.
    max_bytes: u64,
    embed: Option<RowBlocks>,
    head: Option<RowBlocks>,
    layers: Vec<Option<LayerBuffers>>,
    /// Q/K/V biases of an architecture without them.
    zeros: Handle,
    /// Bytes of the buffers uploaded, as they are.
    weight_bytes: usize,
}

impl WgslUpload {
    /// An upload to `device` when it is a wgpu device and the kernels cover `config`; `None`
    /// elsewhere. An error where a layer's keys for the context are beyond one binding.
    pub(crate) fn start(config: &LlamaConfig, device: &Device) -> Option<Result<Self, ModelError>> {
        if !WgslForward::covers(config) {
            return None;
        }
        let (client, wgpu) = wgpu_client(device)?;
        let max_bytes = client.properties().memory.max_page_size;
        let c = config;
        let cache_bytes = KV_BYTES * c.kv_heads * c.max_seq * c.head_dim;
        if cache_bytes as u64 > max_bytes {
            return Some(Err(too_large("a layer's keys for this context", cache_bytes, max_bytes)));
        }
        let zeros = floats(&client, &vec![0.0; (c.heads + 2 * c.kv_heads) * c.head_dim]);
        Some(Ok(Self {
            config: c.clone(),
            client,
            device: wgpu,
            burn_device: device.clone(),
            max_bytes,
            embed: None,
            head: None,
            layers: (0..c.layers).map(|_| None).collect(),
            zeros,
            weight_bytes: 0,
        }))
    }

    fn matrix(&mut self, parts: &[&Matrix], what: &str) -> Result<GpuMatrix, ModelError> {
        let rows = 0..parts.iter().map(|m| m.rows()).sum();
        let m = GpuMatrix::upload(&self.client, parts, rows, self.max_bytes, what)?;
        self.weight_bytes += m.bytes;
        Ok(m)
    }

    fn vector(&mut self, values: &[f32]) -> Handle {
        self.weight_bytes += 4 * values.len();
        floats(&self.client, values)
    }

    fn table(&mut self, table: &Matrix, what: &str) -> Result<RowBlocks, ModelError> {
        let blocks = RowBlocks::upload(&self.client, table, self.max_bytes, what)?;
        self.weight_bytes += blocks.bytes();
        Ok(blocks)
    }

    /// Uploads the token embedding (`[V, D]`).
    pub(crate) fn embed(&mut self, embed: &Matrix) -> Result<(), ModelError> {
        self.embed = Some(self.table(embed, "the token embedding")?);
        Ok(())
    }

    /// Uploads the output head (`[V, D]`), where it is not the embedding.
    pub(crate) fn head(&mut self, head: &Matrix) -> Result<(), ModelError> {
        self.head = Some(self.table(head, "the output head")?);
        Ok(())
    }

    /// Uploads layer `i`.
    pub(crate) fn layer(&mut self, i: usize, l: &Layer) -> Result<(), ModelError> {
        let [q, k, v] = &l.qkv;
        let [gate, up] = &l.gate_up;
        let buffers = LayerBuffers {
            attn_norm: self.vector(&l.attn_norm),
            wqkv: self.matrix(&[q, k, v], "a layer's Q/K/V projection")?,
            qkv_bias: match l.extras.qkv_bias.as_deref() {
                Some(bias) => self.vector(bias),
                None => self.zeros.clone(),
            },
            qk_norm: l.extras.qk_norm.as_ref().map(|norms| norms.each_ref().map(|n| self.vector(n))),
            post_norms: l.extras.post_norms.as_ref().map(|norms| norms.each_ref().map(|n| self.vector(n))),
            wo: self.matrix(&[&l.wo], "a layer's output projection")?,
            ffn_norm: self.vector(&l.ffn_norm),
            w_gate_up: self.matrix(&[gate, up], "a layer's gate/up projection")?,
            w_down: self.matrix(&[&l.down], "a layer's down projection")?,
        };
        self.layers[i] = Some(buffers);
        Ok(())
    }

    /// The pass, with the final norm's weights `norm`; the embedding and every layer must have
    /// been uploaded.
    pub(crate) fn finish(mut self, norm: &[f32]) -> Result<WgslForward, ModelError> {
        let missing = |what: &str| ModelError::Backend(format!("{what} was not uploaded"));
        let embed = self.embed.take().ok_or_else(|| missing("the token embedding"))?;
        let layers = std::mem::take(&mut self.layers).into_iter().collect::<Option<Vec<_>>>().ok_or_else(|| missing("a layer"))?;
        let norm = self.vector(norm);
        let c = &self.config;
        let ropes = c
            .ropes()
            .into_iter()
            .map(|rope| {
                let (cos, sin) = rope_tables(c, rope);
                (floats(&self.client, &cos), floats(&self.client, &sin))
            })
            .collect();
        Ok(WgslForward {
            norm,
            ropes,
            embed,
            head: self.head,
            layers,
            client: self.client,
            device: self.device,
            burn_device: self.burn_device,
            config: self.config,
            launches: AtomicUsize::new(0),
            weight_bytes: self.weight_bytes,
        })
    }
}

impl WgslForward {
    /// Whether the kernels cover a model of this shape: widths multiples of 4 (a column quad),
    /// a head no wider than [`MAX_HEAD_DIM`], a context the attention's dispatch takes, and
    /// every index into the largest buffers (head, gate/up weights, a whole-context prefill)
    /// within a u32.
    pub(crate) fn covers(c: &LlamaConfig) -> bool {
        let hd = c.head_dim;
        let quads = [c.hidden, c.ffn, hd, c.vocab].iter().all(|v| v.is_multiple_of(4));
        let sizes = [(c.vocab, c.hidden), (c.hidden, 2 * c.ffn), (c.max_seq, c.ffn.max(c.hidden).max(c.heads * hd))];
        quads && hd <= MAX_HEAD_DIM && c.max_seq <= 65_535 && sizes.iter().all(|&(a, b)| a.checked_mul(b).is_some_and(|x| u32::try_from(x).is_ok()))
    }

    /// Bytes the weights take on the device.
    pub(crate) fn weight_bytes(&self) -> usize {
        self.weight_bytes
    }

    /// The burn device the pass runs on.
    pub(crate) fn device(&self) -> &Device {
        &self.burn_device
    }

    /// An empty cache: every layer's keys and values for `max_seq` positions, in f16.
    pub(crate) fn new_cache(&self) -> GpuCache {
        let c = &self.config;
        let size = c.kv_heads * c.max_seq * c.head_dim * KV_BYTES;
        GpuCache { layers: (0..c.layers).map(|_| (self.client.empty(size), self.client.empty(size))).collect() }
    }

    /// Runs `tokens` (already checked against the vocabulary and the context) at positions
    /// `start..` and returns the logits of the last one, `[1, V]`.
    pub(crate) fn forward(&self, tokens: &[u32], start: usize, cache: &GpuCache) -> Result<Tensor<2>, ModelError> {
        let c = &self.config;
        let (d, hd, f) = (c.hidden as u32, c.head_dim as u32, c.ffn as u32);
        let (h, hkv, vocab) = (c.heads as u32, c.kv_heads as u32, c.vocab as u32);
        let qkv_width = (h + 2 * hkv) * hd;
        let n = tokens.len() as u32;
        let start = start as u32;
        let eps = c.rms_eps.to_bits();
        let scale = (1.0 / (hd as f32).sqrt()).to_bits();
        let (rows, slices) = if n == 1 { (1, STEP_SLICES) } else { (PREFILL_ROWS, 1) };
        let row_groups = n.div_ceil(rows);
        let groups = |columns: u32| CubeCount::Static((columns / 4).div_ceil(WG / slices), row_groups, 1);
        let client = &self.client;
        let head = self.head.as_ref().unwrap_or(&self.embed);
        let f32s = |count: u32| client.empty(count as usize * 4);
        let params = |values: &[u32]| client.create_from_slice(bytes(values));

        let ids = client.create_from_slice(bytes(tokens));
        let x = f32s(n * d);
        let q = f32s(n * h * hd);
        let att = f32s(n * h * hd);
        let act = f32s(n * f);
        let logits = f32s(vocab);
        // What only some architectures launch is made only for them: the per-head norms' pass,
        // the windowed layers' attention, the output norms and the projections they add.
        let qk_norm = self.layers.iter().any(|l| l.qk_norm.is_some());
        let qkv_params = params(&[d, n, h, hkv, hd, start, c.max_seq as u32, eps, u32::from(!qk_norm)]);
        let qk_norm_params = qk_norm.then(|| params(&[n, h, hkv, hd, start, c.max_seq as u32, eps]));
        let post_norms = self.layers.iter().any(|l| l.post_norms.is_some());
        let projected = post_norms.then(|| f32s(n * d));
        let norm_add_params = post_norms.then(|| params(&[d, n, eps]));
        let mut launches = 0;
        let mut launch = |kernel: Wgsl, groups: CubeCount, buffers: Vec<BufferBinding>| {
            kernel.launch(client, groups, buffers);
            launches += 1;
        };
        // The attention's dispatch for rows that see `seen` positions at most: split over
        // positions where (rows, heads) alone are too few workgroups, a merge pass after it.
        let attention = |seen: u32, window: u32| {
            let (splits, span) = attention_splits(n * h, seen);
            let merge = (splits > 1).then(|| (f32s(n * h * splits * (hd / 4 + 1) * 4), params(&[n, h, hd, splits])));
            (params(&[n, h, hkv, hd, start, c.max_seq as u32, scale, window, splits, span]), splits, merge)
        };
        let global_attention = attention(start + n, 0);
        let window_attention = c.sliding_window.map(|w| attention((start + n).min(w as u32), w as u32));
        let add = u32::from(!post_norms);
        let wo_params = params(&[h * hd, d, n, add]);
        let swiglu_params = params(&[d, f, n, eps, u32::from(c.arch.gelu())]);
        let down_params = params(&[f, d, n, add]);
        let residual = projected.as_ref().unwrap_or(&x);

        let embedding_scale = c.arch.embedding_scale(c.hidden).to_bits();
        for (first, block) in &self.embed.blocks {
            launch(
                embed(block.form),
                CubeCount::Static(d.div_ceil(WG), n, 1),
                vec![block.buffer.clone().binding(), ids.clone().binding(), x.clone().binding(), params(&[d, n, embedding_scale, block.rows, *first as u32]).binding()],
            );
        }
        for (i, (layer, (k_cache, v_cache))) in self.layers.iter().zip(&cache.layers).enumerate() {
            let (cos, sin) = &self.ropes[c.rope_index(i)];
            launch(
                qkv_rope(rows, slices, layer.wqkv.form),
                groups(qkv_width),
                vec![
                    x.clone().binding(),
                    layer.attn_norm.clone().binding(),
                    layer.wqkv.buffer.clone().binding(),
                    cos.clone().binding(),
                    sin.clone().binding(),
                    q.clone().binding(),
                    k_cache.clone().binding(),
                    v_cache.clone().binding(),
                    qkv_params.clone().binding(),
                    layer.qkv_bias.clone().binding(),
                ],
            );
            if let (Some([q_norm, k_norm]), Some(qk_norm_params)) = (&layer.qk_norm, &qk_norm_params) {
                launch(
                    QK_NORM_ROPE,
                    CubeCount::Static(h + hkv, n, 1),
                    vec![
                        q.clone().binding(),
                        k_cache.clone().binding(),
                        q_norm.clone().binding(),
                        k_norm.clone().binding(),
                        cos.clone().binding(),
                        sin.clone().binding(),
                        qk_norm_params.clone().binding(),
                    ],
                );
            }
            let (attention_params, splits, merge) = c.window(i).and(window_attention.as_ref()).unwrap_or(&global_attention);
            launch(
                ATTENTION,
                CubeCount::Static(h, n, *splits),
                vec![
                    q.clone().binding(),
                    k_cache.clone().binding(),
                    v_cache.clone().binding(),
                    merge.as_ref().map_or(&att, |(parts, _)| parts).clone().binding(),
                    attention_params.clone().binding(),
                ],
            );
            if let Some((parts, merge_params)) = merge {
                launch(ATTENTION_MERGE, CubeCount::Static(h, n, 1), vec![parts.clone().binding(), att.clone().binding(), merge_params.clone().binding()]);
            }
            launch(
                linear_residual(rows, slices, layer.wo.form),
                groups(d),
                vec![att.clone().binding(), layer.wo.buffer.clone().binding(), residual.clone().binding(), wo_params.clone().binding()],
            );
            if let (Some([attn_post, _]), Some(projected), Some(norm_add_params)) = (&layer.post_norms, &projected, &norm_add_params) {
                launch(
                    NORM_ADD,
                    CubeCount::Static(n, 1, 1),
                    vec![projected.clone().binding(), attn_post.clone().binding(), x.clone().binding(), norm_add_params.clone().binding()],
                );
            }
            launch(
                swiglu(rows, slices, layer.w_gate_up.form),
                groups(f),
                vec![
                    x.clone().binding(),
                    layer.ffn_norm.clone().binding(),
                    layer.w_gate_up.buffer.clone().binding(),
                    act.clone().binding(),
                    swiglu_params.clone().binding(),
                ],
            );
            launch(
                linear_residual(rows, slices, layer.w_down.form),
                groups(d),
                vec![act.clone().binding(), layer.w_down.buffer.clone().binding(), residual.clone().binding(), down_params.clone().binding()],
            );
            if let (Some([_, ffn_post]), Some(projected), Some(norm_add_params)) = (&layer.post_norms, &projected, &norm_add_params) {
                launch(
                    NORM_ADD,
                    CubeCount::Static(n, 1, 1),
                    vec![projected.clone().binding(), ffn_post.clone().binding(), x.clone().binding(), norm_add_params.clone().binding()],
                );
            }
        }
        for (first, block) in &head.blocks {
            launch(
                lm_head(block.form),
                CubeCount::Static((block.rows / 4).div_ceil(WG), 1, 1),
                vec![
                    x.clone().binding(),
                    self.norm.clone().binding(),
                    block.buffer.clone().binding(),
                    logits.clone().binding(),
                    params(&[d, block.rows, n - 1, eps, *first as u32 / 4]).binding(),
                ],
            );
        }
        self.launches.store(launches, Ordering::Relaxed);
        let logits = CubeTensor::new_contiguous(
            client.clone(),
            self.device.clone(),
            Shape::new([1, c.vocab]),
            logits,
            DType::F32,
        );
        Ok(Tensor::from_primitive::<Wgpu>(logits))
    }
}

/// Workgroups a pass's attention aims to spread over: enough to fill a GPU's compute units a few
/// times over.
const ATTENTION_WORKGROUPS: u32 = 512;

/// How the attention of `items` (row, head) pairs that see `seen` positions at most is split
/// over positions: (splits, positions per split, a multiple of the workgroup). One split where
/// the pairs are workgroups enough or the positions one chunk.
fn attention_splits(items: u32, seen: u32) -> (u32, u32) {
    let chunks = seen.div_ceil(WG);
    let splits = chunks.min(ATTENTION_WORKGROUPS.div_ceil(items)).max(1);
    let span = chunks.div_ceil(splits) * WG;
    (seen.div_ceil(span), span)
}

impl WgslForward {
    /// Kernels the last pass launched (0 before the first): one embedding lookup and one output
    /// head per block of the table's rows, five per layer (one more with per-head norms, two
    /// more with output norms, one more where the attention is split over positions).
    pub(crate) fn launches(&self) -> usize {
        self.launches.load(Ordering::Relaxed)
    }
}
