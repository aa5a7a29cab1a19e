//! `sieve sample`: random walks over the allowed tokens.

use crate::args::{ConstraintArgs, TokenizerArgs};
use crate::fail::CliError;
use sieve_core::rng::Rng;
use clap::Args;
use serde_json::json;
use sieve_core::Matcher;

/// Print random outputs of the constraint.
#[derive(Args, Debug)]
pub struct SampleArgs {
    #[command(flatten)]
    pub tokenizer: TokenizerArgs,
    #[command(flatten)]
    pub constraint: ConstraintArgs,
    /// Number of samples.
    #[arg(long, default_value_t = 1)]
    pub n: usize,
    /// RNG seed.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Tokens per sample at most.
    #[arg(long, default_value_t = 64)]
    pub max_tokens: usize,
    /// Probability of taking end of sequence whenever it is allowed.
    #[arg(long, default_value_t = 0.25)]
    pub eos_prob: f64,
}

/// Prints one `{"text", "tokens", "finished"}` line per sample: tokens are
/// uniform among the allowed ones; end of sequence is taken with
/// probability `eos_prob` when allowed (and when nothing else is).
pub fn run(args: &SampleArgs) -> Result<i32, CliError> {
    let loaded = args.tokenizer.load()?;
    let constraint = args.constraint.compile()?;
    let vocab = &loaded.vocab;
    let mut rng = Rng::new(args.seed);
    let mut mask = vec![0u32; vocab.mask_words()];
    for _ in 0..args.n {
        let mut m = Matcher::new(&constraint, vocab);
        let mut tokens = Vec::new();
        while tokens.len() < args.max_tokens {
            m.fill_next_token_bitmask(&mut mask)?;
            let mut allowed = Vec::new();
            let mut eos = None;
            for (w, &bits) in mask.iter().enumerate() {
                let mut bits = bits;
                while bits != 0 {
                    let t = w as u32 * 32 + bits.trailing_zeros();
                    bits &= bits - 1;
                    if vocab.is_eos(t) {
                        eos = eos.or(Some(t));
                    } else {
                        allowed.push(t);
                    }
                }
            }
            let pick = match eos {
                Some(e) if allowed.is_empty() || rng.unit() < args.eos_prob => e,
                _ if allowed.is_empty() => break,
                _ => allowed[rng.below(allowed.len())],
            };
            m.accept_token(pick)?;
            if m.is_terminated() {
                break;
            }
            tokens.push(pick);
        }
        let text = String::from_utf8_lossy(&vocab.decode(&tokens)).into_owned();
        println!("{}", json!({ "text": text, "tokens": tokens, "finished": m.is_terminated() }));
    }
    Ok(0)
}
