//! Every architecture and weight type against an independent implementation: small random-weight
//! models that Hugging Face `transformers` built, ran in float32 and that `scripts/tiny-models.py`
//! wrote as GGUF the way llama.cpp's converter does (quantized matrices decoded by the `gguf`
//! package and loaded back, so the reference runs the weights the file holds). For each file,
//! with burn's ops, the CPU kernels (one and two threads natively, WebAssembly SIMD in the
//! browser) and the WGSL kernels (Vulkan natively, WebGPU in Chromium): the reference's top-5
//! logits at every step of its greedy run, and its greedy tokens.

use sieve_model::gpu::wgpu_device;
use sieve_model::{Architecture, Backend, Device, Gguf, KvCache, Llama, LlamaConfig, Placement};
use wasm_bindgen_test::wasm_bindgen_test;

/// The files `scripts/tiny-models.py` writes, by name (`NAME.json` and `NAME.gguf`).
const FIXTURES: [&str; 16] = [
    "llama", "llama3-rope", "qwen2", "qwen3", "phi3", "gemma3", "llama-f16", "llama-bf16", "llama-q8_0", "llama-q4_0", "llama-q4_1",
    "llama-q5_0", "llama-q5_1", "llama-q4_k", "llama-q5_k", "llama-q6_k",
];

/// Each fixture's reference run and GGUF bytes, read from `assets/tiny-models`; panics with the
/// fix when they are missing.
#[cfg(not(target_family = "wasm"))]
pub(crate) fn fixtures() -> Vec<(serde_json::Value, Vec<u8>)> {
    let dir = crate::common::package_dir().join("../../assets/tiny-models");
    let read = |file: String| {
        std::fs::read(dir.join(&file)).unwrap_or_else(|e| {
            panic!("{}/{file}: {e}\nrun `bash scripts/setup.sh` (or `python scripts/tiny-models.py assets/tiny-models`) to build the models", dir.display())
        })
    };
    FIXTURES.iter().map(|name| (serde_json::from_slice(&read(format!("{name}.json"))).expect("reference JSON"), read(format!("{name}.gguf")))).collect()
}

/// In the browser the fixtures are compiled in (scripts/test.sh builds them first).
#[cfg(target_family = "wasm")]
pub(crate) fn fixtures() -> Vec<(serde_json::Value, Vec<u8>)> {
    macro_rules! embedded {
        ($($name:literal),*) => {
            vec![$((
                serde_json::from_slice(include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/../../assets/tiny-models/", $name, ".json"))).expect("reference JSON"),
                include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/../../assets/tiny-models/", $name, ".gguf")).to_vec(),
            )),*]
        };
    }
    let fixtures = embedded!["llama", "llama3-rope", "qwen2", "qwen3", "phi3", "gemma3", "llama-f16", "llama-bf16", "llama-q8_0", "llama-q4_0", "llama-q4_1", "llama-q5_0", "llama-q5_1", "llama-q4_k", "llama-q5_k", "llama-q6_k"];
    assert_eq!(fixtures.len(), FIXTURES.len());
    fixtures
}

fn ids(v: &serde_json::Value) -> Vec<u32> {
    v.as_array().expect("array").iter().map(|x| x.as_u64().expect("id") as u32).collect()
}

async fn check(placement: impl Fn() -> Placement, backend: Backend) {
    let fixtures = fixtures();
    // Every architecture, and every weight type the reader knows.
    for arch in Architecture::ALL {
        assert!(fixtures.iter().any(|(r, _)| r["architecture"] == arch.name()), "no {} fixture", arch.name());
    }
    for ty in sieve_model::gguf::TensorType::ALL {
        assert!(fixtures.iter().any(|(r, _)| r["weights"] == format!("{ty:?}")), "no {ty:?} fixture");
    }
    for (reference, bytes) in fixtures {
        let name = reference["file"].as_str().unwrap();
        let gguf = Gguf::parse(&bytes).unwrap();
        let config = LlamaConfig::from_gguf(&gguf, 64).unwrap();
        assert_eq!(config.arch.name(), reference["architecture"], "{name}");
        let model = Llama::from_gguf(&gguf, config.clone(), placement()).unwrap();
        assert_eq!(model.backend(), backend, "{name}");
        let mut cache = KvCache::new(&model);
        let mut input = ids(&reference["prompt"]);
        let greedy = ids(&reference["greedy"]);
        for (step, (want, expected)) in greedy.iter().zip(reference["steps"].as_array().unwrap()).enumerate() {
            let logits = model.forward(&input, &mut cache).unwrap().into_vec().await.unwrap();
            for (id, value) in ids(&expected["ids"]).into_iter().zip(expected["logits"].as_array().unwrap()) {
                let (got, value) = (logits[id as usize], value.as_f64().unwrap() as f32);
                assert!((got - value).abs() <= 2e-3 * value.abs().max(1.0), "{name}, {backend:?}, step {step}: logit of {id} is {got}, reference {value}");
            }
            let argmax = (0..logits.len()).max_by(|&a, &b| logits[a].total_cmp(&logits[b])).unwrap() as u32;
            assert_eq!(argmax, *want, "{name}, {backend:?}: greedy token {step}");
            input = vec![*want];
        }
        if backend == Backend::Gpu {
            // Float matrices take the file's bytes on the GPU (F16 and BF16 ones stay 16-bit);
            // quantized ones at most half as much again (5-bit values in 6 bits, scales in f32:
            // Q5_K's 1 byte a weight against the file's 0.69).
            let float = ["F32", "F16", "BF16"].contains(&reference["weights"].as_str().unwrap());
            let most = if float { bytes.len() } else { 3 * bytes.len() / 2 };
            assert!(model.weight_bytes() <= most, "{name}: {} bytes of weights on the GPU, the file {}", model.weight_bytes(), bytes.len());
            let per_layer = 5 + usize::from(config.arch.qk_norm()) + 2 * usize::from(config.arch.post_norms());
            assert_eq!(model.launches_per_pass(), Some(2 + per_layer * config.layers), "{name}");
        }
    }
}

#[wasm_bindgen_test(unsupported = pollster::test)]
async fn burn_ops_match_transformers() {
    check(|| Placement::from(Device::flex()), Backend::Reference).await;
}

#[wasm_bindgen_test(unsupported = pollster::test)]
async fn cpu_kernels_match_transformers() {
    let threads: &[usize] = if cfg!(target_family = "wasm") { &[1] } else { &[1, 2] };
    for &threads in threads {
        check(|| Placement::Cpu { threads }, Backend::Cpu { threads }).await;
    }
}

#[wasm_bindgen_test(unsupported = pollster::test)]
async fn wgsl_kernels_match_transformers() {
    let device = wgpu_device().await.expect("no wgpu adapter: WebGPU (browser) or Vulkan (native) is required");
    check(|| Placement::from(device.clone()), Backend::Gpu).await;
}
