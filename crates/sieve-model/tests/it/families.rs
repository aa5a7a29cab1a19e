//! Every architecture and weight type against an independent implementation: small random-weight
//! models that Hugging Face `transformers` built, ran in float32 and that `scripts/tiny-models.py`
//! wrote as GGUF the way llama.cpp's converter does (quantized matrices decoded by the `gguf`
//! package and loaded back, so the reference runs the weights the file holds). For each file,
//! with burn's ops, the CPU kernels on one and two threads and the WGSL kernels: the reference's
//! top-5 logits at every step of its greedy run, and its greedy tokens.

use sieve_model::{Architecture, Backend, Gguf, KvCache, Llama, LlamaConfig, Placement};

use crate::common;

/// The fixtures' reference runs with their GGUF bytes; panics with the fix when they are missing.
fn fixtures() -> Vec<(serde_json::Value, Vec<u8>)> {
    let dir = common::package_dir().join("../../assets/tiny-models");
    let missing = |e: std::io::Error| -> ! {
        panic!("{}: {e}\nrun `bash scripts/setup.sh` (or `python scripts/tiny-models.py assets/tiny-models`) to build the models", dir.display())
    };
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| missing(e))
        .map(|entry| entry.expect("directory entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "json"))
        .collect();
    names.sort();
    let fixtures: Vec<_> = names
        .iter()
        .map(|path| {
            let reference: serde_json::Value = serde_json::from_slice(&std::fs::read(path).unwrap_or_else(|e| missing(e))).expect("reference JSON");
            let gguf = std::fs::read(dir.join(reference["file"].as_str().expect("file name"))).unwrap_or_else(|e| missing(e));
            (reference, gguf)
        })
        .collect();
    // Every architecture, and every weight type the script writes.
    for arch in Architecture::ALL {
        assert!(fixtures.iter().any(|(r, _)| r["architecture"] == arch.name()), "no {} model in {}", arch.name(), dir.display());
    }
    assert!(fixtures.len() >= 14, "{} fixtures in {}", fixtures.len(), dir.display());
    fixtures
}

fn check(placement: impl Fn() -> Placement, backend: impl Fn(Architecture) -> Backend) {
    for (reference, bytes) in fixtures() {
        let name = reference["file"].as_str().unwrap();
        let gguf = Gguf::parse(&bytes).unwrap();
        let config = LlamaConfig::from_gguf(&gguf, 64).unwrap();
        assert_eq!(config.arch.name(), reference["architecture"], "{name}");
        let model = Llama::from_gguf(&gguf, config.clone(), placement()).unwrap();
        assert_eq!(model.backend(), backend(config.arch), "{name}");
        let mut cache = KvCache::new(&model);
        let mut input = common::ids(&reference["prompt"]);
        let greedy = common::ids(&reference["greedy"]);
        for (step, (want, expected)) in greedy.iter().zip(reference["steps"].as_array().unwrap()).enumerate() {
            let logits = pollster::block_on(model.forward(&input, &mut cache).unwrap().into_vec()).unwrap();
            for (id, value) in common::ids(&expected["ids"]).into_iter().zip(expected["logits"].as_array().unwrap()) {
                let (got, value) = (logits[id as usize], value.as_f64().unwrap() as f32);
                assert!((got - value).abs() <= 2e-3 * value.abs().max(1.0), "{name}, {:?}, step {step}: logit of {id} is {got}, reference {value}", model.backend());
            }
            let argmax = (0..logits.len()).max_by(|&a, &b| logits[a].total_cmp(&logits[b])).unwrap() as u32;
            assert_eq!(argmax, *want, "{name}, {:?}: greedy token {step}", model.backend());
            input = vec![*want];
        }
        if model.backend() == Backend::Gpu {
            let per_layer = 5 + usize::from(config.arch.qk_norm()) + 2 * usize::from(config.arch.post_norms());
            assert_eq!(model.launches_per_pass(), Some(2 + per_layer * config.layers), "{name}");
        }
    }
}

#[test]
fn burn_ops_match_transformers() {
    check(|| Placement::from(common::cpu()), |_| Backend::Reference);
}

#[test]
fn cpu_kernels_match_transformers() {
    for threads in [1, 2] {
        check(|| Placement::Cpu { threads }, |_| Backend::Cpu { threads });
    }
}

#[test]
fn wgsl_kernels_match_transformers() {
    let device = pollster::block_on(sieve_model::gpu::wgpu_device()).expect("no wgpu adapter: Vulkan is required");
    check(|| Placement::from(device.clone()), |_| Backend::Gpu);
}
