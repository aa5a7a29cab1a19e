//! The real SmolLM2-135M-Instruct against an independent float32 reference: tokenization, the
//! top-10 last-position logits (ids in order, values within 0.02) and 32 greedy tokens, with
//! burn's ops on the CPU, with the WGSL kernels on wgpu (lavapipe without a GPU) and with the
//! CPU kernels on the GGUF's blocks, on one thread and on two.

use crate::common;

use sieve_model::{Backend, Gguf, KvCache, Llama, LlamaConfig, Logits, Placement, Tokenizer};

fn logits_vec(logits: Logits) -> Vec<f32> {
    pollster::block_on(logits.into_vec()).expect("f32 logits")
}

fn argmax(v: &[f32]) -> u32 {
    let mut best = 0;
    for (i, &x) in v.iter().enumerate() {
        if x > v[best] {
            best = i;
        }
    }
    best as u32
}

#[test]
fn tokenizer_matches_reference() {
    let bytes = common::gguf_bytes();
    let gguf = Gguf::parse(&bytes).unwrap();
    let tok = Tokenizer::from_gguf(&gguf).unwrap();
    assert_eq!(tok.vocab_size(), 49152);
    assert_eq!(tok.eos(), 2);
    for case in common::reference()["cases"].as_array().unwrap() {
        let prompt = case["prompt"].as_str().unwrap();
        assert_eq!(tok.encode(prompt).unwrap(), common::ids(&case["prompt_ids"]), "prompt {prompt:?}");
        let greedy = common::ids(&case["greedy_32_ids"]);
        let text = tok.decode(&greedy).unwrap();
        assert_eq!(text, case["greedy_32_text"].as_str().unwrap());
        // Token bytes spell the decoded text.
        let spelled: Vec<u8> = greedy.iter().flat_map(|&t| tok.token_bytes(t).to_vec()).collect();
        assert_eq!(spelled, text.as_bytes());
    }
}

#[test]
fn logits_and_greedy_tokens_match_reference_with_burn_ops() {
    check_logits_and_greedy_tokens(Placement::from(common::cpu()), Backend::Reference);
}

#[test]
fn logits_and_greedy_tokens_match_reference_with_the_wgsl_kernels() {
    let device = pollster::block_on(sieve_model::gpu::wgpu_device()).expect("no wgpu adapter: Vulkan is required");
    check_logits_and_greedy_tokens(Placement::from(device), Backend::Gpu);
}

#[test]
fn logits_and_greedy_tokens_match_reference_with_the_cpu_kernels() {
    for threads in [1, 2] {
        check_logits_and_greedy_tokens(Placement::Cpu { threads }, Backend::Cpu { threads });
    }
}

/// `backend` is what the model placed by `placement` must report.
fn check_logits_and_greedy_tokens(placement: Placement, backend: Backend) {
    let bytes = common::gguf_bytes();
    let gguf = Gguf::parse(&bytes).unwrap();
    let config = LlamaConfig::from_gguf(&gguf, 512).unwrap();
    assert_eq!(config, LlamaConfig::smollm2_135m(512));
    let model = Llama::from_gguf(&gguf, config, placement).unwrap();
    assert_eq!(model.backend(), backend);
    let mut inconsistent = 0;
    for case in common::reference()["cases"].as_array().unwrap() {
        let prompt = common::ids(&case["prompt_ids"]);
        let mut cache = KvCache::new(&model);
        let mut logits = logits_vec(model.forward(&prompt, &mut cache).unwrap());
        let mut order: Vec<usize> = (0..logits.len()).collect();
        order.sort_by(|&a, &b| logits[b].total_cmp(&logits[a]));
        for (rank, want) in case["last_logits_top10"].as_array().unwrap().iter().enumerate() {
            let (id, value) = (want[0].as_u64().unwrap() as usize, want[1].as_f64().unwrap() as f32);
            assert_eq!(order[rank], id, "rank {rank} of {:?}", case["prompt"]);
            assert!((logits[id] - value).abs() <= 0.02, "logit of {id}: {} vs {value}", logits[id]);
        }
        // Greedy continuation fed the reference's tokens: at every step our argmax must be the
        // reference's next token, so a free-running greedy run gives the same 32 tokens. The
        // reference's greedy run for the JSON prompt disagrees with its own logits (they rank
        // 107 `{` above 3725 three backticks, the run starts with 3725, and diverges again at
        // token 30), so it was not computed from these logits; that one case is counted and
        // its greedy run left out.
        let greedy = common::ids(&case["greedy_32_ids"]);
        if greedy[0] != order[0] as u32 {
            inconsistent += 1;
            continue;
        }
        for (i, &want) in greedy.iter().enumerate() {
            let got = argmax(&logits);
            let (a, b) = (logits[got as usize], logits[want as usize]);
            assert_eq!(got, want, "greedy token {i} of {:?}: logits {a} vs {b}", case["prompt"]);
            logits = logits_vec(model.forward(&[want], &mut cache).unwrap());
        }
    }
    assert_eq!(inconsistent, 1, "the reference file changed: review the greedy exception");
    let launches = (backend == Backend::Gpu).then_some(2 + 5 * 30);
    assert_eq!(model.launches_per_pass(), launches);
}
