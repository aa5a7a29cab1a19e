//! Requests as the JavaScript engine sends them (OpenAI-shaped JSON), turned into constraints
//! and decoding settings.

use serde::Deserialize;
use serde_json::Value;
use sieve_core::json_schema::{JsonSchemaOptions, Mode, Whitespace};
use sieve_core::{Constraint, ConstraintCache, ConstraintSource};

/// One chat message.
#[derive(Debug, Deserialize)]
pub struct Message {
    pub role: String,
    pub content: String,
}

/// A completion request: `messages` for chat, `prompt` for raw text.
#[derive(Debug, Deserialize)]
pub struct Request {
    #[serde(default)]
    pub messages: Option<Vec<Message>>,
    #[serde(default)]
    pub prompt: Option<String>,
    #[serde(default)]
    pub response_format: Option<ResponseFormat>,
    #[serde(default)]
    pub max_tokens: Option<usize>,
    #[serde(default)]
    pub temperature: Option<f32>,
    #[serde(default)]
    pub top_p: Option<f32>,
    #[serde(default)]
    pub top_k: Option<u32>,
    #[serde(default)]
    pub seed: Option<u64>,
    /// Prefill forced continuations in one pass (default true).
    #[serde(default)]
    pub jump_forward: Option<bool>,
}

/// The output format, as OpenAI's `response_format`, plus `regex` and `grammar`.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum ResponseFormat {
    Text,
    JsonObject,
    JsonSchema { json_schema: JsonSchemaFormat },
    Regex { pattern: String },
    Grammar { grammar: String },
}

/// `response_format.json_schema` (its `name` is accepted and not needed).
#[derive(Debug, Deserialize)]
pub struct JsonSchemaFormat {
    pub schema: Value,
    /// Strict (default) refuses keywords it cannot enforce; false leaves them out with warnings.
    #[serde(default)]
    pub strict: Option<bool>,
}

/// A compiled output constraint (none for text) and the keywords it left out (lenient schemas
/// only).
#[derive(Default)]
pub struct Compiled {
    pub constraint: Option<Constraint>,
    pub warnings: Vec<String>,
}

impl Request {
    /// Compiles `response_format`; text (or none) needs no constraint. Schemas become compact
    /// JSON (no whitespace between tokens), which a small model cannot pad with endless spaces.
    pub fn compile(&self, cache: &ConstraintCache) -> Result<Compiled, String> {
        let source = match &self.response_format {
            None | Some(ResponseFormat::Text) => return Ok(Compiled::default()),
            Some(ResponseFormat::JsonObject) => ConstraintSource::AnyJson,
            Some(ResponseFormat::Regex { pattern }) => ConstraintSource::Regex(pattern.clone()),
            Some(ResponseFormat::Grammar { grammar }) => ConstraintSource::Gbnf(grammar.clone()),
            Some(ResponseFormat::JsonSchema { json_schema }) => {
                let options = JsonSchemaOptions {
                    whitespace: Whitespace::Compact,
                    mode: if json_schema.strict == Some(false) { Mode::Lenient } else { Mode::Strict },
                    ..JsonSchemaOptions::default()
                };
                let g = sieve_core::json_schema::to_gbnf(&json_schema.schema, &options)
                    .map_err(|e| format!("response_format.json_schema: {e}"))?;
                let warnings = g.warnings.iter().map(ToString::to_string).collect();
                let constraint = cache.get(&ConstraintSource::Gbnf(g.gbnf)).map_err(|e| format!("schema grammar: {e}"))?;
                return Ok(Compiled { constraint: Some(constraint), warnings });
            }
        };
        let constraint = cache.get(&source).map_err(|e| format!("response_format: {e}"))?;
        Ok(Compiled { constraint: Some(constraint), warnings: Vec::new() })
    }
}
