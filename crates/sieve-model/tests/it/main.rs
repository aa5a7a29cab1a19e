//! sieve-model's integration tests, in one binary so that burn and wgpu link once. Compiled to
//! wasm32 (`cargo test --target wasm32-unknown-unknown -p sieve-model --test it`, scripts/test.sh)
//! the GPU modules run in headless Chromium on WebGPU; the others need the file system, proptest
//! or a synchronous device setup, and run natively only.

// In a dedicated worker, so that loading the module and long synchronous tests never block the
// page's main thread, which chromedriver must reach within 30 s on each poll of the output.
#[cfg(target_family = "wasm")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_dedicated_worker);

// The GPU kernels, the tiny model's constrained generation, the WGSL and CPU forward passes,
// the CPU kernels and every architecture and weight type against transformers, models loaded as
// their files arrive, in the browser and natively.
mod cpu_kernels;
mod families;
mod forward;
mod gpu_kernels;
mod rng;
mod stream;
mod tiny_gpu;

#[cfg(not(target_family = "wasm"))]
mod chat;
#[cfg(not(target_family = "wasm"))]
mod common;
#[cfg(not(target_family = "wasm"))]
mod gguf;
#[cfg(not(target_family = "wasm"))]
mod parity;
#[cfg(not(target_family = "wasm"))]
mod pick_gpu;
#[cfg(not(target_family = "wasm"))]
mod tiny;
#[cfg(not(target_family = "wasm"))]
mod tokenizer_gguf;
#[cfg(not(target_family = "wasm"))]
mod tools;
