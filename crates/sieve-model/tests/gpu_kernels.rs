//! GPU kernels against their CPU references, on a real wgpu device.
//!
//! Natively this runs on whatever Vulkan adapter wgpu finds (lavapipe on a
//! machine without a GPU); under `wasm-pack test --headless --chrome` it runs on
//! WebGPU in Chromium (SwiftShader, see `webdriver.json`). No adapter is a
//! failure, never a skip.

use burn::tensor::{Tensor, TensorData};
use sieve_model::gpu::wgpu_device;
use sieve_model::kernels::{apply_bitmask, apply_bitmask_reference, mask_words};
use wasm_bindgen_test::wasm_bindgen_test;

wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

/// A small deterministic generator (xorshift64*), so failures replay exactly.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn logit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32 * 20.0 - 10.0
    }
}

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
