//! Chat prompts in the model's own format: the Jinja template a GGUF carries in
//! `tokenizer.chat_template`, rendered by a real Jinja engine (minijinja, with Python's string
//! methods) as Hugging Face's `apply_chat_template` renders it, with `add_generation_prompt` and
//! the caller's extra variables (`chat_template_kwargs`); thinking models' `enable_thinking` is
//! false unless they set it. A model without a template gets plain ChatML.

use minijinja::{Environment, ErrorKind, Value, context};
use serde_json::{Map, Value as Json};

use crate::error::ModelError;

/// A model's chat template.
#[derive(Debug, Clone)]
pub struct ChatTemplate {
    source: String,
    bos: String,
    eos: String,
}

/// ChatML, for models without a template of their own.
const CHATML: &str = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}\
{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

impl ChatTemplate {
    /// The template `source`, with the texts of the beginning- and end-of-sequence tokens it
    /// may refer to (`bos_token`, `eos_token`).
    pub fn new(source: impl Into<String>, bos: impl Into<String>, eos: impl Into<String>) -> Self {
        Self { source: source.into(), bos: bos.into(), eos: eos.into() }
    }

    /// Plain ChatML.
    pub fn chatml() -> Self {
        Self::new(CHATML, "", "")
    }

    /// The template's Jinja source.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The prompt for `messages` (OpenAI-shaped objects: `role`, `content`, and where the
    /// template reads them `tool_calls`, `tool_call_id`), ending where the assistant's reply
    /// begins; `kwargs` are further variables for the template (`tools`, `enable_thinking`,
    /// false by default). A template that does not render (a syntax error, or its own
    /// `raise_exception`, as for roles it does not accept) is an error that says why, as are
    /// messages [`check_messages`] refuses.
    pub fn render(&self, messages: &[Json], kwargs: &Map<String, Json>) -> Result<String, ModelError> {
        self.render_checked(&check_messages(messages)?, kwargs)
    }

    /// [`ChatTemplate::render`] of messages [`check_messages`] returned.
    pub(crate) fn render_checked(&self, messages: &[Json], kwargs: &Map<String, Json>) -> Result<String, ModelError> {
        let mut env = Environment::new();
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.add_function("raise_exception", |message: String| -> Result<String, minijinja::Error> {
            Err(minijinja::Error::new(ErrorKind::InvalidOperation, message))
        });
        env.add_filter("tojson", tojson);
        let fail = |e: minijinja::Error| ModelError::Tokenizer(format!("chat template: {e:#}"));
        let template = env.template_from_str(&self.source).map_err(fail)?;
        let mut extra = Map::from_iter([("enable_thinking".to_string(), Json::Bool(false))]);
        extra.extend(kwargs.clone());
        let extra = Value::from_serialize(&extra);
        template
            .render(context! { messages, add_generation_prompt => true, bos_token => &self.bos, eos_token => &self.eos, ..extra })
            .map_err(fail)
    }
}

/// Jinja's `tojson` as Hugging Face's templates get it (Python's `json.dumps`): `", "` and
/// `": "` between items, or `indent` spaces per level; `<`, `>` and `&` not escaped.
fn tojson(value: Value, kwargs: minijinja::value::Kwargs) -> Result<Value, minijinja::Error> {
    let indent: Option<usize> = kwargs.get("indent")?;
    kwargs.assert_all_used()?;
    let json: Json = serde_json::to_value(&value).map_err(|e| minijinja::Error::new(ErrorKind::InvalidOperation, e.to_string()))?;
    let text = match indent {
        None => sieve_core::json_schema::to_spaced_json(&json),
        Some(n) => {
            let indent = vec![b' '; n];
            let mut out = Vec::new();
            let mut writer = serde_json::Serializer::with_formatter(&mut out, serde_json::ser::PrettyFormatter::with_indent(&indent));
            serde::Serialize::serialize(&json, &mut writer).map_err(|e| minijinja::Error::new(ErrorKind::InvalidOperation, e.to_string()))?;
            String::from_utf8(out).unwrap_or_default()
        }
    };
    Ok(Value::from_safe_string(text))
}

/// Checks OpenAI-shaped chat messages and returns them as templates read them: `content` a
/// string (text parts joined; absent or null is empty, as for an assistant message that only
/// calls tools). A message that is not an object with a `role`, a tool result without a
/// `tool_call_id`, or calls that are not `[{id, type: "function", function: {name, arguments}}]`
/// with `arguments` JSON text or an object is an error naming the message.
pub fn check_messages(messages: &[Json]) -> Result<Vec<Json>, ModelError> {
    messages
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let bad = |why: &str| ModelError::Input(format!("messages[{i}]: {why}"));
            let Some(o) = m.as_object() else { return Err(bad("not an object")) };
            let role = o.get("role").and_then(Json::as_str).ok_or_else(|| bad("no `role` string"))?;
            let content = match o.get("content") {
                None | Some(Json::Null) => String::new(),
                Some(Json::String(s)) => s.clone(),
                Some(Json::Array(parts)) => parts
                    .iter()
                    .map(|p| match (p.get("type").and_then(Json::as_str), p.get("text").and_then(Json::as_str)) {
                        (Some("text"), Some(t)) => Ok(t),
                        _ => Err(bad("a content part that is not {type: \"text\", text}")),
                    })
                    .collect::<Result<String, _>>()?,
                Some(_) => return Err(bad("`content` is not a string")),
            };
            let mut out = o.clone();
            out.insert("content".into(), Json::String(content));
            if role == "tool" && !o.get("tool_call_id").is_some_and(Json::is_string) {
                return Err(bad("a tool message needs a `tool_call_id` string"));
            }
            if let Some(calls) = o.get("tool_calls") {
                let ok = role == "assistant"
                    && calls.as_array().is_some_and(|calls| {
                        calls.iter().all(|c| {
                            c.get("id").is_some_and(Json::is_string)
                                && c.get("type").and_then(Json::as_str) == Some("function")
                                && c.pointer("/function/name").is_some_and(Json::is_string)
                                && c.pointer("/function/arguments").is_some_and(|a| a.is_string() || a.is_object())
                        })
                    });
                if !ok {
                    return Err(bad("`tool_calls` go on assistant messages as [{id, type: \"function\", function: {name, arguments}}], arguments JSON text or an object"));
                }
            }
            Ok(Json::Object(out))
        })
        .collect()
}
