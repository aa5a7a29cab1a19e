//! The fast forward passes against burn's ops on the CPU (the reference), for the same random
//! weights: the WGSL kernels on a wgpu device and the CPU kernels (on one thread and on two),
//! through prefills of several row tiles, single-token steps, a truncated cache, and a context
//! of over a thousand positions.
//!
//! Natively the WGSL pass runs on whatever Vulkan adapter wgpu finds (lavapipe on a machine
//! without a GPU) and the CPU kernels use AVX2 where the processor has it; under `cargo test
//! --target wasm32-unknown-unknown` the WGSL pass runs on WebGPU in Chromium and the CPU kernels
//! on WebAssembly SIMD, on one thread. No adapter is a failure, never a skip.

use std::cell::RefCell;

use burn::tensor::Device;
use sieve_model::cpu::parts::{Helpers, Shard};
use sieve_model::gpu::wgpu_device;
use sieve_model::{Backend, KvCache, Llama, LlamaConfig, Logits, ModelError, Placement};
use wasm_bindgen_test::wasm_bindgen_test;

async fn row(logits: Logits) -> Vec<f32> {
    logits.into_vec().await.expect("logits")
}

/// Token ids spread over the vocabulary, reproducibly.
fn tokens(count: usize, vocab: usize, salt: usize) -> Vec<u32> {
    (0..count).map(|i| ((i * 7919 + salt * 104_729) % vocab) as u32).collect()
}

/// GPU launches of the last pass: exactly one lookup, five a layer and one head, one more a layer
/// where the attention is split over positions; or at least those, where the table's blocks
/// depend on the device.
#[derive(Clone, Copy, PartialEq)]
enum Launches {
    Exactly { split_attention: bool },
    AtLeast,
}

/// Runs the same passes with burn's ops and with each fast path and compares every pass's
/// logits, and the GPU's launches in the last pass.
async fn compare(config: LlamaConfig, passes: &[Pass], launches: Launches) {
    let gpu = wgpu_device().await.expect("no wgpu adapter: WebGPU (browser) or Vulkan (native) is required");
    let reference = Llama::random(config.clone(), 7, Device::flex()).expect("reference model");
    assert_eq!(reference.backend(), Backend::Reference);
    let threads = if cfg!(target_family = "wasm") { 1 } else { 2 };
    for (placement, backend) in [
        (Placement::from(&gpu), Backend::Gpu),
        (Placement::Cpu { threads: 1 }, Backend::Cpu { threads: 1 }),
        (Placement::Cpu { threads }, Backend::Cpu { threads }),
    ] {
        let model = Llama::random(config.clone(), 7, placement).expect("model");
        assert_eq!(model.backend(), backend);
        compare_passes(&reference, &model, passes).await;
        // Counted as the last pass launched its kernels.
        let least = 2 + 5 * config.layers;
        match (backend, launches) {
            (Backend::Gpu, Launches::Exactly { split_attention }) => assert_eq!(model.launches_per_pass(), Some(least + usize::from(split_attention) * config.layers)),
            (Backend::Gpu, Launches::AtLeast) => assert!(model.launches_per_pass().is_some_and(|n| n >= least)),
            _ => assert_eq!(model.launches_per_pass(), None),
        }
    }
}

async fn compare_passes(reference: &Llama, model: &Llama, passes: &[Pass]) {
    let config = model.config();
    let backend = model.backend();
    let (mut ref_cache, mut cache) = (KvCache::new(reference), KvCache::new(model));
    for (i, pass) in passes.iter().enumerate() {
        let ids = match *pass {
            Pass::Run(count) => tokens(count, config.vocab, i),
            Pass::Truncate(len) => {
                ref_cache.truncate(len);
                cache.truncate(len);
                continue;
            }
        };
        let expected = row(reference.forward(&ids, &mut ref_cache).expect("reference forward")).await;
        let actual = row(model.forward(&ids, &mut cache).expect("forward")).await;
        assert_eq!(cache.len(), ref_cache.len());
        assert_eq!(actual.len(), config.vocab);
        let scale = expected.iter().fold(1.0f32, |m, x| m.max(x.abs()));
        let worst = actual.iter().zip(&expected).map(|(a, e)| (a - e).abs()).fold(0.0f32, f32::max);
        // The GPU caches keys and values in f16 (11 significant bits), the CPU in f32.
        let tolerance = if backend == Backend::Gpu { 2e-3 } else { 2e-4 };
        assert!(worst <= tolerance * scale, "{backend:?}, pass {i} ({pass:?}): logits differ by {worst} (scale {scale})");
    }
}

#[derive(Debug, Clone, Copy)]
enum Pass {
    /// Run this many new tokens in one pass.
    Run(usize),
    /// Truncate both caches to this length.
    Truncate(usize),
}

#[wasm_bindgen_test(unsupported = pollster::test)]
async fn tiny_model_prefill_steps_and_truncation_match_the_reference() {
    use Pass::*;
    compare(LlamaConfig::tiny(300), &[Run(13), Run(1), Run(1), Run(9), Truncate(10), Run(1), Run(3)], Launches::Exactly { split_attention: false }).await;
}

#[wasm_bindgen_test(unsupported = pollster::test)]
async fn wider_model_with_a_long_context_matches_the_reference() {
    use Pass::*;
    // A width that leaves a partial workgroup (160 / 4 = 40 of 64 invocations), a head of 32,
    // five query heads per key/value head, and 1030 positions: single steps and a short pass split
    // their attention over positions on the GPU (some splits of the short pass's first rows
    // empty).
    let config = LlamaConfig { head_dim: 32, vocab: 1000, hidden: 160, layers: 2, heads: 5, kv_heads: 1, ffn: 200, rms_eps: 1e-5, max_seq: 1100, ..LlamaConfig::tiny(1000) };
    compare(config, &[Run(1020), Run(1), Run(9), Truncate(1025), Run(1)], Launches::Exactly { split_attention: true }).await;
}

/// A vocabulary whose table (the embedding and the tied head, f32) takes more than 128 MiB, the
/// most one buffer binds on lavapipe and by default on WebGPU: the GPU holds it in blocks of rows,
/// looked up and multiplied a block per launch, and gives the reference's logits.
#[wasm_bindgen_test(unsupported = pollster::test)]
async fn a_table_larger_than_a_gpu_buffer_is_split_into_blocks_of_rows() {
    use Pass::*;
    // 128 MiB holds 43,690.67 column quads of 192 f32 inputs: a block must end on a whole quad.
    let config = LlamaConfig { vocab: 180_000, hidden: 192, ffn: 256, layers: 1, ..LlamaConfig::tiny(64) };
    assert!(config.vocab * config.hidden * 4 > 128 << 20);
    compare(config, &[Run(5), Run(1)], Launches::AtLeast).await;
}

/// Helpers that compute their shards' rows on this thread, when their rows are asked for.
pub(crate) struct LocalHelpers {
    pub shards: Vec<Shard>,
    pub max_tokens: usize,
    pub pending: RefCell<Option<(usize, usize, Vec<f32>)>>,
}

impl Helpers for LocalHelpers {
    fn parts(&self) -> usize {
        self.shards.len() + 1
    }

    fn max_tokens(&self) -> usize {
        self.max_tokens
    }

    fn start(&self, stack: usize, n: usize, x: &[f32]) {
        assert!(n <= self.max_tokens, "{n} tokens");
        *self.pending.borrow_mut() = Some((stack, n, x.to_vec()));
    }

    fn finish(&self, out: &mut [f32]) -> Result<(), ModelError> {
        let (stack, n, x) = self.pending.borrow_mut().take().expect("finish after start");
        for shard in &self.shards {
            let (offset, rows) = shard.rows(stack)?;
            out[offset * n..(offset + rows) * n].copy_from_slice(&shard.product(stack, n, &x)?);
        }
        Ok(())
    }
}

/// The CPU path with its products' rows split into parts held by helpers (as Web Workers hold
/// them in the browser) gives the same logits, bit for bit, as on one thread: a prefill longer
/// than the helpers take runs in the passes that one thread is given here, then single steps.
#[wasm_bindgen_test(unsupported = pollster::test)]
async fn rows_split_into_parts_give_the_same_logits() {
    let config = LlamaConfig::tiny(300);
    assert_eq!(config.layers, 2, "the output head is product 4 * 2");
    let whole = Llama::random(config.clone(), 7, Placement::Cpu { threads: 1 }).expect("model");
    for parts in [2, 3] {
        let mut split = Llama::random(config.clone(), 7, Placement::Cpu { threads: 1 }).expect("model");
        let shards = (1..parts).map(|p| whole.shard(p, parts).expect("shard")).collect();
        split.set_helpers(Box::new(LocalHelpers { shards, max_tokens: 5, pending: RefCell::default() })).expect("helpers");
        assert_eq!(split.backend(), Backend::Cpu { threads: parts });
        let (mut a, mut b) = (KvCache::new(&whole), KvCache::new(&split));
        for (i, count) in [13, 1, 1, 9].into_iter().enumerate() {
            let ids = tokens(count, config.vocab, i);
            // The whole model runs the passes the split one makes of a long prompt.
            let mut expected = Vec::new();
            for chunk in ids.chunks(5) {
                expected = row(whole.forward(chunk, &mut a).expect("forward")).await;
            }
            let actual = row(split.forward(&ids, &mut b).expect("forward")).await;
            assert_eq!(actual, expected, "{parts} parts, pass {i} of {count} tokens");
        }
    }
    assert!(whole.shard(2, 2).is_err(), "part 2 of 2");
}

/// A context whose keys do not fit one buffer of the device is an error naming it, before any
/// weight is uploaded (65,535 positions of 128 heads of 256 in f16: 4 GiB a layer).
#[wasm_bindgen_test(unsupported = pollster::test)]
async fn a_context_larger_than_a_gpu_buffer_is_an_error() {
    let gpu = wgpu_device().await.expect("no wgpu adapter: WebGPU (browser) or Vulkan (native) is required");
    let config = LlamaConfig { heads: 128, kv_heads: 128, head_dim: 256, hidden: 64, ffn: 64, vocab: 256, max_seq: 65_535, ..LlamaConfig::tiny(256) };
    match Llama::random(config, 1, Placement::from(&gpu)) {
        Err(ModelError::Backend(message)) => assert!(message.contains("keys for this context") && message.contains("on the CPU"), "{message}"),
        Err(other) => panic!("{other}"),
        Ok(_) => panic!("4 GiB of keys in one buffer"),
    }
}
