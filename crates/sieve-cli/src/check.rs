//! `sieve check`: does a text follow the constraint, token by token?

use crate::args::{ConstraintArgs, TokenizerArgs, read};
use crate::fail::CliError;
use clap::Args;
use serde_json::json;
use sieve_core::Matcher;
use std::path::PathBuf;

/// Tokenize a text canonically and run it through the constraint.
#[derive(Args, Debug)]
pub struct CheckArgs {
    #[command(flatten)]
    pub tokenizer: TokenizerArgs,
    #[command(flatten)]
    pub constraint: ConstraintArgs,
    /// The text to check.
    #[arg(long, value_name = "FILE")]
    pub text: PathBuf,
}

/// Prints `{"accepted": bool, "rejected_at": index|null}`; returns the exit
/// status (0 accepted, 1 rejected). `rejected_at` is the index of the first
/// token the constraint refuses, or the token count when every token fits
/// but the text is incomplete.
pub fn run(args: &CheckArgs) -> Result<i32, CliError> {
    let loaded = args.tokenizer.load()?;
    let constraint = args.constraint.compile()?;
    let text = read(&args.text)?;
    let ids = loaded.encode(&text)?;
    let mut m = Matcher::new(&constraint, &loaded.vocab);
    let skip = loaded.prefix_len(&text, &ids);
    let mut rejected_at = None;
    for (i, &t) in ids.iter().enumerate() {
        let ok = if i == 0 && skip > 0 {
            let bytes = loaded.vocab.token_bytes(t).unwrap_or_default();
            m.accept_bytes(bytes.get(skip..).unwrap_or_default()).is_ok()
        } else {
            m.accept_token(t).is_ok()
        };
        if !ok {
            rejected_at = Some(i);
            break;
        }
    }
    if rejected_at.is_none() && !m.is_accepting() {
        rejected_at = Some(ids.len());
    }
    let accepted = rejected_at.is_none();
    println!("{}", json!({ "accepted": accepted, "rejected_at": rejected_at }));
    Ok(if accepted { 0 } else { 1 })
}
