//! Requests as the JavaScript engine sends them (OpenAI-shaped JSON), turned into constraints
//! and decoding settings.

use serde::Deserialize;
use serde_json::Value;
use sieve_core::json_schema::{JsonSchemaOptions, Mode, SchemaGrammar, Whitespace};
use sieve_core::{Constraint, ConstraintCache, ConstraintSource};
use wasm_bindgen::JsValue;

use crate::error::schema_error;

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
    /// Further variables for the model's chat template (`enable_thinking`, ...).
    #[serde(default)]
    pub chat_template_kwargs: Option<serde_json::Map<String, Value>>,
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

/// A request's output constraint as far as it is known before the prompt goes to the GPU.
pub enum Output {
    /// Free text.
    Text,
    /// Compiled by an earlier request.
    Ready(Constraint),
    /// New: compiled while the prompt prefills (a JSON Schema from its
    /// translation, made while planning).
    Compile(ConstraintSource, Option<SchemaGrammar>),
}

/// The output constraint and the keywords it leaves out (lenient schemas only).
pub struct Planned {
    pub output: Output,
    pub warnings: Vec<String>,
}

impl Request {
    /// Translates `response_format` into a constraint source and looks it up in `cache`. A new
    /// schema is translated here, so a bad one fails before any GPU work; schemas become compact
    /// JSON (no whitespace between tokens), which a small model cannot pad with endless spaces.
    pub fn plan(&self, cache: &ConstraintCache) -> Result<Planned, JsValue> {
        let (source, options) = match &self.response_format {
            None | Some(ResponseFormat::Text) => return Ok(Planned { output: Output::Text, warnings: Vec::new() }),
            Some(ResponseFormat::JsonObject) => (ConstraintSource::AnyJson, None),
            Some(ResponseFormat::Regex { pattern }) => (ConstraintSource::Regex(pattern.clone()), None),
            Some(ResponseFormat::Grammar { grammar }) => (ConstraintSource::Gbnf(grammar.clone()), None),
            Some(ResponseFormat::JsonSchema { json_schema }) => {
                let options = JsonSchemaOptions {
                    whitespace: Whitespace::Compact,
                    mode: if json_schema.strict == Some(false) { Mode::Lenient } else { Mode::Strict },
                    ..JsonSchemaOptions::default()
                };
                (ConstraintSource::JsonSchema(json_schema.schema.to_string(), options), Some(options))
            }
        };
        if let Some(constraint) = cache.cached(&source) {
            let warnings = constraint.warnings().iter().map(ToString::to_string).collect();
            return Ok(Planned { output: Output::Ready(constraint), warnings });
        }
        let grammar = match (&self.response_format, options) {
            (Some(ResponseFormat::JsonSchema { json_schema }), Some(options)) => Some(
                sieve_core::json_schema::to_grammar(&json_schema.schema, &options)
                    .map_err(|e| schema_error("response_format.json_schema", &e))?,
            ),
            _ => None,
        };
        let warnings = grammar.iter().flat_map(|g| g.warnings.iter().map(ToString::to_string)).collect();
        Ok(Planned { output: Output::Compile(source, grammar), warnings })
    }
}
