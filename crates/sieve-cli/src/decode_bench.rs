//! `sieve bench-decode`: the model's prefill and decode speed, and what the constraint and
//! jump-forward change about it, measured in one run on one device.
//!
//! Greedy decoding of one prompt, three ways per round (the last two only with a constraint),
//! rounds interleaved so that a noisy machine weighs on all three alike:
//!
//! 1. free text of exactly `n` tokens (the end of sequence is masked out): one prefill, then
//!    one forward pass per token; `n` is the constrained run's length, or `--max-tokens`;
//! 2. under the constraint with jump-forward off: the same number of forward passes;
//! 3. under the constraint with jump-forward on: the same text as 2. (a prefix of one another
//!    when `--max-tokens` cuts them short), in fewer passes and often fewer tokens (its forced
//!    text goes in as the tokenizer splits it). A model can lean to another split, and then
//!    the rest can differ too (one with random weights mostly does): jump-forward's figures
//!    against 2. come from the rounds whose texts agree (`jump_forward_same_text_rounds`);
//! 4. 3.'s tokens without jump-forward, one pass each: the constraint's mask keeps only the
//!    next of them ([`Replay`]), so the output is 3.'s whatever the model
//!    (`jump_forward_same_tokens`).
//!
//! The figures are medians over the rounds; a first generation (shader compiles, caches) is
//! not counted. Prefill is the prompt's tokens over the time to the first token, decode the
//! tokens after the first over the time after it, both of free decoding. The constraint's cost
//! comes two ways: 2.'s whole time against 1.'s (`constrained_overhead_pct`, which a shared
//! machine's noise moves by several percent either way), and the time 2. spent in the
//! constraint beyond what 1. spent in its own masks, over 1.'s time (`constraint_cost_pct`,
//! from `Stats::constraint_ms`).

use std::path::PathBuf;
use std::time::Instant;

use clap::Args;
use serde_json::{Value, json};
use sieve_core::Matcher;
use sieve_model::ModelError;
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

/// A constraint that follows recorded tokens: its mask is the constraint's, then only the next
/// recorded token, so greedy decoding writes them again, paying for every mask as a run of its
/// own would.
struct Replay<'a> {
    inner: Matcher,
    tokens: &'a [u32],
    /// Tokens accepted so far.
    at: usize,
}

impl TokenConstraint for Replay<'_> {
    fn fill_mask(&mut self, mask: &mut [u32]) -> Result<(), ModelError> {
        TokenConstraint::fill_mask(&mut self.inner, mask)?;
        let next = self.tokens.get(self.at).copied().ok_or_else(|| ModelError::Constraint("the recorded tokens are all written".into()))?;
        let (word, bit) = (next as usize / 32, 1u32 << (next % 32));
        if mask.get(word).is_none_or(|w| w & bit == 0) {
            return Err(ModelError::Constraint(format!("the constraint does not allow recorded token {next}")));
        }
        mask.fill(0);
        mask[word] = bit;
        Ok(())
    }

    fn accept_token(&mut self, token: u32) -> Result<(), ModelError> {
        TokenConstraint::accept_token(&mut self.inner, token)?;
        self.at += 1;
        Ok(())
    }

    fn rollback(&mut self, n: usize) -> Result<(), ModelError> {
        TokenConstraint::rollback(&mut self.inner, n)?;
        self.at -= n.min(self.at);
        Ok(())
    }

    fn forced_bytes(&mut self) -> Result<Vec<u8>, ModelError> {
        Ok(Vec::new())
    }

    fn is_terminated(&self) -> bool {
        self.at == self.tokens.len() || TokenConstraint::is_terminated(&self.inner)
    }
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
    let (mut plain, mut masked, mut jumped, mut replayed) = (vec![], vec![], vec![], vec![]);
    // Per constrained round: whether jump-forward gave the greedy run's text.
    let mut agree = vec![];
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
                agree.push(match (off.out.stop, on.out.stop) {
                    (StopReason::MaxTokens, _) | (_, StopReason::MaxTokens) => a.starts_with(b.as_str()) || b.starts_with(a.as_str()),
                    _ => a == b,
                });
                let tokens = &on.out.tokens;
                let replay = timed(&mut Replay { inner: Matcher::new(constraint, &vocab), tokens, at: 0 }, tokens.len(), false)?;
                if replay.out.tokens != *tokens {
                    return Err(CliError::new(format!("the replay wrote {:?}, not jump-forward's {:?}", replay.out.text, on.out.text)));
                }
                plain.push(free(n)?);
                masked.push(off);
                jumped.push(on);
                replayed.push(replay);
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
            "constraint_ms": round2(median(runs.iter().map(|r| r.out.stats.constraint_ms).collect())),
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
        // Jump-forward's passes and time saved against runs without it: `(fewer passes %, less
        // time %)` over `pairs` of (without, with); nulls without a pair.
        let saved = |pairs: &[(&Run, &Run)]| match pairs.first() {
            Some((off, on)) => {
                let passes = 1.0 - on.out.stats.forward_passes as f64 / off.out.stats.forward_passes.max(1) as f64;
                let time = 1.0 - median(pairs.iter().map(|(off, on)| on.ms / off.ms).collect());
                (Some(round2(passes * 100.0)), Some(round2(time * 100.0)))
            }
            None => (None, None),
        };
        let same_text: Vec<(&Run, &Run)> = masked.iter().zip(&jumped).zip(&agree).filter(|(_, same)| **same).map(|(pair, _)| pair).collect();
        let same_tokens: Vec<(&Run, &Run)> = replayed.iter().zip(&jumped).collect();
        let ((fewer_passes, less_time), (fewer_replayed, less_replayed)) = (saved(&same_text), saved(&same_tokens));
        let more = json!({
            "text": masked[0].out.text,
            "constrained": summary(&masked),
            "jump_forward": summary(&jumped),
            "constrained_overhead_pct": round2((ratios(&masked, &plain) - 1.0) * 100.0),
            "constraint_cost_pct": round2(median(masked.iter().zip(&plain).map(|(m, p)| (m.out.stats.constraint_ms - p.out.stats.constraint_ms) / p.ms * 100.0).collect())),
            "jump_forward_same_text_rounds": same_text.len(),
            "jump_forward_fewer_passes_pct": fewer_passes,
            "jump_forward_less_time_pct": less_time,
            "jump_forward_same_tokens": {
                "text": jumped[0].out.text,
                "without_jump_forward": summary(&replayed),
                "fewer_passes_pct": fewer_replayed,
                "less_time_pct": less_replayed,
            },
        });
        if let (Value::Object(report), Value::Object(more)) = (&mut report, more) {
            report.extend(more);
        }
    }
    println!("{report}");
    Ok(0)
}
