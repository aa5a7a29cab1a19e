//! GPU kernels against their CPU references, on a real wgpu device: the bitmask, and the masked
//! argmax and sampling (random logits with ties and NaNs, random masks, vocabulary cuts).
//!
//! Natively this runs on whatever Vulkan adapter wgpu finds (lavapipe on a
//! machine without a GPU); under `cargo test --target wasm32-unknown-unknown` it runs on
//! WebGPU in Chromium (SwiftShader, see `webdriver.json`). No adapter is a
//! failure, never a skip.

use burn::tensor::{Tensor, TensorData};
use sieve_model::gpu::wgpu_device;
use sieve_model::kernels::{apply_bitmask, apply_bitmask_reference, mask_words, masked_pick};
use sieve_model::sampling::{Sampling, pick_reference};
use wasm_bindgen_test::wasm_bindgen_test;

use crate::rng::{Floats, Rng};

#[wasm_bindgen_test(unsupported = pollster::test)]
async fn apply_bitmask_matches_cpu_reference() {
    let device = wgpu_device()
        .await
        .expect("no wgpu adapter: WebGPU (browser) or Vulkan (native) is required");
    let mut rng = Rng(0x5eed_0001);
    // Widths around word boundaries, a logits row wider than the vocabulary,
    // and the real model's width.
    for (rows, width, vocab_size) in [(1, 31, 31), (3, 64, 60), (2, 100, 97), (1, 49_152, 49_152)] {
        let logits: Vec<f32> = (0..rows * width).map(|_| rng.logit()).collect();
        let mask: Vec<u32> = (0..rows * mask_words(width)).map(|_| rng.next() as u32).collect();
        let mut expected = logits.clone();
        apply_bitmask_reference(&mut expected, width, &mask, vocab_size);

        let tensor = Tensor::<2>::from_data(TensorData::new(logits, [rows, width]), &device);
        let masked = apply_bitmask(tensor, &mask, vocab_size).expect("launch");
        let actual = masked
            .into_data_async()
            .await
            .expect("readback")
            .try_to_vec::<f32>()
            .expect("f32 data");
        assert_eq!(actual.len(), expected.len());
        for (i, (a, e)) in actual.iter().zip(&expected).enumerate() {
            assert!(
                a == e,
                "rows={rows} width={width} vocab={vocab_size}: logit {i} is {a}, expected {e}"
            );
        }
        let forbidden = expected.iter().filter(|v| v.is_infinite()).count();
        assert!(forbidden > 0 && forbidden < expected.len(), "the mask must both allow and forbid");
    }
}

#[wasm_bindgen_test(unsupported = pollster::test)]
async fn apply_bitmask_rejects_a_short_mask() {
    let device = wgpu_device().await.expect("no wgpu adapter");
    let tensor = Tensor::<2>::zeros([2, 40], &device);
    let err = apply_bitmask(tensor, &[0; 3], 40).expect_err("2 rows x 2 words needed");
    assert_eq!(err.to_string(), "bitmask has 3 words, expected 4");
}

/// Random logits with exact ties and NaNs, a mask of the given density, and a vocabulary cut
/// below or past the row's width.
fn pick_case(rng: &mut Rng, width: usize, density: u64) -> (Vec<f32>, Vec<u32>, usize) {
    let logits = (0..width)
        .map(|_| match rng.next() % 100 {
            0 => f32::NAN,
            1..=4 => 3.0,
            _ => rng.logit(),
        })
        .collect();
    let mask = (0..mask_words(width))
        .map(|_| (0..32).fold(0u32, |m, b| if rng.next() % 100 < density { m | 1 << b } else { m }))
        .collect();
    let vocab = match rng.next() % 3 {
        0 => width + 40,
        1 => width,
        _ => (rng.next() as usize % width).max(1),
    };
    (logits, mask, vocab)
}

#[wasm_bindgen_test(unsupported = pollster::test)]
async fn masked_argmax_and_sampling_match_cpu_reference() {
    let device = wgpu_device().await.expect("no wgpu adapter");
    let mut rng = Rng(0x5eed_0002);
    for case in 0..40 {
        let width = [1, 31, 32, 33, 1000, 3001, 49_152][case % 7];
        let density = [0, 3, 50, 100][case % 4];
        let (logits, mask, vocab) = pick_case(&mut rng, width, density);
        let sampled = case % 2 == 1;
        let sampling = match sampled {
            false => Sampling::GREEDY,
            true => Sampling {
                temperature: 0.2 + (rng.next() % 180) as f32 / 100.0,
                top_k: (rng.next() % 60) as u32,
                top_p: 0.1 + (rng.next() % 110) as f32 / 100.0,
                seed: rng.next(),
            },
        };
        let step = rng.next() as u32;
        let want = pick_reference(&logits, &mask, vocab, &sampling, step).ok();
        let tensor = Tensor::<2>::from_data(TensorData::new(logits.clone(), [1, width]), &device);
        let got = masked_pick(tensor, &mask, vocab, &sampling, step).await.ok();
        let what = format!("case {case}: width {width}, density {density}%, vocab {vocab}, {sampling:?}, step {step}");
        assert_eq!(got, want, "{what}");
    }
}
