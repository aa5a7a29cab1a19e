//! Prefill and decode speed of the WGSL forward pass natively, on the adapter wgpu comes up on,
//! for a model of SmolLM2-135M's shape with random f32 weights, or for a GGUF file's weights
//! (`--model FILE`, in its GPU form: runs of 4-, 6- or 8-bit values, 16-bit or f32 floats, see
//! shaders/weights.wgsl)
//! with made-up token ids: for machines the real model cannot be copied to (a lent GPU), where
//! a random-weight file of a larger model's shape can be written (`scripts/tiny-models.py
//! --shape`). Greedy, each token picked on the GPU (4 bytes read back), as the decode loop does;
//! medians of the rounds after a warm-up.
//!
//!     cargo run --release -p sieve-model --example gpu_speed -- [--model FILE] [PROMPT_TOKENS [NEW_TOKENS [ROUNDS]]]
//!
//! Prints one JSON line.

use std::time::Instant;

use pollster::block_on;
use sieve_model::decode::Picker;
use sieve_model::gpu::{default_adapter, wgpu_device};
use sieve_model::sampling::Sampling;
use sieve_model::{Gguf, KvCache, Llama, LlamaConfig, ModelError, Placement};

fn main() -> Result<(), ModelError> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let file = match args.iter().position(|a| a == "--model") {
        Some(at) => Some(args.drain(at..at + 2).nth(1).expect("--model takes a file")),
        None => None,
    };
    let args: Vec<usize> = args.iter().map(|a| a.parse().expect("counts are whole numbers")).collect();
    let (prompt_tokens, new_tokens, rounds) = (*args.first().unwrap_or(&266), *args.get(1).unwrap_or(&64), *args.get(2).unwrap_or(&3));
    let adapter = block_on(default_adapter());
    let device = block_on(wgpu_device()).map_err(|e| ModelError::Backend(format!("no wgpu adapter: {e:?}")))?;
    let context = prompt_tokens + new_tokens;
    let (model, name) = match &file {
        Some(file) => {
            let bytes = std::fs::read(file).map_err(|e| ModelError::Backend(format!("{file}: {e}")))?;
            let gguf = Gguf::parse(&bytes)?;
            let config = LlamaConfig::from_gguf(&gguf, context)?;
            (Llama::from_gguf(&gguf, config, Placement::from(&device))?, file.clone())
        }
        None => (Llama::random(LlamaConfig::smollm2_135m(context), 7, Placement::from(&device))?, "SmolLM2-135M shape, random f32 weights".into()),
    };
    let vocab = model.config().vocab;
    let prompt: Vec<u32> = (0..prompt_tokens as u32).map(|i| (i * 7919 + 13) % vocab as u32).collect();
    let mask = vec![u32::MAX; vocab.div_ceil(32)];
    // Where a decode step's time goes: recording the pass, submitting it, picking (waiting for
    // the device and reading the id back), in seconds summed over the steps after the first.
    let split = std::cell::Cell::new([0.0f64; 3]);
    // One generation: (seconds to the first token, seconds for the rest).
    let generate = |tokens: usize| -> Result<(f64, f64), ModelError> {
        let mut cache = KvCache::new(&model);
        let start = Instant::now();
        let mut next = vec![];
        let mut first = 0.0;
        let mut parts = [0.0f64; 3];
        for step in 0..tokens {
            let input = if step == 0 { &prompt[..] } else { &next[..] };
            let t0 = Instant::now();
            let logits = model.forward(input, &mut cache)?;
            let t1 = Instant::now();
            model.flush()?;
            let t2 = Instant::now();
            let token = block_on(Picker::Gpu.pick(logits, &mask, vocab, &Sampling::GREEDY, step as u32))?;
            if step > 0 {
                for (p, d) in parts.iter_mut().zip([t1 - t0, t2 - t1, t2.elapsed()]) {
                    *p += d.as_secs_f64();
                }
            }
            next = vec![token];
            if step == 0 {
                first = start.elapsed().as_secs_f64();
            }
        }
        split.set(parts);
        Ok((first, start.elapsed().as_secs_f64() - first))
    };
    // Shader compiles and buffer pools are not counted.
    generate(4)?;
    let mut runs = (0..rounds.max(1)).map(|_| generate(new_tokens)).collect::<Result<Vec<_>, _>>()?;
    let median = |runs: &mut Vec<(f64, f64)>, key: fn(&(f64, f64)) -> f64| {
        runs.sort_by(|a, b| key(a).total_cmp(&key(b)));
        key(&runs[runs.len() / 2])
    };
    let (first, rest) = (median(&mut runs, |r| r.0), median(&mut runs, |r| r.1));
    println!(
        "{}",
        serde_json::json!({
            "adapter": format!("{adapter:?}"),
            "model": name,
            "prompt_tokens": prompt_tokens,
            "tokens": new_tokens,
            "rounds": rounds,
            "prefill_tokens_per_s": prompt_tokens as f64 / first,
            "decode_tokens_per_s": (new_tokens - 1) as f64 / rest,
            "launches_per_pass": model.launches_per_pass(),
            "weight_bytes": model.weight_bytes(),
            "decode_ms_per_step_record_submit_pick": split.get().map(|s| s * 1e3 / (new_tokens - 1).max(1) as f64),
        })
    );
    Ok(())
}
