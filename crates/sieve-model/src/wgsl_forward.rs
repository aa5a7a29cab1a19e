//! The forward pass as hand-written WGSL kernels, on wgpu devices.
//!
//! Built from burn's generic ops, a decoder layer is about fifty launches (each element-wise
//! step of RMSNorm, RoPE, softmax and SiLU is its own kernel, the KV cache is re-concatenated
//! every step) and a general matmul that is slow for one row. Where launches are expensive
//! (WebGPU in a browser, above all on a software adapter) that dominates a decode step. Here a
//! layer is five launches over the model's own weight buffers:
//!
//! 1. `qkv_rope`: RMSNorm, the fused Q/K/V projection (and its bias) and RoPE; keys and values
//!    go straight into a preallocated cache, so truncating the cache only moves its length.
//!    Where the architecture normalises each head of the queries and keys (qwen3, gemma3),
//!    `qk_norm_rope` does that and RoPE as a sixth launch.
//! 2. `attention`: causal grouped-query attention with an online softmax, a workgroup per row
//!    and head, its invocations splitting the positions (the window's, on layers with a
//!    sliding window).
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
use burn::cubecl::client::Client;
use burn::cubecl::server::Handle;
use burn::cubecl::server::BufferBinding;
use burn::tensor::{DType, Shape, Tensor};
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::error::ModelError;
use crate::kernels::Wgsl;
use crate::burn_forward::BurnWeights;
use crate::config::LlamaConfig;

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

fn shader(name: &'static str, source: &'static str, rows: u32, slices: u32) -> Wgsl {
    Wgsl { name, source, workgroup_size: WG, rows, slices }
}

fn qkv_rope(rows: u32, slices: u32) -> Wgsl {
    let source = concat!(include_str!("../shaders/projection.wgsl"), include_str!("../shaders/norms.wgsl"), include_str!("../shaders/qkv_rope.wgsl"));
    shader("qkv_rope.wgsl", source, rows, slices)
}

fn swiglu(rows: u32, slices: u32) -> Wgsl {
    let source = concat!(include_str!("../shaders/projection.wgsl"), include_str!("../shaders/norms.wgsl"), include_str!("../shaders/swiglu.wgsl"));
    shader("swiglu.wgsl", source, rows, slices)
}

fn linear_residual(rows: u32, slices: u32) -> Wgsl {
    shader("linear_residual.wgsl", concat!(include_str!("../shaders/projection.wgsl"), include_str!("../shaders/linear_residual.wgsl")), rows, slices)
}

const ATTENTION: Wgsl = Wgsl { name: "attention.wgsl", source: include_str!("../shaders/attention.wgsl"), workgroup_size: WG, rows: 1, slices: 1 };
const EMBED: Wgsl = Wgsl { name: "embed.wgsl", source: include_str!("../shaders/embed.wgsl"), workgroup_size: WG, rows: 1, slices: 1 };
const NORM_ADD: Wgsl = Wgsl { name: "norm_add.wgsl", source: include_str!("../shaders/norm_add.wgsl"), workgroup_size: WG, rows: 1, slices: 1 };
const QK_NORM_ROPE: Wgsl = Wgsl { name: "qk_norm_rope.wgsl", source: include_str!("../shaders/qk_norm_rope.wgsl"), workgroup_size: WG, rows: 1, slices: 1 };
const LM_HEAD: Wgsl = Wgsl { name: "lm_head.wgsl", source: include_str!("../shaders/lm_head.wgsl"), workgroup_size: WG, rows: 1, slices: 1 };

/// The weight buffers of one decoder layer (shared with the model's burn tensors).
struct LayerBuffers {
    attn_norm: Handle,
    wqkv: Handle,
    /// `[(H + 2 Hkv) hd]`, zeros where the architecture has no bias.
    qkv_bias: Handle,
    /// The queries' and keys' per-head norm weights, where the architecture has them.
    qk_norm: Option<[Handle; 2]>,
    /// The weights of the norms on the attention's and the feed-forward's outputs, where the
    /// architecture has them.
    post_norms: Option<[Handle; 2]>,
    wo: Handle,
    ffn_norm: Handle,
    w_gate_up: Handle,
    w_down: Handle,
}

/// The model's weights as raw buffers on one wgpu device, and the kernels' fixed shapes.
pub(crate) struct WgslForward {
    client: Client,
    device: burn::cubecl::Device,
    config: LlamaConfig,
    embed: Handle,
    head: Handle,
    norm: Handle,
    /// Cosines and sines of each of the config's ropes.
    ropes: Vec<(Handle, Handle)>,
    layers: Vec<LayerBuffers>,
    /// Launches of the last pass.
    launches: AtomicUsize,
}

/// Per-layer key and value buffers for the whole context (`[Hkv, max_seq, hd]` each),
/// allocated once.
pub(crate) struct GpuCache {
    layers: Vec<(Handle, Handle)>,
}

impl GpuCache {
    pub(crate) fn layers(&self) -> usize {
        self.layers.len()
    }
}

/// The buffer behind a wgpu tensor, or `None` on another device.
fn buffer<const D: usize>(tensor: &Tensor<D>) -> Option<(Handle, Client, burn::cubecl::Device)> {
    let primitive: CubeTensor = tensor.clone().try_into_primitive::<Wgpu>().ok()?;
    let primitive = burn::backend::wgpu::into_contiguous(primitive);
    Some((primitive.handle, primitive.client, primitive.device))
}

fn bytes(values: &[u32]) -> &[u8] {
    bytemuck::cast_slice(values)
}

impl WgslForward {
    /// The kernels' view of a model whose tensors live on a wgpu device; `None` on any other
    /// device or for a shape the kernels do not cover (widths not multiples of 4, a head wider
    /// than [`MAX_HEAD_DIM`], buffers past 32-bit indices).
    pub(crate) fn new(config: &LlamaConfig, model: &BurnWeights) -> Option<Self> {
        let hd = config.head_dim;
        // Projections take four columns per invocation and RoPE pairs must not straddle them;
        // the attention holds at most 256 dimensions of a head and dispatches a row of
        // workgroups per position; every index into the largest buffers (head, gate/up
        // weights, a whole-context prefill) must fit a u32.
        let c = config;
        let quads = c.hidden.is_multiple_of(4) && c.ffn.is_multiple_of(4) && hd.is_multiple_of(4);
        let sizes = [(c.vocab, c.hidden), (c.hidden, 2 * c.ffn), (c.max_seq, c.ffn.max(c.hidden).max(c.heads * hd))];
        if !quads || hd > MAX_HEAD_DIM || c.max_seq > 65_535 || sizes.iter().any(|&(a, b)| a.checked_mul(b).is_none_or(|x| u32::try_from(x).is_err())) {
            return None;
        }
        let (embed, client, device) = buffer(&model.embed)?;
        let zeros = client.create_from_slice(bytemuck::cast_slice(&vec![0.0f32; (c.heads + 2 * c.kv_heads) * hd]));
        let head = match &model.head {
            Some(head) => buffer(head)?.0,
            None => embed.clone(),
        };
        let layers = model
            .layers
            .iter()
            .map(|layer| {
                Some(LayerBuffers {
                    attn_norm: buffer(&layer.attn_norm)?.0,
                    wqkv: buffer(&layer.wqkv)?.0,
                    qkv_bias: match &layer.qkv_bias {
                        Some(bias) => buffer(bias)?.0,
                        None => zeros.clone(),
                    },
                    qk_norm: match &layer.qk_norm {
                        Some([q, k]) => Some([buffer(q)?.0, buffer(k)?.0]),
                        None => None,
                    },
                    post_norms: match &layer.post_norms {
                        Some([attn, ffn]) => Some([buffer(attn)?.0, buffer(ffn)?.0]),
                        None => None,
                    },
                    wo: buffer(&layer.wo)?.0,
                    ffn_norm: buffer(&layer.ffn_norm)?.0,
                    w_gate_up: buffer(&layer.w_gate_up)?.0,
                    w_down: buffer(&layer.w_down)?.0,
                })
            })
            .collect::<Option<Vec<_>>>()?;
        Some(Self {
            norm: buffer(&model.norm)?.0,
            ropes: model.ropes.iter().map(|(cos, sin)| Some((buffer(cos)?.0, buffer(sin)?.0))).collect::<Option<_>>()?,
            embed,
            head,
            layers,
            client,
            device,
            config: config.clone(),
            launches: AtomicUsize::new(0),
        })
    }

    /// An empty cache: every layer's keys and values for `max_seq` positions.
    pub(crate) fn new_cache(&self) -> GpuCache {
        let c = &self.config;
        let size = c.kv_heads * c.max_seq * c.head_dim * 4;
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
        let f32s = |count: u32| client.empty(count as usize * 4);
        let params = |values: &[u32]| client.create_from_slice(bytes(values));

        let ids = client.create_from_slice(bytes(tokens));
        let x = f32s(n * d);
        let q = f32s(n * h * hd);
        let att = f32s(n * h * hd);
        let act = f32s(n * f);
        let post_norms = self.layers.iter().any(|l| l.post_norms.is_some());
        // Projections that norm_add adds normalised.
        let projected = f32s(if post_norms { n * d } else { 1 });
        let logits = f32s(vocab);
        let rotate_in_projection = self.layers.iter().all(|l| l.qk_norm.is_none());
        let qkv_params = params(&[d, n, h, hkv, hd, start, c.max_seq as u32, eps, rotate_in_projection as u32]);
        let qk_norm_params = params(&[n, h, hkv, hd, start, c.max_seq as u32, eps]);
        let mut launches = 0;
        let mut launch = |kernel: Wgsl, groups: CubeCount, buffers: Vec<BufferBinding>| {
            kernel.launch(client, groups, buffers);
            launches += 1;
        };
        // Per layer kind: without a window, with the sliding window.
        let attention_params = [0, c.sliding_window.unwrap_or(0) as u32].map(|window| params(&[n, h, hkv, hd, start, c.max_seq as u32, scale, window]));
        let add = u32::from(!post_norms);
        let wo_params = params(&[h * hd, d, n, add]);
        let swiglu_params = params(&[d, f, n, eps, u32::from(c.arch.gelu())]);
        let down_params = params(&[f, d, n, add]);
        let norm_add_params = params(&[d, n, eps]);
        let residual = if post_norms { &projected } else { &x };

        launch(
            EMBED,
            CubeCount::Static(d.div_ceil(WG), n, 1),
            vec![self.embed.clone().binding(), ids.binding(), x.clone().binding(), params(&[d, n, c.arch.embedding_scale(c.hidden).to_bits()]).binding()],
        );
        for (i, (layer, (k_cache, v_cache))) in self.layers.iter().zip(&cache.layers).enumerate() {
            let (cos, sin) = &self.ropes[c.rope_index(i)];
            launch(
                qkv_rope(rows, slices),
                groups(qkv_width),
                vec![
                    x.clone().binding(),
                    layer.attn_norm.clone().binding(),
                    layer.wqkv.clone().binding(),
                    cos.clone().binding(),
                    sin.clone().binding(),
                    q.clone().binding(),
                    k_cache.clone().binding(),
                    v_cache.clone().binding(),
                    qkv_params.clone().binding(),
                    layer.qkv_bias.clone().binding(),
                ],
            );
            if let Some([q_norm, k_norm]) = &layer.qk_norm {
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
            launch(
                ATTENTION,
                CubeCount::Static(h, n, 1),
                vec![
                    q.clone().binding(),
                    k_cache.clone().binding(),
                    v_cache.clone().binding(),
                    att.clone().binding(),
                    attention_params[usize::from(c.window(i).is_some())].clone().binding(),
                ],
            );
            launch(
                linear_residual(rows, slices),
                groups(d),
                vec![att.clone().binding(), layer.wo.clone().binding(), residual.clone().binding(), wo_params.clone().binding()],
            );
            if let Some([attn_post, _]) = &layer.post_norms {
                launch(
                    NORM_ADD,
                    CubeCount::Static(n, 1, 1),
                    vec![projected.clone().binding(), attn_post.clone().binding(), x.clone().binding(), norm_add_params.clone().binding()],
                );
            }
            launch(
                swiglu(rows, slices),
                groups(f),
                vec![
                    x.clone().binding(),
                    layer.ffn_norm.clone().binding(),
                    layer.w_gate_up.clone().binding(),
                    act.clone().binding(),
                    swiglu_params.clone().binding(),
                ],
            );
            launch(
                linear_residual(rows, slices),
                groups(d),
                vec![act.clone().binding(), layer.w_down.clone().binding(), residual.clone().binding(), down_params.clone().binding()],
            );
            if let Some([_, ffn_post]) = &layer.post_norms {
                launch(
                    NORM_ADD,
                    CubeCount::Static(n, 1, 1),
                    vec![projected.clone().binding(), ffn_post.clone().binding(), x.clone().binding(), norm_add_params.clone().binding()],
                );
            }
        }
        launch(
            LM_HEAD,
            CubeCount::Static(vocab.div_ceil(WG), 1, 1),
            vec![
                x.binding(),
                self.norm.clone().binding(),
                self.head.clone().binding(),
                logits.clone().binding(),
                params(&[d, vocab, n - 1, eps]).binding(),
            ],
        );
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

impl WgslForward {
    /// Kernels the last pass launched (0 before the first): one embedding lookup, five per
    /// layer (one more with per-head norms, two more with output norms), one output head.
    pub(crate) fn launches(&self) -> usize {
        self.launches.load(Ordering::Relaxed)
    }
}
