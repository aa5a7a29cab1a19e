//! The low-level API, for any model: a vocabulary from `tokenizer.json`, constraints, and
//! matchers that fill token bitmasks (bit `i % 32` of word `i / 32` set when token `i` is
//! allowed next).

use std::sync::Arc;

use serde::Deserialize;
use sieve_core::json_schema::{JsonSchemaOptions, Mode, PropertyOrder, Whitespace};
use wasm_bindgen::prelude::*;

use crate::error::{compile_error, json_schema_error, not_json};
use crate::js_error;

/// Token id to bytes for one tokenizer, shared by every matcher over it.
#[wasm_bindgen]
pub struct Vocabulary {
    inner: Arc<sieve_core::Vocabulary>,
}

#[wasm_bindgen]
impl Vocabulary {
    /// Reads a Hugging Face `tokenizer.json` text (byte-level BPE or SentencePiece style).
    /// `eosTokens` replaces the end-of-sequence ids found in it; `width` is the logits width
    /// when it is larger than the vocabulary (padding ids are never allowed).
    #[wasm_bindgen(js_name = fromTokenizerJson)]
    pub fn from_tokenizer_json(text: &str, eos_tokens: Option<Vec<u32>>, width: Option<usize>) -> Result<Vocabulary, JsError> {
        let mut vocab = sieve_core::Vocabulary::from_tokenizer_json(text).map_err(js_error)?;
        if let Some(ids) = eos_tokens {
            vocab = vocab.with_eos_ids(&ids).map_err(js_error)?;
        }
        if let Some(width) = width {
            vocab = vocab.with_width(width).map_err(js_error)?;
        }
        Ok(Vocabulary { inner: Arc::new(vocab) })
    }

    /// Number of token ids.
    #[wasm_bindgen(getter)]
    pub fn size(&self) -> usize {
        self.inner.len()
    }

    /// Width of a logits row (at least `size`).
    #[wasm_bindgen(getter)]
    pub fn width(&self) -> usize {
        self.inner.width()
    }

    /// Words of a bitmask: `ceil(width / 32)`.
    #[wasm_bindgen(getter, js_name = maskWords)]
    pub fn mask_words(&self) -> usize {
        self.inner.mask_words()
    }

    /// The end-of-sequence ids.
    #[wasm_bindgen(getter, js_name = eosTokens)]
    pub fn eos_tokens(&self) -> Vec<u32> {
        self.inner.eos_ids().to_vec()
    }

    /// Computes masks along a few sample documents so that the browser has optimised the mask
    /// code before the first real request: V8 runs new WebAssembly as baseline code first, and
    /// the first few hundred masks of a page take two to three times as long. Call it once
    /// while the model loads (a fraction of a second); returns the number of masks computed.
    #[wasm_bindgen(js_name = warmUp)]
    pub fn warm_up(&self) -> usize {
        sieve_core::warm_up(&self.inner)
    }

    /// The bytes of one token (empty for an unknown id).
    #[wasm_bindgen(js_name = tokenBytes)]
    pub fn token_bytes(&self, id: u32) -> Vec<u8> {
        self.inner.token_bytes(id).unwrap_or_default().to_vec()
    }
}

impl Vocabulary {
    pub(crate) fn new(inner: Arc<sieve_core::Vocabulary>) -> Vocabulary {
        Vocabulary { inner }
    }
}

/// Options of `Constraint.jsonSchema`.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SchemaOptions {
    /// `"any"` (default), `"compact"`, or a number: at most that many whitespace characters
    /// between tokens.
    whitespace: Option<serde_json::Value>,
    /// `"strict"` (default) or `"lenient"`.
    mode: Option<String>,
    /// Value of a missing `additionalProperties` (default true, as the specification says).
    additional_properties: Option<bool>,
    /// `"schema"` (default) or a number n: any order for objects of at most n properties.
    property_order: Option<serde_json::Value>,
}

impl SchemaOptions {
    /// The options a JS caller passed (undefined or null: the defaults).
    fn from_js(options: &JsValue) -> Result<JsonSchemaOptions, JsError> {
        let options: SchemaOptions = match options.is_undefined() || options.is_null() {
            true => SchemaOptions::default(),
            false => from_js(options).map_err(|e| JsError::new(&format!("options: {e}")))?,
        };
        options.to_options().map_err(|e| JsError::new(&format!("options: {e}")))
    }

    fn to_options(&self) -> Result<JsonSchemaOptions, String> {
        let whitespace = match &self.whitespace {
            None => Whitespace::Any,
            Some(v) if v == "any" => Whitespace::Any,
            Some(v) if v == "compact" => Whitespace::Compact,
            Some(v) => Whitespace::Bounded(
                v.as_u64().and_then(|n| u32::try_from(n).ok()).ok_or("whitespace: expected \"any\", \"compact\" or a count")?,
            ),
        };
        let mode = match self.mode.as_deref() {
            None | Some("strict") => Mode::Strict,
            Some("lenient") => Mode::Lenient,
            Some(m) => return Err(format!("mode: expected \"strict\" or \"lenient\", got {m:?}")),
        };
        let property_order = match &self.property_order {
            None => PropertyOrder::Schema,
            Some(v) if v == "schema" => PropertyOrder::Schema,
            Some(v) => PropertyOrder::AnyUpTo(
                v.as_u64().and_then(|n| u8::try_from(n).ok()).ok_or("propertyOrder: expected \"schema\" or a small count")?,
            ),
        };
        Ok(JsonSchemaOptions {
            whitespace,
            mode,
            property_order,
            additional_properties_default: self.additional_properties.unwrap_or(true),
            ..JsonSchemaOptions::default()
        })
    }
}

/// A compiled constraint: immutable, shared by every matcher that follows it.
#[wasm_bindgen]
pub struct Constraint {
    inner: sieve_core::Constraint,
    warnings: Vec<String>,
}

#[wasm_bindgen]
impl Constraint {
    /// A JSON Schema (an object or its JSON text). Options: `whitespace` (`"any"`, `"compact"`
    /// or a count), `mode` (`"strict"` or `"lenient"`), `additionalProperties` (the default for
    /// a missing keyword), `propertyOrder` (`"schema"` or n). Errors name the keyword and its JSON
    /// pointer.
    #[wasm_bindgen(js_name = jsonSchema)]
    pub fn json_schema(schema: JsValue, options: JsValue) -> Result<Constraint, JsValue> {
        let schema: serde_json::Value = match schema.as_string() {
            Some(text) => serde_json::from_str(&text).map_err(|e| not_json("schema", &e))?,
            None => from_js(&schema).map_err(|e| JsError::new(&format!("schema: {e}")))?,
        };
        let options = SchemaOptions::from_js(&options)?;
        let (inner, warnings) = sieve_core::Constraint::json_schema(&schema, &options).map_err(|e| json_schema_error("schema", &e))?;
        let warnings = warnings.iter().map(ToString::to_string).collect();
        Ok(Constraint { inner, warnings })
    }

    /// A regex the whole output must match (regex-automata syntax, Unicode aware).
    pub fn regex(pattern: &str) -> Result<Constraint, JsValue> {
        let inner = sieve_core::Constraint::regex(pattern).map_err(|e| compile_error("regex", &e))?;
        Ok(Constraint { inner, warnings: Vec::new() })
    }

    /// A GBNF grammar (llama.cpp syntax) whose start rule is `root`.
    pub fn grammar(gbnf: &str) -> Result<Constraint, JsValue> {
        let inner = sieve_core::Constraint::gbnf(gbnf).map_err(|e| compile_error("grammar", &e))?;
        Ok(Constraint { inner, warnings: Vec::new() })
    }

    /// The output is exactly one of these strings.
    pub fn choices(choices: Vec<String>) -> Result<Constraint, JsValue> {
        let inner = sieve_core::Constraint::choices(&choices).map_err(|e| compile_error("choices", &e))?;
        Ok(Constraint { inner, warnings: Vec::new() })
    }

    /// Free text in which a trigger starts a tagged section (tool calls): `{structures: [{begin,
    /// schema or grammar, end}], triggers, at_least_one, stop_after_first}`, as a
    /// `response_format` of type `structural_tag` takes it; schemas with `options` as for
    /// [`Constraint::json_schema`].
    #[wasm_bindgen(js_name = structuralTag)]
    pub fn structural_tag(tag: JsValue, options: JsValue) -> Result<Constraint, JsValue> {
        let tag: serde_json::Value = from_js(&tag).map_err(|e| JsError::new(&format!("structural tag: {e}")))?;
        let options = SchemaOptions::from_js(&options)?;
        let source = sieve_core::StructuralTag::from_json(&tag, options).map_err(|e| compile_error("structural tag", &e))?;
        let inner = sieve_core::Constraint::compile(&sieve_core::ConstraintSource::StructuralTag(source), &sieve_core::Limits::default())
            .map_err(|e| compile_error("structural tag", &e))?;
        let warnings = inner.warnings().iter().map(ToString::to_string).collect();
        Ok(Constraint { inner, warnings })
    }

    /// Any JSON value.
    #[wasm_bindgen(js_name = anyJson)]
    pub fn any_json() -> Constraint {
        Constraint { inner: sieve_core::Constraint::any_json(), warnings: Vec::new() }
    }

    /// Keywords a lenient JSON Schema left out, as messages.
    #[wasm_bindgen(getter)]
    pub fn warnings(&self) -> Vec<String> {
        self.warnings.clone()
    }

    /// Whether `text` as a whole satisfies the constraint.
    pub fn matches(&self, text: &str) -> Result<bool, JsError> {
        self.inner.matches(text.as_bytes()).map_err(js_error)
    }
}

/// Follows one sequence through a constraint over a vocabulary.
#[wasm_bindgen]
pub struct Matcher {
    inner: sieve_core::Matcher,
    /// The mask row, filled here and copied once into the caller's array (a `&mut [u32]`
    /// argument would cost an allocation and a copy each way per token).
    row: Vec<u32>,
}

#[wasm_bindgen]
impl Matcher {
    /// A matcher at the start of `constraint`.
    #[wasm_bindgen(constructor)]
    pub fn new(constraint: &Constraint, vocabulary: &Vocabulary) -> Matcher {
        let row = vec![0; vocabulary.inner.mask_words()];
        Matcher { inner: sieve_core::Matcher::new(&constraint.inner, &vocabulary.inner), row }
    }

    /// Writes the allowed next tokens into the first `vocabulary.maskWords` words of `mask`.
    #[wasm_bindgen(js_name = fillNextTokenBitmask)]
    pub fn fill_next_token_bitmask(&mut self, mask: &js_sys::Uint32Array) -> Result<(), JsError> {
        let (words, length) = (self.row.len(), mask.length() as usize);
        if length < words {
            return Err(JsError::new(&format!("the mask has {length} words; the vocabulary needs {words}")));
        }
        self.inner.fill_next_token_bitmask(&mut self.row).map_err(js_error)?;
        // A longer array takes a view of its head; an exact one (the usual case) needs none.
        if length == words {
            mask.copy_from(&self.row);
        } else {
            mask.subarray(0, words as u32).copy_from(&self.row);
        }
        Ok(())
    }

    /// Advances past `token`; a token the mask forbids is an error and changes nothing.
    #[wasm_bindgen(js_name = acceptToken)]
    pub fn accept_token(&mut self, token: u32) -> Result<(), JsError> {
        self.inner.accept_token(token).map_err(js_error)
    }

    /// Advances past raw text (for forced continuations taken as bytes).
    #[wasm_bindgen(js_name = acceptText)]
    pub fn accept_text(&mut self, text: &str) -> Result<(), JsError> {
        self.inner.accept_bytes(text.as_bytes()).map_err(js_error)
    }

    /// Forgets the last `n` accepted tokens.
    pub fn rollback(&mut self, n: usize) -> Result<(), JsError> {
        self.inner.rollback(n).map_err(js_error)
    }

    /// How many of `tokens` (a speculative draft) are acceptable in a row; the state is unchanged.
    #[wasm_bindgen(js_name = validateTokens)]
    pub fn validate_tokens(&mut self, tokens: &[u32]) -> usize {
        self.inner.validate_tokens(tokens)
    }

    /// The forced continuation: `{text, backoff, tokens}`. `tokenize(bytes: Uint8Array)` returns
    /// the canonical token ids of the bytes (or null); when it is omitted or fails, `tokens` is
    /// empty and only `text` is known. Roll back `backoff` tokens, then accept `tokens`.
    #[wasm_bindgen(js_name = jumpForward)]
    pub fn jump_forward(&mut self, tokenize: Option<js_sys::Function>) -> Result<JsValue, JsError> {
        let jf = self
            .inner
            .jump_forward(|bytes| {
                let f = tokenize.as_ref()?;
                let out = f.call1(&JsValue::NULL, &js_sys::Uint8Array::from(bytes)).ok()?;
                if out.is_null() || out.is_undefined() {
                    return None;
                }
                js_sys::Array::from(&out).iter().map(|v| v.as_f64().map(|x| x as u32)).collect()
            })
            .map_err(js_error)?;
        let value = serde_json::json!({
            "text": String::from_utf8_lossy(&jf.bytes),
            "backoff": jf.backoff,
            "tokens": jf.tokens,
        });
        to_js(&value)
    }

    /// Whether the output so far is complete.
    #[wasm_bindgen(js_name = isAccepting)]
    pub fn is_accepting(&self) -> bool {
        self.inner.is_accepting()
    }

    /// Whether the output is complete and nothing more is allowed.
    #[wasm_bindgen(js_name = isTerminated)]
    pub fn is_terminated(&self) -> bool {
        self.inner.is_terminated()
    }

    /// Back to the start.
    pub fn reset(&mut self) {
        self.inner.reset()
    }

    /// An independent copy at the same position.
    pub fn fork(&self) -> Matcher {
        Matcher { inner: self.inner.clone(), row: self.row.clone() }
    }
}

/// A JS value as serde data, through `JSON.stringify`.
pub(crate) fn from_js<T: serde::de::DeserializeOwned>(value: &JsValue) -> Result<T, String> {
    let text = js_sys::JSON::stringify(value).map_err(|_| "not serialisable as JSON".to_string())?;
    let text = text.as_string().ok_or("not serialisable as JSON")?;
    serde_json::from_str(&text).map_err(|e| e.to_string())
}

/// Serde data as a JS value, through `JSON.parse`.
pub(crate) fn to_js(value: &serde_json::Value) -> Result<JsValue, JsError> {
    js_sys::JSON::parse(&value.to_string()).map_err(|_| JsError::new("internal: result is not JSON"))
}
