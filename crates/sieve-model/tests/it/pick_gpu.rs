//! The masked argmax and masked sampling kernels against their CPU reference on random logits
//! and masks, and the whole decode loop with GPU picking against CPU picking (wgpu natively:
//! lavapipe where there is no GPU; fails loudly when no adapter comes up).

use crate::common;
use crate::rng::Rng;

use burn::tensor::{Device, Tensor, TensorData};
use pollster::block_on;
use proptest::prelude::*;
use sieve_model::decode::{GenerateConfig, Picker, Unconstrained, generate};
use sieve_model::gpu::wgpu_device;
use sieve_model::kernels::masked_pick;
use sieve_model::sampling::{Sampling, pick_reference};
use sieve_model::{Llama, LlamaConfig, ModelError};

fn wgpu() -> Device {
    block_on(wgpu_device()).unwrap_or_else(|e| panic!("no wgpu adapter ({e}); install a Vulkan driver (mesa-vulkan-drivers) or a GPU"))
}

/// Random logits (a few exact ties and NaNs) and a random mask over `width` ids.
fn case(seed: u64, width: usize, density: f64) -> (Vec<f32>, Vec<u32>) {
    let mut rng = Rng::new(seed);
    let mut next = move || rng.unit();
    let logits = (0..width)
        .map(|_| match next() {
            r if r < 0.01 => f32::NAN,
            r if r < 0.05 => 3.0,
            _ => ((next() - 0.5) * 16.0) as f32,
        })
        .collect();
    let mut mask = vec![0u32; width.div_ceil(32)];
    for i in 0..mask.len() * 32 {
        if next() < density {
            mask[i / 32] |= 1 << (i % 32);
        }
    }
    (logits, mask)
}

fn gpu_pick(logits: &[f32], mask: &[u32], vocab: usize, sampling: &Sampling, step: u32) -> Result<u32, ModelError> {
    let t = Tensor::<2>::from_data(TensorData::new(logits.to_vec(), [1, logits.len()]), &wgpu());
    block_on(masked_pick(t, mask, vocab, sampling, step))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn argmax_matches_reference(seed in any::<u64>(), width in 1usize..3000, density in 0.0f64..1.0, cut in 0usize..3000) {
        let (logits, mask) = case(seed, width, density);
        let vocab = cut.min(width + 40);
        let want = pick_reference(&logits, &mask, vocab, &Sampling::GREEDY, 0).ok();
        prop_assert_eq!(gpu_pick(&logits, &mask, vocab, &Sampling::GREEDY, 0).ok(), want);
    }

    #[test]
    fn sampling_matches_reference(
        seed in any::<u64>(), width in 1usize..3000, density in 0.05f64..1.0,
        temperature in 0.2f32..2.0, top_k in 0u32..60, top_p in 0.1f32..1.2, step in any::<u32>(),
    ) {
        let (logits, mask) = case(seed, width, density);
        let sampling = Sampling { temperature, top_k, top_p, seed: seed.rotate_left(17) };
        let want = pick_reference(&logits, &mask, width, &sampling, step).ok();
        prop_assert_eq!(gpu_pick(&logits, &mask, width, &sampling, step).ok(), want);
    }
}

#[test]
fn full_vocabulary_row_and_empty_mask() {
    let (logits, mask) = case(3, 49152, 0.3);
    for sampling in [Sampling::GREEDY, Sampling { temperature: 0.8, top_k: 40, top_p: 0.9, seed: 5 }] {
        for step in 0..4 {
            let want = pick_reference(&logits, &mask, 49152, &sampling, step).unwrap();
            assert_eq!(gpu_pick(&logits, &mask, 49152, &sampling, step).unwrap(), want);
        }
        let none = vec![0u32; mask.len()];
        assert!(matches!(gpu_pick(&logits, &none, 49152, &sampling, 0), Err(ModelError::Constraint(_))));
    }
}

#[test]
fn decode_loop_picks_the_same_on_gpu_and_cpu() {
    let model = Llama::random(LlamaConfig::tiny(49152), 11, wgpu()).unwrap();
    let bytes = common::gguf_bytes();
    let tok = sieve_model::Tokenizer::from_gguf(&sieve_model::Gguf::parse(&bytes).unwrap()).unwrap();
    let prompt = tok.encode("Hello there").unwrap();
    let clock = || 0.0;
    for sampling in [Sampling::GREEDY, Sampling { temperature: 1.0, top_k: 20, top_p: 0.9, seed: 9 }] {
        let run = |picker| {
            let config = GenerateConfig { max_tokens: 10, sampling, jump_forward: true, picker };
            block_on(generate(&model, &tok, &mut Unconstrained::new(49152), &prompt, &config, &clock)).unwrap()
        };
        assert_eq!(run(Picker::Gpu).tokens, run(Picker::Cpu).tokens);
    }
}
