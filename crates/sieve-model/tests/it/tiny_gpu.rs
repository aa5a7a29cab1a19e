//! A constrained generation with the tiny random-weight model on a real wgpu device: WebGPU in
//! Chromium under `cargo test --target wasm32-unknown-unknown` (SwiftShader, see
//! `webdriver.json`), Vulkan natively (lavapipe on a machine without a GPU). The constraint is sieve-core's, compiled from
//! a JSON Schema over SmolLM2's real tokenizer; the output must satisfy it, and greedy decoding
//! must pick the same tokens with the GPU picking kernels, with the CPU picker on the same
//! device, and on burn's CPU backend. No adapter is a failure, never a skip.

use std::sync::Arc;

use serde_json::json;
use sieve_core::json_schema::{JsonSchemaOptions, Whitespace};
use sieve_core::{Constraint, Matcher, Vocabulary};
use sieve_model::decode::{GenerateConfig, Generation, Picker, StopReason, generate};
use sieve_model::gpu::wgpu_device;
use sieve_model::sampling::Sampling;
use sieve_model::{Device, Llama, LlamaConfig, Tokenizer};
use wasm_bindgen_test::wasm_bindgen_test;

/// SmolLM2's tokenizer.json (the committed fixture, embedded: the browser has no file system).
const TOKENIZER_JSON: &str = include_str!("../../../sieve-core/tests/fixtures/smollm2.json");

/// The tokenizer with `<|im_end|>`, SmolLM2-Instruct's end of sequence, as EOS.
fn tokenizer() -> Tokenizer {
    let parsed: serde_json::Value = serde_json::from_str(TOKENIZER_JSON).expect("tokenizer.json parses");
    let eos = parsed["added_tokens"]
        .as_array()
        .expect("added_tokens")
        .iter()
        .find(|t| t["content"] == "<|im_end|>")
        .and_then(|t| t["id"].as_u64())
        .expect("<|im_end|> is an added token");
    Tokenizer::from_json(TOKENIZER_JSON.to_string(), eos).expect("tokenizer loads")
}

fn schema() -> serde_json::Value {
    json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "maxLength": 6},
            "age": {"type": "integer", "minimum": 0, "maximum": 120},
            "pet": {"enum": ["cat", "dog", "none"]}
        },
        "required": ["name", "age", "pet"],
        "additionalProperties": false
    })
}

fn constraint() -> Constraint {
    // Compact: a random-weight model would otherwise happily emit whitespace until max_tokens.
    let options = JsonSchemaOptions { whitespace: Whitespace::Compact, ..Default::default() };
    Constraint::json_schema(&schema(), &options).expect("schema compiles").0
}

async fn run(model: &Llama, tok: &Tokenizer, vocab: &Arc<Vocabulary>, picker: Picker, jump_forward: bool) -> Generation {
    let c = constraint();
    let mut matcher = Matcher::new(&c, vocab);
    let prompt = tok.encode("Give me a person as JSON:").expect("prompt encodes");
    let config = GenerateConfig { max_tokens: 64, sampling: Sampling::GREEDY, jump_forward, picker };
    generate(model, tok, &mut matcher, &prompt, &config, &|| 0.0).await.expect("generation runs")
}

fn check(out: &Generation, what: &str) {
    assert!(
        matches!(out.stop, StopReason::ConstraintTerminated | StopReason::EndOfSequence),
        "{what}: stopped by {:?} after {:?}",
        out.stop,
        out.text
    );
    assert!(constraint().matches(out.text.as_bytes()).unwrap(), "{what}: {:?} does not match the schema", out.text);
    let value: serde_json::Value = serde_json::from_str(&out.text).unwrap_or_else(|e| panic!("{what}: {:?}: {e}", out.text));
    assert!(value["name"].as_str().is_some_and(|s| s.chars().count() <= 6), "{what}: {value}");
    assert!(value["age"].as_u64().is_some_and(|a| a <= 120), "{what}: {value}");
    assert!(["cat", "dog", "none"].contains(&value["pet"].as_str().unwrap_or("")), "{what}: {value}");
}

#[wasm_bindgen_test(unsupported = pollster::test)]
async fn tiny_model_generates_valid_json_on_the_gpu() {
    let gpu = wgpu_device().await.expect("no wgpu adapter: WebGPU (browser) or Vulkan (native) is required");
    let tok = tokenizer();
    let vocab = Arc::new(
        Vocabulary::from_tokenizer_json(TOKENIZER_JSON)
            .and_then(|v| v.with_eos_ids(&[tok.eos()]))
            .expect("vocabulary"),
    );
    let config = LlamaConfig::tiny(tok.vocab_size());
    let on_gpu = Llama::random(config.clone(), 7, &gpu).expect("tiny model on the GPU");

    // The WGSL masked-argmax kernel, with and without jump-forward.
    let plain = run(&on_gpu, &tok, &vocab, Picker::Gpu, false).await;
    check(&plain, "gpu picker");
    assert_eq!(plain.stats.forced_tokens, 0);
    assert_eq!(plain.stats.forward_passes, plain.tokens.len());
    let jumped = run(&on_gpu, &tok, &vocab, Picker::Gpu, true).await;
    check(&jumped, "gpu picker, jump-forward");
    assert!(jumped.stats.forced_tokens > 0, "the schema forces `{{\"name\":\"` at least");
    assert!(jumped.stats.forward_passes < plain.stats.forward_passes);

    // The same greedy choice picked on the CPU from the read-back logits row...
    let cpu_pick = run(&on_gpu, &tok, &vocab, Picker::Cpu, false).await;
    assert_eq!(cpu_pick.tokens, plain.tokens, "GPU picker {:?} vs CPU picker {:?}", plain.text, cpu_pick.text);
    // ...and the whole model on burn's CPU backend, same weights (same seed).
    let on_cpu = Llama::random(config, 7, Device::flex()).expect("tiny model on the CPU");
    let cpu = run(&on_cpu, &tok, &vocab, Picker::Cpu, false).await;
    assert_eq!(cpu.tokens, plain.tokens, "GPU {:?} vs CPU backend {:?}", plain.text, cpu.text);
}
