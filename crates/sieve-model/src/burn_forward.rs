//! The forward pass as burn's ops: the weights as f32 tensors on a burn device (the layout
//! [`crate::model`]'s table gives), and the reference pass the other implementations are held to
//! (the WGSL kernels read the same tensors' buffers on wgpu devices).

use burn::tensor::{Device, Int, Tensor, TensorData, activation};

use crate::config::{LayerExtras, LlamaConfig, rope_tables};

pub(crate) struct Layer {
    pub(crate) attn_norm: Tensor<1>,
    /// `[D, (H + 2 Hkv) hd]`
    pub(crate) wqkv: Tensor<2>,
    /// `[(H + 2 Hkv) hd]`
    pub(crate) qkv_bias: Option<Tensor<1>>,
    /// `[hd]` each: the queries' and keys' per-head norms.
    pub(crate) qk_norm: Option<[Tensor<1>; 2]>,
    /// `[D]` each: the norms on the attention's and the feed-forward's outputs.
    pub(crate) post_norms: Option<[Tensor<1>; 2]>,
    /// `[H hd, D]`
    pub(crate) wo: Tensor<2>,
    pub(crate) ffn_norm: Tensor<1>,
    /// `[D, 2F]`
    pub(crate) w_gate_up: Tensor<2>,
    /// `[F, D]`
    pub(crate) w_down: Tensor<2>,
}

/// A model's weights as burn tensors on one device.
pub(crate) struct BurnWeights {
    pub(crate) device: Device,
    /// `[V, D]`
    pub(crate) embed: Tensor<2>,
    /// `[V, D]`, when not tied to `embed`.
    pub(crate) head: Option<Tensor<2>>,
    pub(crate) layers: Vec<Layer>,
    pub(crate) norm: Tensor<1>,
    /// `[max_seq, hd/2]` cosines and sines of the rotary angles of each of the config's ropes.
    pub(crate) ropes: Vec<(Tensor<2>, Tensor<2>)>,
}

impl BurnWeights {
    /// The weights on `device`, from f32 values in the layout of [`LayerData`].
    pub(crate) fn new(config: &LlamaConfig, embed: Vec<f32>, head: Option<Vec<f32>>, layers: Vec<LayerData>, norm: Vec<f32>, device: &Device) -> Self {
        let (d, hd, f) = (config.hidden, config.head_dim, config.ffn);
        let qkv_width = (config.heads + 2 * config.kv_heads) * hd;
        let t1 = |v: Vec<f32>| {
            let len = v.len();
            Tensor::<1>::from_data(TensorData::new(v, [len]), device)
        };
        let t2 = |v: Vec<f32>, r: usize, c: usize| Tensor::<2>::from_data(TensorData::new(v, [r, c]), device);
        let layers = layers
            .into_iter()
            .map(|l| Layer {
                attn_norm: t1(l.attn_norm),
                wqkv: t2(l.wqkv, d, qkv_width),
                qkv_bias: l.extras.qkv_bias.map(t1),
                qk_norm: l.extras.qk_norm.map(|norms| norms.map(t1)),
                post_norms: l.extras.post_norms.map(|norms| norms.map(t1)),
                wo: t2(l.wo, config.heads * hd, d),
                ffn_norm: t1(l.ffn_norm),
                w_gate_up: t2(l.w_gate_up, d, 2 * f),
                w_down: t2(l.w_down, f, d),
            })
            .collect();
        let half = hd / 2;
        let ropes = config
            .ropes()
            .into_iter()
            .map(|rope| {
                let (cos, sin) = rope_tables(config, rope);
                (t2(cos, config.max_seq, half), t2(sin, config.max_seq, half))
            })
            .collect();
        Self {
            embed: t2(embed, config.vocab, d),
            head: head.map(|h| t2(h, config.vocab, d)),
            layers,
            norm: t1(norm),
            ropes,
            device: device.clone(),
        }
    }

    /// f32 values the weights hold.
    pub(crate) fn values(&self, config: &LlamaConfig) -> usize {
        let count = |t: &Tensor<2>| t.dims().iter().product::<usize>();
        let extras = |l: &Layer| l.qkv_bias.iter().chain(l.qk_norm.iter().flatten()).chain(l.post_norms.iter().flatten()).map(|t| t.dims()[0]).sum::<usize>();
        let layer = |l: &Layer| count(&l.wqkv) + count(&l.wo) + count(&l.w_gate_up) + count(&l.w_down) + 2 * config.hidden + extras(l);
        count(&self.embed) + self.head.as_ref().map_or(0, count) + config.hidden + self.layers.iter().map(layer).sum::<usize>()
    }

    /// burn's ops for one pass over `tokens` at positions `start..`.
    pub(crate) fn forward(&self, c: &LlamaConfig, tokens: &[u32], start: usize, layers: &mut [Option<(Tensor<3>, Tensor<3>)>]) -> Tensor<2> {
        let n = tokens.len();
        let (hd, h, hkv) = (c.head_dim, c.heads, c.kv_heads);
        let group = h / hkv;
        let total = start + n;
        let ids: Vec<i32> = tokens.iter().map(|&t| t as i32).collect();
        let ids = Tensor::<1, Int>::from_data(TensorData::new(ids, [n]), &self.device);
        let mut x = self.embed.clone().select(0, ids).mul_scalar(c.arch.embedding_scale(c.hidden));
        let ropes: Vec<_> = self
            .ropes
            .iter()
            .map(|(cos, sin)| (cos.clone().narrow(0, start, n).reshape([1, n, hd / 2, 1]), sin.clone().narrow(0, start, n).reshape([1, n, hd / 2, 1])))
            .collect();
        // Additive mask over `[group * n, total]` rows: query i sees keys j <= start + i, and
        // with a window only the last `window` of them.
        let mask = |window: Option<usize>| {
            let mut m = Vec::with_capacity(group * n * total);
            for _ in 0..group {
                for i in 0..n {
                    let pos = start + i;
                    let from = window.map_or(0, |w| (pos + 1).saturating_sub(w));
                    m.extend((0..total).map(|j| if (from..=pos).contains(&j) { 0.0f32 } else { f32::NEG_INFINITY }));
                }
            }
            Tensor::<3>::from_data(TensorData::new(m, [1, group * n, total]), &self.device)
        };
        let scale = 1.0 / (hd as f32).sqrt();
        for (i, (layer, entry)) in self.layers.iter().zip(layers).enumerate() {
            let (cos, sin) = &ropes[c.rope_index(i)];
            let window = c.window(i);
            let mut qkv = rms_norm(x.clone(), &layer.attn_norm, c.rms_eps).matmul(layer.wqkv.clone());
            if let Some(bias) = &layer.qkv_bias {
                qkv = qkv + bias.clone().unsqueeze::<2>();
            }
            let heads = |from: usize, count: usize| {
                qkv.clone().narrow(1, from * hd, count * hd).reshape([n, count, hd]).swap_dims(0, 1)
            };
            let (mut q, mut k) = (heads(0, h), heads(h, hkv));
            if let Some([q_norm, k_norm]) = &layer.qk_norm {
                (q, k) = (rms_norm(q, q_norm, c.rms_eps), rms_norm(k, k_norm, c.rms_eps));
            }
            let q = rope(q, cos, sin);
            let k = rope(k, cos, sin);
            let v = heads(h + hkv, hkv);
            let (k, v) = match entry.take() {
                Some((pk, pv)) => (Tensor::cat(vec![pk, k], 1), Tensor::cat(vec![pv, v], 1)),
                None => (k, v),
            };
            *entry = Some((k.clone(), v.clone()));
            // Query heads sharing a key/value head are stacked as rows: [Hkv, group * n, hd].
            let q = q.reshape([hkv, group * n, hd]);
            let mut scores = q.matmul(k.swap_dims(1, 2)).mul_scalar(scale);
            if n > 1 || window.is_some_and(|w| w < total) {
                scores = scores + mask(window);
            }
            let att = activation::softmax(scores, 2).matmul(v);
            let att = att.reshape([h, n, hd]).swap_dims(0, 1).reshape([n, h * hd]);
            let post = |out: Tensor<2>, which: usize| match &layer.post_norms {
                Some(norms) => rms_norm(out, &norms[which], c.rms_eps),
                None => out,
            };
            x = x + post(att.matmul(layer.wo.clone()), 0);
            let gu = rms_norm(x.clone(), &layer.ffn_norm, c.rms_eps).matmul(layer.w_gate_up.clone());
            let gate = gu.clone().narrow(1, 0, c.ffn);
            let gate = if c.arch.gelu() { gelu_tanh(gate) } else { activation::silu(gate) };
            let act = gate * gu.narrow(1, c.ffn, c.ffn);
            x = x + post(act.matmul(layer.w_down.clone()), 1);
        }
        let last = rms_norm(x.narrow(0, n - 1, 1), &self.norm, c.rms_eps);
        let head = self.head.as_ref().unwrap_or(&self.embed);
        last.matmul(head.clone().transpose())
    }
}

/// One layer's weights as f32 values, in the layout of [`Layer`].
pub(crate) struct LayerData {
    pub(crate) attn_norm: Vec<f32>,
    pub(crate) wqkv: Vec<f32>,
    pub(crate) extras: LayerExtras,
    pub(crate) wo: Vec<f32>,
    pub(crate) ffn_norm: Vec<f32>,
    pub(crate) w_gate_up: Vec<f32>,
    pub(crate) w_down: Vec<f32>,
}

/// `x / sqrt(mean(x^2) + eps) * w` over the last dimension of `x`.
fn rms_norm<const R: usize>(x: Tensor<R>, w: &Tensor<1>, eps: f32) -> Tensor<R> {
    let inv = x.clone().powi_scalar(2).mean_dim(R - 1).add_scalar(eps).sqrt().recip();
    x * inv * w.clone().unsqueeze::<R>()
}

/// GELU with tanh's approximation.
fn gelu_tanh(x: Tensor<2>) -> Tensor<2> {
    let inner = (x.clone() + x.clone().powi_scalar(3).mul_scalar(0.044715)).mul_scalar((2.0 / std::f32::consts::PI).sqrt());
    x.mul_scalar(0.5) * inner.tanh().add_scalar(1.0)
}

/// Rotates adjacent pairs `(2i, 2i+1)` of each head of `[heads, n, hd]` by the position angles
/// (`cos`/`sin`: `[1, n, hd/2, 1]`).
fn rope(x: Tensor<3>, cos: &Tensor<4>, sin: &Tensor<4>) -> Tensor<3> {
    let [heads, n, hd] = x.dims();
    let x = x.reshape([heads, n, hd / 2, 2]);
    let x0 = x.clone().narrow(3, 0, 1);
    let x1 = x.narrow(3, 1, 1);
    let r0 = x0.clone() * cos.clone() - x1.clone() * sin.clone();
    let r1 = x0 * sin.clone() + x1 * cos.clone();
    Tensor::cat(vec![r0, r1], 3).reshape([heads, n, hd])
}
