//! Requests as the JavaScript engine sends them (OpenAI-shaped JSON), turned into constraints,
//! tools and prompt text before any model work. Nothing here touches JavaScript: a bad request
//! is a [`RequestError`], which the engine turns into a `SieveError` (and the request fuzz
//! target checks natively).

use serde::Deserialize;
use serde_json::Value;
use sieve_core::json_schema::{JsonSchemaOptions, Mode, SchemaError, SchemaGrammar, Whitespace};
use sieve_core::{CompileError, Constraint, ConstraintCache, ConstraintSource, StructuralTag};
use sieve_model::ModelError;
use sieve_model::chat::ChatTemplate;
use sieve_model::tools::{Tool, ToolChoice, ToolError, Toolbox};

/// A completion request: `messages` for chat (OpenAI-shaped, checked by
/// `sieve_model::chat::check_messages`), `prompt` for raw text.
#[derive(Debug, Deserialize)]
pub struct Request {
    #[serde(default)]
    pub messages: Option<Vec<Value>>,
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
    /// OpenAI's `tools`, `tool_choice` and `parallel_tool_calls` (see `sieve_model::tools`).
    #[serde(default)]
    pub tools: Option<Value>,
    #[serde(default)]
    pub tool_choice: Option<Value>,
    #[serde(default)]
    pub parallel_tool_calls: Option<bool>,
}

/// The output format, as OpenAI's `response_format`, plus `regex`, `grammar` and
/// `structural_tag` (vLLM's shape, with `at_least_one` and `stop_after_first`).
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum ResponseFormat {
    Text,
    JsonObject,
    JsonSchema {
        json_schema: JsonSchemaFormat,
    },
    Regex {
        pattern: String,
    },
    Grammar {
        grammar: String,
    },
    /// Read by `sieve_core::StructuralTag::from_json`.
    StructuralTag {
        structures: Value,
        triggers: Value,
        #[serde(default)]
        at_least_one: Option<Value>,
        #[serde(default)]
        stop_after_first: Option<Value>,
    },
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

/// Why a request is refused before any model work.
#[derive(Debug)]
pub enum RequestError {
    /// Fields that do not go together, or are missing.
    Bad(String),
    /// A tool's definition or `tool_choice`.
    Tool(ToolError),
    /// `response_format`'s JSON Schema did not translate.
    Schema(SchemaError),
    /// `response_format`'s regex, grammar or structural tag did not compile.
    Compile(CompileError),
    /// The messages, or the chat template rendering them.
    Prompt(ModelError),
}

/// The output constraint and the keywords it leaves out (lenient schemas only).
pub struct Planned {
    pub output: Output,
    pub warnings: Vec<String>,
}

impl Request {
    /// The request's tools (with `tool_choice` and `parallel_tool_calls`), checked for a model
    /// whose chat template is `template`; none without `tools`.
    pub fn toolbox(&self, template: &ChatTemplate) -> Result<Option<Toolbox>, RequestError> {
        let Some(tools) = &self.tools else { return Ok(None) };
        if self.messages.is_none() {
            return Err(RequestError::Bad("`tools` need `messages`".into()));
        }
        let choice = ToolChoice::from_openai(self.tool_choice.as_ref()).map_err(RequestError::Tool)?;
        let tools = Tool::from_openai(tools).map_err(RequestError::Tool)?;
        let parallel = self.parallel_tool_calls.unwrap_or(true);
        Toolbox::new(tools, choice, parallel, template).map(Some).map_err(RequestError::Tool)
    }

    /// The prompt's text: the messages rendered by `template` (offering `toolbox`'s tools), or
    /// the raw `prompt`.
    pub fn prompt_text(&self, template: &ChatTemplate, toolbox: Option<&Toolbox>) -> Result<String, RequestError> {
        let kwargs = self.chat_template_kwargs.clone().unwrap_or_default();
        match (&self.messages, &self.prompt, toolbox) {
            (Some(messages), None, Some(toolbox)) => toolbox.prompt(template, messages, &kwargs).map_err(RequestError::Prompt),
            (Some(messages), None, None) => template.render(messages, &kwargs).map_err(RequestError::Prompt),
            (None, Some(prompt), _) => Ok(prompt.clone()),
            _ => Err(RequestError::Bad("give exactly one of `messages` and `prompt`".into())),
        }
    }

    /// Translates `response_format` into a constraint source and looks it up in `cache`. A new
    /// schema is translated here, so a bad one fails before any GPU work; schemas become compact
    /// JSON (no whitespace between tokens), which a small model cannot pad with endless spaces.
    /// With `tools` (see [`crate::model`]), the reply is their structural tag, and a
    /// `response_format` other than text is refused.
    pub fn plan(&self, cache: &ConstraintCache, tools: Option<&Toolbox>) -> Result<Planned, RequestError> {
        if let Some(toolbox) = tools {
            if !matches!(self.response_format, None | Some(ResponseFormat::Text)) {
                return Err(RequestError::Bad("`tools` and a `response_format` other than text cannot go together".into()));
            }
            let source = ConstraintSource::StructuralTag(toolbox.constraint());
            let output = match cache.cached(&source) {
                Some(c) => Output::Ready(c),
                None => Output::Compile(source, None),
            };
            return Ok(Planned { output, warnings: toolbox.warnings().to_vec() });
        }
        let (source, options) = match &self.response_format {
            None | Some(ResponseFormat::Text) => return Ok(Planned { output: Output::Text, warnings: Vec::new() }),
            Some(ResponseFormat::StructuralTag { structures, triggers, at_least_one, stop_after_first }) => {
                let mut json = serde_json::json!({"structures": structures, "triggers": triggers});
                for (key, value) in [("at_least_one", at_least_one), ("stop_after_first", stop_after_first)] {
                    if let Some(v) = value {
                        json[key] = v.clone();
                    }
                }
                let tag = StructuralTag::from_json(&json, compact(None)).map_err(RequestError::Compile)?;
                (ConstraintSource::StructuralTag(tag), None)
            }
            Some(ResponseFormat::JsonObject) => (ConstraintSource::AnyJson, None),
            Some(ResponseFormat::Regex { pattern }) => (ConstraintSource::Regex(pattern.clone()), None),
            Some(ResponseFormat::Grammar { grammar }) => (ConstraintSource::Gbnf(grammar.clone()), None),
            Some(ResponseFormat::JsonSchema { json_schema }) => {
                let options = compact(json_schema.strict);
                (ConstraintSource::JsonSchema(json_schema.schema.to_string(), options), Some(options))
            }
        };
        if let Some(constraint) = cache.cached(&source) {
            let warnings = constraint.warnings().iter().map(ToString::to_string).collect();
            return Ok(Planned { output: Output::Ready(constraint), warnings });
        }
        let grammar = match (&self.response_format, options) {
            (Some(ResponseFormat::JsonSchema { json_schema }), Some(options)) => Some(
                sieve_core::json_schema::to_grammar(&json_schema.schema, &options, cache.limits())
                    .map_err(RequestError::Schema)?,
            ),
            _ => None,
        };
        let warnings = grammar.iter().flat_map(|g| g.warnings.iter().map(ToString::to_string)).collect();
        Ok(Planned { output: Output::Compile(source, grammar), warnings })
    }
}

/// Schemas as requests get them: compact JSON, strict unless `strict` is false.
fn compact(strict: Option<bool>) -> JsonSchemaOptions {
    JsonSchemaOptions {
        whitespace: Whitespace::Compact,
        mode: if strict == Some(false) { Mode::Lenient } else { Mode::Strict },
        ..JsonSchemaOptions::default()
    }
}
