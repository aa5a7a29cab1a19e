//! `sieve bench-decode`: the model's prefill and decode speed, and what the constraint and
//! jump-forward change about it, measured in one run on one device.
//!
//! Greedy decoding of one prompt, three ways per round (the last two only with a constraint),
//! rounds interleaved so that a noisy machine weighs on all three alike:
//!
//! 1. free text of exactly `n` tokens (the end of sequence is masked out): one prefill, then
//!    one forward pass per token; `n` is the constrained run's length, or `--max-tokens`;
//! 2. under the constraint with jump-forward off: the same number of forward passes;
//! 3. under the constraint with jump-forward on: the same text (a prefix of one another when
//!    `--max-tokens` cuts them short), in fewer passes.
//!
//! The figures are medians over the rounds; a first generation (shader compiles, caches) is
//! not counted. Prefill is the prompt's tokens over the time to the first token, decode the
//! tokens after the first over the time after it, both of free decoding.

use std::path::PathBuf;
use std::time::Instant;

use clap::Args;
use serde_json::{Value, json};
use sieve_core::Matcher;
use sieve_model::decode::{GenerateConfig, Generation, StopReason, TokenConstraint, Unconstrained, generate};
use sieve_model::sampling::Sampling;

use crate::fail::CliError;
use crate::generate::{DeviceChoice, GenerateConstraint, Loaded};

/// Measure decoding with and without a constraint and jump-forward.
#[derive(Args, Debug)]
pub struct DecodeBenchArgs {
    /// The model: a llama-architecture GGUF (SmolLM2-135M-Instruct Q4_1).
    #[arg(long, value_name = "FILE")]
    pub model: PathBuf,
    /// The constraint to compare free decoding with (none: free decoding only).
    #[command(flatten)]
    pub constraint: GenerateConstraint,
    /// The prompt, as a user message in the model's chat template (it may start with `-`).
    #[arg(long, allow_hyphen_values = true)]
    pub prompt: String,
    /// Take the prompt as it is, without the chat template.
    #[arg(long)]
    pub raw: bool,
    /// Most tokens of the constrained output; the free output's length without a constraint.
    #[arg(long, default_value_t = 64)]
    pub max_tokens: usize,
    /// Rounds of the three generations.
    #[arg(long, default_value_t = 3)]
    pub rounds: usize,
    /// Where the model runs.
    #[arg(long, value_enum, default_value_t = DeviceChoice::Auto)]
    pub device: DeviceChoice,
    /// CPU threads when the model runs on the CPU (0: all the machine has).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
}

/// One timed generation.
struct Run {
    out: Generation,
    ms: f64,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// Prints one JSON object (one line) with the figures; returns the exit status.
pub fn run(args: &DecodeBenchArgs) -> Result<i32, CliError> {
    let constraint = args.constraint.compile()?;
    if args.rounds == 0 || args.max_tokens < 2 {
        return Err(CliError::new("--rounds must be at least 1 and --max-tokens at least 2"));
    }
    let loaded = Loaded::new(&args.model, args.device, args.threads)?;
    let vocab = loaded.vocabulary()?;
    let Loaded { model, tokenizer, picker } = &loaded;
    let picker = *picker;
    let prompt = match args.raw {
        true => tokenizer.encode_prompt(&args.prompt)?,
        false => tokenizer.encode_prompt(&tokenizer.chat_prompt(&[serde_json::json!({"role": "user", "content": args.prompt})], &Default::default())?)?,
    };

    let origin = Instant::now();
    let clock = || origin.elapsed().as_secs_f64() * 1000.0;
    let timed = |c: &mut dyn TokenConstraint, max_tokens: usize, jump_forward: bool| -> Result<Run, CliError> {
        let config = GenerateConfig { max_tokens, sampling: Sampling::GREEDY, jump_forward, picker };
        let t0 = clock();
        let out = pollster::block_on(generate(model, tokenizer, c, &prompt, &config, &clock))?;
        Ok(Run { out, ms: clock() - t0 })
    };
    let free = |n: usize| timed(&mut Unconstrained::without_end(model.config().vocab, tokenizer.eos()), n, false);
    let (mut plain, mut masked, mut jumped) = (vec![], vec![], vec![]);
    match &constraint {
        None => {
            free(args.max_tokens)?; // compiles the shaders, warms the caches
            for _ in 0..args.rounds {
                plain.push(free(args.max_tokens)?);
            }
        }
        Some(constraint) => {
            let constrained = |jump_forward: bool| timed(&mut Matcher::new(constraint, &vocab), args.max_tokens, jump_forward);
            constrained(false)?;
            for _ in 0..args.rounds {
                let off = constrained(false)?;
                let n = off.out.tokens.len();
                let on = constrained(true)?;
                // Jump-forward spends fewer tokens on the same text, so when `max_tokens` cuts the
                // output short, the run without it stops earlier in the same text.
                let (a, b) = (&off.out.text, &on.out.text);
                let same = match (off.out.stop, on.out.stop) {
                    (StopReason::MaxTokens, _) | (_, StopReason::MaxTokens) => a.starts_with(b.as_str()) || b.starts_with(a.as_str()),
                    _ => a == b,
                };
                if !same {
                    return Err(CliError::new(format!("jump-forward changed the greedy output: {a:?} without, {b:?} with")));
                }
                plain.push(free(n)?);
                masked.push(off);
                jumped.push(on);
            }
        }
    }

    let per_token = |runs: &[Run]| median(runs.iter().map(|r| r.ms / r.out.tokens.len().max(1) as f64).collect());
    let total = |runs: &[Run]| median(runs.iter().map(|r| r.ms).collect());
    let summary = |runs: &[Run]| -> Value {
        let last = &runs[runs.len() - 1].out.stats;
        json!({
            "completion_tokens": last.completion_tokens,
            "forward_passes": last.forward_passes,
            "ms": round2(total(runs)),
            "ms_per_token": round2(per_token(runs)),
            "mask_us_p50": round2(last.mask_us_quantile(0.5)),
            "mask_us_p99": round2(last.mask_us_quantile(0.99)),
        })
    };
    // Free decoding's first token comes after the prompt's prefill; each later one is a pass.
    let first = |r: &Run| r.out.stats.first_token_ms.unwrap_or(r.ms);
    let prefill = median(plain.iter().map(|r| prompt.len() as f64 * 1000.0 / first(r)).collect());
    let decode = median(plain.iter().map(|r| r.out.tokens.len().saturating_sub(1) as f64 * 1000.0 / (r.ms - first(r))).collect());
    let mut report = json!({
        "device": loaded.device().0,
        "threads": loaded.device().1,
        "launches_per_pass": model.launches_per_pass(),
        "prompt_tokens": prompt.len(),
        "rounds": args.rounds,
        "text": plain[0].out.text,
        "unconstrained": summary(&plain),
        "prefill_tokens_per_s": round2(prefill),
        "decode_tokens_per_s": round2(decode),
        "tokens_per_s_unconstrained": round2(1000.0 / per_token(&plain)),
    });
    if !masked.is_empty() {
        let ratios = |a: &[Run], b: &[Run]| median(a.iter().zip(b).map(|(a, b)| a.ms / b.ms).collect());
        let (off_passes, on_passes) = (masked[0].out.stats.forward_passes, jumped[0].out.stats.forward_passes);
        let more = json!({
            "text": masked[0].out.text,
            "constrained": summary(&masked),
            "jump_forward": summary(&jumped),
            "constrained_overhead_pct": round2((ratios(&masked, &plain) - 1.0) * 100.0),
            "jump_forward_fewer_passes_pct": round2((1.0 - on_passes as f64 / off_passes.max(1) as f64) * 100.0),
            "jump_forward_less_time_pct": round2((1.0 - ratios(&jumped, &masked)) * 100.0),
        });
        if let (Value::Object(report), Value::Object(more)) = (&mut report, more) {
            report.extend(more);
        }
    }
    println!("{report}");
    Ok(0)
}
