//! Arguments shared by the commands: the tokenizer and the constraint.

use crate::fail::CliError;
use clap::Args;
use sieve_core::{Constraint, ConstraintSource, Limits, Vocabulary};
use std::path::PathBuf;
use std::sync::Arc;

/// Which constraint to follow (exactly one).
#[derive(Args, Debug, Clone)]
#[group(required = true, multiple = false)]
pub struct ConstraintArgs {
    /// A regex the whole output must match (it may start with `-`).
    #[arg(long, allow_hyphen_values = true)]
    pub regex: Option<String>,
    /// A GBNF grammar file (start rule `root`).
    #[arg(long, value_name = "FILE")]
    pub grammar: Option<PathBuf>,
    /// The output must be one of these strings (repeat the flag or separate with commas; they
    /// may start with `-`).
    #[arg(long, value_delimiter = ',', allow_hyphen_values = true)]
    pub choices: Option<Vec<String>>,
    /// Any JSON value.
    #[arg(long)]
    pub any_json: bool,
    /// A JSON Schema file (strict: keywords that cannot be enforced exactly are an error).
    #[arg(long, value_name = "FILE")]
    pub json_schema: Option<PathBuf>,
    /// A structural tag file: free text in which triggers start tagged sections, as vLLM's
    /// `{"structures": [{"begin", "schema" or "grammar", "end"}], "triggers": [...]}`.
    #[arg(long, value_name = "FILE")]
    pub structural_tag: Option<PathBuf>,
}

impl ConstraintArgs {
    /// The constraint source the flags name.
    pub fn source(&self) -> Result<ConstraintSource, CliError> {
        if let Some(r) = &self.regex {
            return Ok(ConstraintSource::Regex(r.clone()));
        }
        if let Some(path) = &self.grammar {
            return Ok(ConstraintSource::Gbnf(read(path)?));
        }
        if let Some(c) = &self.choices {
            return Ok(ConstraintSource::Choices(c.clone()));
        }
        if let Some(path) = &self.json_schema {
            let text = read(path)?;
            // A file that is not JSON says so with its name.
            serde_json::from_str::<serde_json::Value>(&text).map_err(|e| CliError::new(format!("{}: {e}", path.display())))?;
            return Ok(ConstraintSource::JsonSchema(text, sieve_core::json_schema::JsonSchemaOptions::default()));
        }
        if let Some(path) = &self.structural_tag {
            return structural_tag(path, sieve_core::json_schema::JsonSchemaOptions::default());
        }
        Ok(ConstraintSource::AnyJson)
    }

    /// Compiles the named constraint under the default limits.
    pub fn compile(&self) -> Result<Constraint, CliError> {
        Ok(Constraint::compile(&self.source()?, &Limits::default())?)
    }
}

/// The tokenizer, both as sieve bytes and as a canonical tokenizer.
#[derive(Args, Debug, Clone)]
pub struct TokenizerArgs {
    /// A Hugging Face tokenizer.json.
    #[arg(long, value_name = "FILE")]
    pub tokenizer: PathBuf,
    /// End-of-sequence token ids (default: the tokenizer's usual EOS tokens).
    #[arg(long, value_delimiter = ',')]
    pub eos: Option<Vec<u32>>,
}

/// A loaded tokenizer.
pub struct Loaded {
    pub vocab: Arc<Vocabulary>,
    pub tokenizer: tokenizers::Tokenizer,
}

impl TokenizerArgs {
    pub fn load(&self) -> Result<Loaded, CliError> {
        let text = read(&self.tokenizer)?;
        let mut vocab = Vocabulary::from_tokenizer_json(&text)?;
        if let Some(eos) = &self.eos {
            vocab = vocab.with_eos_ids(eos)?;
        }
        let tokenizer = text
            .parse::<tokenizers::Tokenizer>()
            .map_err(|e| CliError::new(format!("{}: {e}", self.tokenizer.display())))?;
        Ok(Loaded { vocab: Arc::new(vocab), tokenizer })
    }
}

impl Loaded {
    /// Canonical token ids for `text` (no special tokens).
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, CliError> {
        let enc = self.tokenizer.encode(text, false).map_err(|e| CliError::new(format!("tokenizing: {e}")))?;
        Ok(enc.get_ids().to_vec())
    }

    /// Bytes a SentencePiece tokenizer adds in front of the text (its `▁`
    /// prefix space), found by comparing decoded tokens with the text.
    pub fn prefix_len(&self, text: &str, ids: &[u32]) -> usize {
        let decoded = self.vocab.decode(ids);
        if decoded.len() > text.len() && decoded.ends_with(text.as_bytes()) {
            decoded.len() - text.len()
        } else {
            0
        }
    }
}

/// Reads a file as UTF-8 text.
pub fn read(path: &PathBuf) -> Result<String, CliError> {
    std::fs::read_to_string(path).map_err(|e| CliError::new(format!("{}: {e}", path.display())))
}

/// The structural tag in a JSON file, its schemas translated with `options`.
pub fn structural_tag(path: &PathBuf, options: sieve_core::json_schema::JsonSchemaOptions) -> Result<ConstraintSource, CliError> {
    let json: serde_json::Value = serde_json::from_str(&read(path)?).map_err(|e| CliError::new(format!("{}: {e}", path.display())))?;
    let tag = sieve_core::StructuralTag::from_json(&json, options).map_err(|e| CliError::new(format!("{}: {e}", path.display())))?;
    Ok(ConstraintSource::StructuralTag(tag))
}
