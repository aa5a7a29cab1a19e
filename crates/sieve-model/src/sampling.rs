//! How the next token is chosen from a masked logits row, and the CPU reference of it.
//!
//! The GPU kernels (`shaders/masked_argmax.wgsl`, `shaders/masked_sample.wgsl`) implement exactly
//! [`pick_reference`]; tests compare the two on random logits and masks.

use crate::error::ModelError;

/// Invocations per workgroup of the picking kernels; the reference splits rows the same way.
pub const PICK_WORKGROUP: usize = 256;

/// Sampling settings. `temperature <= 0` is greedy (argmax).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sampling {
    pub temperature: f32,
    /// Keep the `top_k` highest tokens (ties kept); 0 turns it off.
    pub top_k: u32,
    /// Keep the smallest head of tokens holding `top_p` of the probability; >= 1 turns it off.
    pub top_p: f32,
    /// Seed of the per-step random numbers: the same seed gives the same tokens.
    pub seed: u64,
}

impl Sampling {
    /// Greedy decoding.
    pub const GREEDY: Self = Self { temperature: 0.0, top_k: 0, top_p: 1.0, seed: 0 };

    /// Whether this is greedy decoding.
    pub fn is_greedy(&self) -> bool {
        self.temperature.is_nan() || self.temperature <= 0.0
    }
}

/// PCG hash (one round of the PCG RXS-M-XS permutation), as in the sampling shader.
fn pcg(v: u32) -> u32 {
    let state = v.wrapping_mul(747_796_405).wrapping_add(2_891_336_453);
    let word = ((state >> ((state >> 28) + 4)) ^ state).wrapping_mul(277_803_737);
    (word >> 22) ^ word
}

/// The uniform number in `[0, 1)` of step `step` under `seed`.
pub fn uniform(seed: u64, step: u32) -> f32 {
    let h = pcg(seed as u32 ^ pcg((seed >> 32) as u32 ^ pcg(step)));
    (h >> 8) as f32 * (1.0 / 16_777_216.0)
}

/// An order-preserving map from f32 to u32.
fn key(x: f32) -> u32 {
    let b = x.to_bits();
    if b & 0x8000_0000 != 0 { !b } else { b | 0x8000_0000 }
}

/// Chooses the next token of one logits row: the allowed ids (mask bit set, below `vocab`, logit
/// not NaN) filtered by temperature, top-k and top-p as `shaders/masked_sample.wgsl` documents,
/// or their argmax (lowest id on ties) when greedy. `step` picks the random number.
pub fn pick_reference(logits: &[f32], mask: &[u32], vocab: usize, sampling: &Sampling, step: u32) -> Result<u32, ModelError> {
    let limit = logits.len().min(vocab).min(mask.len() * 32);
    let allowed = |i: usize| (mask[i / 32] >> (i % 32)) & 1 == 1 && !logits[i].is_nan();
    let none = || ModelError::Constraint("the mask allows no token".into());
    if sampling.is_greedy() {
        let mut best: Option<usize> = None;
        for i in (0..limit).filter(|&i| allowed(i)) {
            if best.is_none_or(|b| logits[i] > logits[b]) {
                best = Some(i);
            }
        }
        return best.map(|b| b as u32).ok_or_else(none);
    }
    let inv_t = 1.0 / sampling.temperature;
    let scores: Vec<Option<f32>> = (0..limit).map(|i| allowed(i).then(|| logits[i] * inv_t)).collect();
    let kept: Vec<f32> = scores.iter().flatten().copied().collect();
    if kept.is_empty() {
        return Err(none());
    }
    let m = kept.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut keys: Vec<u32> = kept.iter().map(|&s| key(s)).collect();
    keys.sort_unstable_by(|a, b| b.cmp(a));
    let mut threshold = 0;
    let k = sampling.top_k as usize;
    if k > 0 && k < keys.len() {
        threshold = keys[k - 1];
    }
    let p = sampling.top_p;
    if p > 0.0 && p < 1.0 {
        let mass = |t: u32| -> f64 { kept.iter().filter(|&&s| key(s) >= t).map(|&s| f64::from((s - m).exp())).sum() };
        let goal = f64::from(p) * mass(threshold);
        // The largest key whose head holds the goal; heads only change at the keys themselves.
        // `keys` is sorted down, and a head's mass (non-negative terms added in index order)
        // never shrinks as the head grows, so the first key that holds the goal is found by
        // bisection, with the same sums a scan would make.
        let candidates = keys.partition_point(|&t| t >= threshold);
        let first = keys[..candidates].partition_point(|&t| mass(t) < goal);
        if let Some(&t) = keys[..candidates].get(first) {
            threshold = t;
        }
    }
    // Kept mass per contiguous chunk, as the kernel's invocations split the row.
    let weight = |i: usize| scores[i].filter(|&s| key(s) >= threshold).map(|s| (s - m).exp());
    let chunk = limit.div_ceil(PICK_WORKGROUP).max(1);
    let sums: Vec<f32> = (0..limit).step_by(chunk).map(|b| (b..(b + chunk).min(limit)).filter_map(weight).sum()).collect();
    let total: f32 = sums.iter().sum();
    let target = uniform(sampling.seed, step) * total;
    let (mut before, mut found, mut crossed) = (0.0, None, false);
    for (c, &z) in sums.iter().enumerate().filter(|(_, z)| **z > 0.0) {
        found = Some(c);
        if before + z > target {
            crossed = true;
            break;
        }
        before += z;
    }
    let c = found.ok_or_else(none)?;
    if !crossed {
        before -= sums[c];
    }
    let mut chosen = None;
    let mut running = before;
    for i in c * chunk..((c + 1) * chunk).min(limit) {
        if let Some(w) = weight(i) {
            running += w;
            chosen = Some(i as u32);
            if running > target {
                break;
            }
        }
    }
    chosen.ok_or_else(none)
}
