//! `sieve bench`: vocabulary preparation, compile and mask times.

use crate::args::{ConstraintArgs, TokenizerArgs};
use crate::fail::CliError;
use sieve_core::rng::Rng;
use clap::Args;
use serde_json::{Value, json};
use sieve_core::{Constraint, Limits, Matcher};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Measure the engine on one tokenizer and constraint.
#[derive(Args, Debug)]
pub struct BenchArgs {
    #[command(flatten)]
    pub tokenizer: TokenizerArgs,
    #[command(flatten)]
    pub constraint: ConstraintArgs,
    /// Texts to replay token by token: a MaskBench file or directory (its
    /// valid instances, serialized) or a text file (one text per line).
    /// Without it, random walks over the allowed tokens are timed.
    #[arg(long, value_name = "PATH")]
    pub texts: Option<PathBuf>,
    /// Write the replayed texts' token ids there, one JSON array per line
    /// (for replaying the same tokens elsewhere: benches/wasm-bench.sh).
    #[arg(long, value_name = "FILE", requires = "texts")]
    pub emit_tokens: Option<PathBuf>,
    /// At most this many texts (or random walks).
    #[arg(long, default_value_t = 200)]
    pub limit: usize,
    /// Tokens per random walk.
    #[arg(long, default_value_t = 64)]
    pub steps: usize,
    /// Compilations to time.
    #[arg(long, default_value_t = 20)]
    pub compiles: usize,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

fn percentiles(mut v: Vec<f64>) -> Value {
    if v.is_empty() {
        return json!(null);
    }
    v.sort_by(f64::total_cmp);
    let p = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
    let r = |x: f64| (x * 100.0).round() / 100.0;
    json!({ "count": v.len(), "p50": r(p(0.5)), "p90": r(p(0.9)), "p99": r(p(0.99)), "max": r(p(1.0)),
            "mean": r(v.iter().sum::<f64>() / v.len() as f64) })
}

fn maskbench_texts(path: &Path, out: &mut Vec<String>) -> Result<(), CliError> {
    let files: Vec<PathBuf> = if path.is_dir() {
        let mut f: Vec<PathBuf> = std::fs::read_dir(path)?.filter_map(|e| e.ok().map(|e| e.path())).collect();
        f.sort();
        f
    } else {
        vec![path.to_path_buf()]
    };
    for f in files {
        let text = std::fs::read_to_string(&f)?;
        match serde_json::from_str::<Value>(&text) {
            Ok(v) if v.get("tests").is_some() => {
                for t in v["tests"].as_array().into_iter().flatten() {
                    if t["valid"] == json!(true) {
                        out.push(serde_json::to_string(&t["data"])?);
                    }
                }
            }
            _ => out.extend(text.lines().filter(|l| !l.is_empty()).map(str::to_string)),
        }
    }
    Ok(())
}

/// Prints one JSON object with the figures (times in microseconds, except
/// the vocabulary preparation in milliseconds).
pub fn run(args: &BenchArgs) -> Result<i32, CliError> {
    let t0 = Instant::now();
    let loaded = args.tokenizer.load()?;
    let load_ms = t0.elapsed().as_secs_f64() * 1e3;
    let text = crate::args::read(&args.tokenizer.tokenizer)?;
    let t0 = Instant::now();
    let _ = sieve_core::Vocabulary::from_tokenizer_json(&text)?;
    let vocab_ms = t0.elapsed().as_secs_f64() * 1e3;
    let vocab = &loaded.vocab;

    let source = args.constraint.source()?;
    let mut compile_us = Vec::new();
    for _ in 0..args.compiles.max(1) {
        let t = Instant::now();
        let c = Constraint::compile(&source, &Limits::default())?;
        compile_us.push(t.elapsed().as_secs_f64() * 1e6);
        drop(c);
    }
    let constraint = Constraint::compile(&source, &Limits::default())?;
    let compiled_bytes = constraint.memory_bytes();

    let mut mask = vec![0u32; vocab.mask_words()];
    let mut mask_us = Vec::new();
    let mut errors = 0usize;
    let mut rejected = 0usize;
    let mut time_mask = |m: &mut Matcher, mask: &mut [u32], errors: &mut usize| {
        let t = Instant::now();
        let r = m.fill_next_token_bitmask(mask);
        mask_us.push(t.elapsed().as_secs_f64() * 1e6);
        if r.is_err() {
            *errors += 1;
        }
        r.is_ok()
    };
    if let Some(path) = &args.texts {
        let mut texts = Vec::new();
        maskbench_texts(path, &mut texts)?;
        texts.truncate(args.limit);
        let mut emitted = String::new();
        for text in &texts {
            let ids = loaded.encode(text)?;
            emitted += &format!("{}\n", json!(ids));
            let mut m = Matcher::new(&constraint, vocab);
            for &t in &ids {
                if !time_mask(&mut m, &mut mask, &mut errors) {
                    break;
                }
                if m.accept_token(t).is_err() {
                    rejected += 1;
                    break;
                }
            }
        }
        if let Some(f) = &args.emit_tokens {
            std::fs::write(f, emitted)?;
        }
    } else {
        let mut rng = Rng::new(args.seed);
        for _ in 0..args.limit {
            let mut m = Matcher::new(&constraint, vocab);
            for _ in 0..args.steps {
                if !time_mask(&mut m, &mut mask, &mut errors) {
                    break;
                }
                let allowed: Vec<u32> = (0..vocab.len() as u32)
                    .filter(|&t| mask[(t / 32) as usize] >> (t % 32) & 1 == 1 && !vocab.is_eos(t))
                    .collect();
                if allowed.is_empty() {
                    break;
                }
                m.accept_token(allowed[rng.below(allowed.len())])?;
            }
        }
    }
    println!(
        "{}",
        json!({
            "tokenizer": args.tokenizer.tokenizer.display().to_string(),
            "vocab_tokens": vocab.len(),
            "tokenizer_load_ms": (load_ms * 10.0).round() / 10.0,
            "vocab_prepare_ms": (vocab_ms * 10.0).round() / 10.0,
            "compile_us": percentiles(compile_us),
            "constraint_bytes_compiled": compiled_bytes,
            "constraint_bytes_after_masks": constraint.memory_bytes(),
            "mask_us": percentiles(mask_us),
            "mask_errors": errors,
            "texts_rejected": rejected,
        })
    );
    Ok(0)
}
