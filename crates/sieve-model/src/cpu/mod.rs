//! The forward pass on the CPU, over the GGUF's own quantized blocks.
//!
//! Where there is no real GPU (a software adapter such as SwiftShader or lavapipe emulates one
//! on the CPU, tens of times slower than the CPU itself), this path runs the model: weights stay
//! in their GGUF encoding ([`matrix::Matrix`]) and are dequantized block by block inside SIMD
//! dot products with the activations (16-bit integers for the quantized types, see
//! [`matrix::Activation`]); the products of a pass are split by rows over
//! [`threads::Threads`]; keys and values are kept in f32 in memory. A decoder layer:
//!
//! 1. RMSNorm, the Q/K/V projections (their biases and the per-head norms of queries and keys
//!    where the architecture has them) and RoPE (adjacent pairs: the loader puts Q and K rows in
//!    that order); keys and values appended to the cache;
//! 2. causal grouped-query attention, per token and head (over the last positions only on
//!    layers with a sliding window);
//! 3. the output projection added to the residual stream (normalised first where the
//!    architecture says so);
//! 4. RMSNorm, the gate and up projections, `silu(gate) * up` (GELU for gemma3), and the down
//!    projection added to the residual stream (normalised first likewise).
//!
//! Only the last token of a pass goes through the final norm and the output head. Tests hold
//! this path to burn's ops (the reference) and to the WGSL kernels.
//!
//! Where threads share no memory (Web Workers, each with a wasm instance of its own), the
//! products' rows are split into parts across workers instead ([`parts`]).

pub mod matrix;
pub mod parts;
pub mod threads;

use std::slice::from_ref;

use crate::error::ModelError;
use crate::gguf::Gguf;
use crate::config::{LayerExtras, LlamaConfig, rope_tables};
use matrix::{Activation, Matrix, Simd, dot};
use parts::{Helpers, Shard, StackPart, part_of, part_rows};
use threads::Threads;

/// One decoder layer's weights (matrices `[out, in]`, as GGUF stores them), as the CPU path
/// keeps them and the WGSL path uploads them.
pub(crate) struct Layer {
    pub(crate) attn_norm: Vec<f32>,
    /// Q, K and V, stacked on their rows (Q and K in adjacent-pair order).
    pub(crate) qkv: [Matrix; 3],
    pub(crate) extras: LayerExtras,
    pub(crate) wo: Matrix,
    pub(crate) ffn_norm: Vec<f32>,
    /// Gate and up, stacked on their rows.
    pub(crate) gate_up: [Matrix; 2],
    pub(crate) down: Matrix,
}

impl Layer {
    /// Layer `i` of a GGUF, its tensors kept in their encoding.
    pub(crate) fn from_gguf(gguf: &Gguf<'_>, config: &LlamaConfig, i: usize) -> Result<Self, ModelError> {
        let (d, f) = (config.hidden, config.ffn);
        let (qd, kd) = (config.heads * config.head_dim, config.kv_heads * config.head_dim);
        let p = |s: &str| format!("blk.{i}.{s}.weight");
        let m = |s: &str, rows: usize, cols: usize| Matrix::from_gguf(gguf, &p(s), rows, cols);
        let rotated = |m: Matrix| match config.adjacent_pair_rows(m.rows()) {
            Some(order) => m.reorder_rows(&order),
            None => m,
        };
        // Fused tensors (phi3) are split into the separate ones' rows.
        let [q, k, v] = match gguf.tensors.contains_key(&p("attn_qkv")) {
            true => {
                let qkv = m("attn_qkv", qd + 2 * kd, d)?;
                [qkv.rows_range(0..qd), qkv.rows_range(qd..qd + kd), qkv.rows_range(qd + kd..qd + 2 * kd)]
            }
            false => [m("attn_q", qd, d)?, m("attn_k", kd, d)?, m("attn_v", kd, d)?],
        };
        let gate_up = match gguf.tensors.contains_key(&p("ffn_gate")) {
            true => [m("ffn_gate", f, d)?, m("ffn_up", f, d)?],
            false => {
                let both = m("ffn_up", 2 * f, d)?;
                [both.rows_range(0..f), both.rows_range(f..2 * f)]
            }
        };
        Ok(Layer {
            attn_norm: gguf.tensor_f32(&p("attn_norm"), &[d])?,
            qkv: [rotated(q), rotated(k), v],
            extras: LayerExtras::from_gguf(gguf, config, i)?,
            wo: m("attn_output", d, qd)?,
            ffn_norm: gguf.tensor_f32(&p("ffn_norm"), &[d])?,
            gate_up,
            down: m("ffn_down", d, f)?,
        })
    }

    /// Keeps only part `part` of `parts` of each product's rows (see [`parts`]).
    pub(crate) fn keep_part(&mut self, part: usize, parts: usize) {
        fn cut<const N: usize>(stack: &[Matrix], part: usize, parts: usize) -> [Matrix; N] {
            part_of(stack, part, parts).try_into().expect("a part of each matrix")
        }
        self.qkv = cut(&self.qkv, part, parts);
        self.gate_up = cut(&self.gate_up, part, parts);
        [self.wo] = cut(from_ref(&self.wo), part, parts);
        [self.down] = cut(from_ref(&self.down), part, parts);
    }

    /// The layer's products' matrices ([`QKV`], [`OUTPUT`], [`GATE_UP`], [`DOWN`]).
    fn into_stacks(self) -> [Vec<Matrix>; PER_LAYER] {
        [self.qkv.into(), vec![self.wo], self.gate_up.into(), vec![self.down]]
    }

    /// A layer from `[out, in]` f32 rows, for models made in memory.
    pub(crate) fn from_rows(config: &LlamaConfig, l: LayerRows) -> Self {
        let (d, f) = (config.hidden, config.ffn);
        let (qd, kd) = (config.heads * config.head_dim, config.kv_heads * config.head_dim);
        Layer {
            attn_norm: l.attn_norm,
            qkv: [Matrix::from_f32(qd, d, l.q), Matrix::from_f32(kd, d, l.k), Matrix::from_f32(kd, d, l.v)],
            extras: LayerExtras::default(),
            wo: Matrix::from_f32(d, qd, l.wo),
            ffn_norm: l.ffn_norm,
            gate_up: [Matrix::from_f32(f, d, l.gate), Matrix::from_f32(f, d, l.up)],
            down: Matrix::from_f32(d, f, l.down),
        }
    }
}

/// A model's weights in memory and the CPU kernels that run it.
pub(crate) struct CpuForward {
    config: LlamaConfig,
    simd: Simd,
    threads: Threads,
    /// `[V, D]`
    embed: Matrix,
    /// `[V, D]`, when not tied to `embed`.
    head: Option<Matrix>,
    norm: Vec<f32>,
    layers: Vec<Layer>,
    /// `[max_seq, hd / 2]` cosines and sines of the rotary angles of each of the config's ropes.
    ropes: Vec<(Vec<f32>, Vec<f32>)>,
    /// The products' rows held: part 0 of this many (1: all of them). Helpers hold the others.
    parts: usize,
    /// Workers holding the other parts of every product's rows, when there are any.
    helpers: Option<Box<dyn Helpers>>,
}

/// Products of a pass are numbered (see [`CpuForward::stack`]): per layer these four, in order;
/// the output head last.
const QKV: usize = 0;
const OUTPUT: usize = 1;
const GATE_UP: usize = 2;
const DOWN: usize = 3;
const PER_LAYER: usize = 4;

/// Rows of product `id` (see [`CpuForward::stack`]) of a model of `config`, all parts together.
fn stack_total(config: &LlamaConfig, id: usize) -> usize {
    let (d, kd) = (config.hidden, config.kv_heads * config.head_dim);
    match id / PER_LAYER < config.layers {
        true => match id % PER_LAYER {
            QKV => config.heads * config.head_dim + 2 * kd,
            GATE_UP => 2 * config.ffn,
            _ => d,
        },
        false => config.vocab,
    }
}

/// The shard of a model of `config` whose `layers` and output `head` were cut to part `part`
/// of `parts` of their rows ([`Layer::keep_part`]).
pub(crate) fn shard_of(config: &LlamaConfig, part: usize, parts: usize, layers: Vec<Layer>, head: Matrix) -> Shard {
    let stacks = layers.into_iter().flat_map(Layer::into_stacks).chain([vec![head]]);
    let stacks = stacks
        .enumerate()
        .map(|(id, pieces)| StackPart { total: stack_total(config, id), cols: pieces[0].cols(), pieces })
        .collect();
    Shard::new(part, parts, stacks)
}

/// Keys and values of the positions seen so far: per layer, `[position, width]` each, where
/// `width` is `Hkv * hd`.
pub(crate) struct CpuCache {
    layers: Vec<(Vec<f32>, Vec<f32>)>,
    width: usize,
}

impl CpuCache {
    pub(crate) fn layers(&self) -> usize {
        self.layers.len()
    }

    /// Forgets every position from `len` on.
    pub(crate) fn truncate(&mut self, len: usize) {
        for (k, v) in &mut self.layers {
            k.truncate(len * self.width);
            v.truncate(len * self.width);
        }
    }
}

/// A layer's tensors as `[out, in]` f32 rows, for models made in memory.
pub(crate) struct LayerRows {
    pub attn_norm: Vec<f32>,
    pub q: Vec<f32>,
    pub k: Vec<f32>,
    pub v: Vec<f32>,
    pub wo: Vec<f32>,
    pub ffn_norm: Vec<f32>,
    pub gate: Vec<f32>,
    pub up: Vec<f32>,
    pub down: Vec<f32>,
}

impl CpuForward {
    /// A model of `layers` (and the embedding, output head and final norm), run on `threads`
    /// threads; its layers and head hold part 0 of `parts` of their rows ([`Layer::keep_part`];
    /// a tied head is the whole embedding), the others being its helpers'.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        config: LlamaConfig,
        threads: usize,
        embed: Matrix,
        head: Option<Matrix>,
        layers: Vec<Layer>,
        norm: Vec<f32>,
        parts: usize,
    ) -> Result<Self, ModelError> {
        let ropes = config.ropes().into_iter().map(|rope| rope_tables(&config, rope)).collect();
        let threads = Threads::new(threads)?;
        Ok(Self { simd: Simd::detect(), threads, config, embed, head, norm, layers, ropes, parts, helpers: None })
    }

    /// Threads of this worker, times the parts the rows are split into.
    pub(crate) fn threads(&self) -> usize {
        self.threads.count() * self.helpers.as_ref().map_or(1, |h| h.parts())
    }

    /// From now on computes part 0 of each product's rows and has `helpers` compute the others;
    /// an error where the model holds part 0 of another number of parts.
    pub(crate) fn set_helpers(&mut self, helpers: Box<dyn Helpers>) -> Result<(), ModelError> {
        if self.parts > 1 && helpers.parts() != self.parts {
            return Err(ModelError::Input(format!("the model holds part 0 of {} of its rows; {} parts were given", self.parts, helpers.parts())));
        }
        self.helpers = Some(helpers);
        Ok(())
    }

    /// Part `part` of `parts` of every product's rows (copied), for a worker that helps this
    /// model's; an error where this model holds part of them only.
    pub(crate) fn shard(&self, part: usize, parts: usize) -> Result<Shard, ModelError> {
        if part >= parts || self.parts > 1 {
            return Err(ModelError::Input(format!("part {part} of {parts} of a model that holds part 0 of {}", self.parts)));
        }
        let stacks = (0..self.stacks())
            .map(|id| {
                let stack = self.stack(id);
                StackPart { pieces: part_of(stack, part, parts), total: stack_total(&self.config, id), cols: stack[0].cols() }
            })
            .collect();
        Ok(Shard::new(part, parts, stacks))
    }

    /// How many products a pass has.
    fn stacks(&self) -> usize {
        PER_LAYER * self.layers.len() + 1
    }

    /// Product `id`'s matrices, stacked on their rows: a layer's Q/K/V, output, gate/up or down
    /// projection (`PER_LAYER * layer + QKV`, ...), or the output head (the last).
    fn stack(&self, id: usize) -> &[Matrix] {
        match self.layers.get(id / PER_LAYER) {
            Some(l) => match id % PER_LAYER {
                QKV => &l.qkv,
                OUTPUT => from_ref(&l.wo),
                GATE_UP => &l.gate_up,
                _ => from_ref(&l.down),
            },
            None => from_ref(self.head.as_ref().unwrap_or(&self.embed)),
        }
    }

    /// Bytes of weights held.
    pub(crate) fn weight_bytes(&self) -> usize {
        let layer = |l: &Layer| {
            l.qkv.iter().chain(&l.gate_up).chain([&l.wo, &l.down]).map(Matrix::bytes).sum::<usize>()
                + 4 * (l.attn_norm.len() + l.ffn_norm.len())
        };
        self.embed.bytes() + self.head.as_ref().map_or(0, Matrix::bytes) + 4 * self.norm.len() + self.layers.iter().map(layer).sum::<usize>()
    }

    pub(crate) fn new_cache(&self) -> CpuCache {
        CpuCache { layers: (0..self.config.layers).map(|_| (Vec::new(), Vec::new())).collect(), width: self.kv_width() }
    }

    /// Width of a position's keys (or values): `Hkv * hd`.
    pub(crate) fn kv_width(&self) -> usize {
        self.config.kv_heads * self.config.head_dim
    }

    /// Runs `tokens` at positions `start..` (the cache holds `start` positions) and returns the
    /// last token's logits. The caller has checked the ids and the context. An error only
    /// comes from the helpers, and leaves the cache unusable.
    pub(crate) fn forward(&self, tokens: &[u32], start: usize, cache: &mut CpuCache) -> Result<Vec<f32>, ModelError> {
        if self.parts > 1 && self.helpers.is_none() {
            return Err(ModelError::Input(format!("the model holds part 0 of {} of its rows and has no helpers for the others", self.parts)));
        }
        // The helpers take so many tokens at a time; a longer prompt runs in passes.
        if let Some(max) = self.helpers.as_ref().map(|h| h.max_tokens().max(1))
            && tokens.len() > max
        {
            let mut logits = Vec::new();
            for (i, chunk) in tokens.chunks(max).enumerate() {
                logits = self.forward(chunk, start + i * max, cache)?;
            }
            return Ok(logits);
        }
        let c = &self.config;
        let (n, d, hd) = (tokens.len(), c.hidden, c.head_dim);
        let (qd, kvw) = (c.heads * hd, self.kv_width());
        let mut x = vec![0.0; n * d];
        let scale = c.arch.embedding_scale(d);
        for (&t, row) in tokens.iter().zip(x.chunks_exact_mut(d)) {
            self.embed.row_into(t as usize, row);
            if scale != 1.0 {
                row.iter_mut().for_each(|v| *v *= scale);
            }
        }
        let mut normed = vec![0.0; n * d];
        for (i, (layer, (keys, values))) in self.layers.iter().zip(&mut cache.layers).enumerate() {
            let id = PER_LAYER * i;
            let (cos, sin) = &self.ropes[c.rope_index(i)];
            rms_norm(&x, &layer.attn_norm, c.rms_eps, &mut normed);
            let mut qkv = self.product(id + QKV, &normed, d)?;
            let width = qd + 2 * kvw;
            for (t, row) in qkv.chunks_exact_mut(width).enumerate() {
                let pos = start + t;
                if let Some(bias) = &layer.extras.qkv_bias {
                    add(row, bias);
                }
                let (q, kv) = row.split_at_mut(qd);
                if let Some([q_norm, k_norm]) = &layer.extras.qk_norm {
                    rms_norm_in_place(q, q_norm, c.rms_eps);
                    rms_norm_in_place(&mut kv[..kvw], k_norm, c.rms_eps);
                }
                self.rope(q, pos, cos, sin);
                self.rope(&mut kv[..kvw], pos, cos, sin);
                keys.extend_from_slice(&kv[..kvw]);
                values.extend_from_slice(&kv[kvw..]);
            }
            // After the last layer only the last token's state is read (for the logits): the
            // other tokens' attention and feed-forward there would go unused.
            let (qkv, first) = match i + 1 == self.layers.len() && n > 1 {
                true => {
                    x.drain(..(n - 1) * d);
                    normed.truncate(d);
                    (&qkv[(n - 1) * width..], n - 1)
                }
                false => (&qkv[..], 0),
            };
            let attended = self.attention(qkv, width, start + first, n - first, c.window(i), keys, values);
            let post = layer.extras.post_norms.as_ref();
            let mut out = self.product(id + OUTPUT, &attended, qd)?;
            if let Some([attn_post, _]) = post {
                rms_norm_in_place(&mut out, attn_post, c.rms_eps);
            }
            add(&mut x, &out);
            rms_norm(&x, &layer.ffn_norm, c.rms_eps, &mut normed);
            let gate_up = self.product(id + GATE_UP, &normed, d)?;
            let act = match c.arch.gelu() {
                true => gated(&gate_up, c.ffn, gelu_tanh),
                false => gated(&gate_up, c.ffn, silu),
            };
            let mut out = self.product(id + DOWN, &act, c.ffn)?;
            if let Some([_, ffn_post]) = post {
                rms_norm_in_place(&mut out, ffn_post, c.rms_eps);
            }
            add(&mut x, &out);
        }
        let mut last = vec![0.0; d];
        rms_norm(&x[x.len() - d..], &self.norm, c.rms_eps, &mut last);
        self.product(self.stacks() - 1, &last, d)
    }

    /// `x` (`[n, cols]`) times product `id`'s matrices stacked on their rows: `[n, sum of rows]`.
    /// With helpers, this worker computes part 0 of the rows while they compute the others.
    fn product(&self, id: usize, x: &[f32], cols: usize) -> Result<Vec<f32>, ModelError> {
        let stack = self.stack(id);
        let n = x.len() / cols;
        let total = stack_total(&self.config, id);
        let own = match &self.helpers {
            Some(helpers) => {
                helpers.start(id, n, x);
                part_rows(total, 0, helpers.parts()).end
            }
            None => total,
        };
        // Each token's block sums, once for every row and thread.
        let acts: Vec<Activation<'_>> = x.chunks_exact(cols).map(Activation::new).collect();
        // Rows outermost (`[row, token]`), so that a thread's run of rows is contiguous.
        let mut by_row = vec![0.0; total * n];
        let (mine, theirs) = by_row.split_at_mut(own * n);
        let simd = self.simd;
        self.threads.rows(mine, n, |first, run| stack_rows(simd, stack, first, x, &acts, run));
        if let Some(helpers) = &self.helpers {
            helpers.finish(theirs)?;
        }
        if n == 1 {
            return Ok(by_row);
        }
        // Transposed a cache line of rows at a time: a token's outputs lie `total` apart, and
        // storing them one row at a time for every token (a stride that is often a multiple of
        // 4 KiB) evicts the lines it writes before the next row fills them.
        const ROWS: usize = 16;
        let mut out = vec![0.0; total * n];
        for (block, rows) in by_row.chunks(ROWS * n).enumerate() {
            let count = rows.len() / n;
            for t in 0..n {
                for (i, o) in out[t * total + block * ROWS..][..count].iter_mut().enumerate() {
                    *o = rows[i * n + t];
                }
            }
        }
        Ok(out)
    }

    /// Rotates adjacent pairs `(2i, 2i+1)` of each head in `x` by position `pos`'s angles in the
    /// tables `cos` and `sin`.
    fn rope(&self, x: &mut [f32], pos: usize, cos: &[f32], sin: &[f32]) {
        let half = self.config.head_dim / 2;
        let (cos, sin) = (&cos[pos * half..(pos + 1) * half], &sin[pos * half..(pos + 1) * half]);
        for head in x.chunks_exact_mut(2 * half) {
            for (i, pair) in head.chunks_exact_mut(2).enumerate() {
                let (x0, x1) = (pair[0], pair[1]);
                pair[0] = x0 * cos[i] - x1 * sin[i];
                pair[1] = x0 * sin[i] + x1 * cos[i];
            }
        }
    }

    /// Causal attention of the `n` new tokens' queries (in `qkv`, rows of `width`) over the
    /// cached positions (the last `window` of them, where given): `[n, H * hd]`.
    #[allow(clippy::too_many_arguments)]
    fn attention(&self, qkv: &[f32], width: usize, start: usize, n: usize, window: Option<usize>, keys: &[f32], values: &[f32]) -> Vec<f32> {
        let (c, simd) = (&self.config, self.simd);
        let (hd, kvw) = (c.head_dim, self.kv_width());
        let group = c.heads / c.kv_heads;
        let scale = 1.0 / (hd as f32).sqrt();
        let mut out = vec![0.0; n * c.heads * hd];
        self.threads.rows(&mut out, hd, |first, run| {
            let mut scores = Vec::new();
            for (i, o) in run.chunks_exact_mut(hd).enumerate() {
                let (t, h) = ((first + i) / c.heads, (first + i) % c.heads);
                let q = &qkv[t * width + h * hd..][..hd];
                let kv_off = (h / group) * hd;
                let seen = start + t + 1;
                let from = window.map_or(0, |w| seen.saturating_sub(w));
                scores.clear();
                scores.extend((from..seen).map(|j| dot(simd, q, &keys[j * kvw + kv_off..][..hd]) * scale));
                let max = scores.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                let mut sum = 0.0;
                for s in &mut scores {
                    *s = (*s - max).exp();
                    sum += *s;
                }
                for (j, &p) in (from..).zip(&scores) {
                    let v = &values[j * kvw + kv_off..][..hd];
                    for (o, &v) in o.iter_mut().zip(v) {
                        *o += p * v;
                    }
                }
                for o in o.iter_mut() {
                    *o /= sum;
                }
            }
        });
        out
    }
}

/// Rows `first..` of the product of `x` (its tokens prepared as `acts`) with the matrices of
/// `stack` stacked on their rows, as many as `out` holds (`[row, token]`).
fn stack_rows(simd: Simd, stack: &[Matrix], first: usize, x: &[f32], acts: &[Activation<'_>], out: &mut [f32]) {
    let n = acts.len();
    let last = first + out.len() / n;
    let mut offset = 0;
    for m in stack {
        let (from, to) = (first.max(offset), last.min(offset + m.rows()));
        if from < to {
            m.products(simd, from - offset, x, acts, &mut out[(from - first) * n..(to - first) * n]);
        }
        offset += m.rows();
    }
}

fn add(x: &mut [f32], y: &[f32]) {
    for (x, y) in x.iter_mut().zip(y) {
        *x += y;
    }
}

/// `x / sqrt(mean(x^2) + eps) * w` for each row of `x` (rows of `w.len()`), into `out`.
fn rms_norm(x: &[f32], w: &[f32], eps: f32, out: &mut [f32]) {
    for (row, out) in x.chunks_exact(w.len()).zip(out.chunks_exact_mut(w.len())) {
        let inv = inverse_rms(row, eps);
        for ((o, &v), &w) in out.iter_mut().zip(row).zip(w) {
            *o = v * inv * w;
        }
    }
}

/// [`rms_norm`] of each row of `x` in place.
fn rms_norm_in_place(x: &mut [f32], w: &[f32], eps: f32) {
    for row in x.chunks_exact_mut(w.len()) {
        let inv = inverse_rms(row, eps);
        for (v, &w) in row.iter_mut().zip(w) {
            *v *= inv * w;
        }
    }
}

/// `gate(g) * u` for each row of `[gate | up]` pairs of width `ffn` (the function inlined).
fn gated(gate_up: &[f32], ffn: usize, gate: impl Fn(f32) -> f32) -> Vec<f32> {
    gate_up
        .chunks_exact(2 * ffn)
        .flat_map(|row| {
            let (g, up) = row.split_at(ffn);
            g.iter().zip(up).map(|(&g, &u)| gate(g) * u)
        })
        .collect()
}

fn silu(x: f32) -> f32 {
    x / (1.0 + (-x).exp())
}

/// GELU with tanh's approximation (PyTorch's `gelu(approximate="tanh")`).
fn gelu_tanh(x: f32) -> f32 {
    const SQRT_2_OVER_PI: f32 = 0.797_884_6;
    0.5 * x * (1.0 + (SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)).tanh())
}

/// `1 / sqrt(mean(x^2) + eps)`.
fn inverse_rms(x: &[f32], eps: f32) -> f32 {
    1.0 / (x.iter().map(|v| v * v).sum::<f32>() / x.len() as f32 + eps).sqrt()
}
