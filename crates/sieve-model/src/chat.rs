//! Chat prompts in the model's own format: the Jinja template a GGUF carries in
//! `tokenizer.chat_template`, rendered by a real Jinja engine (minijinja, with Python's string
//! methods) as Hugging Face's `apply_chat_template` renders it, with `add_generation_prompt` and
//! the caller's extra variables (`chat_template_kwargs`); thinking models' `enable_thinking` is
//! false unless they set it. A model without a template gets plain ChatML.

use minijinja::{Environment, ErrorKind, Value, context};
use serde_json::{Map, Value as Json, json};

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

    /// The prompt for `(role, content)` messages, ending where the assistant's reply begins;
    /// `kwargs` are further variables for the template (`enable_thinking`, false by default).
    /// A template that does not render (a syntax error, or its own `raise_exception`, as for
    /// roles it does not accept) is an error that says why.
    pub fn render<S: AsRef<str>>(&self, messages: &[(S, S)], kwargs: &Map<String, Json>) -> Result<String, ModelError> {
        let mut env = Environment::new();
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.add_function("raise_exception", |message: String| -> Result<String, minijinja::Error> {
            Err(minijinja::Error::new(ErrorKind::InvalidOperation, message))
        });
        let fail = |e: minijinja::Error| ModelError::Tokenizer(format!("chat template: {e:#}"));
        let template = env.template_from_str(&self.source).map_err(fail)?;
        let messages: Vec<_> = messages.iter().map(|(r, c)| json!({"role": r.as_ref(), "content": c.as_ref()})).collect();
        let mut extra = Map::from_iter([("enable_thinking".to_string(), Json::Bool(false))]);
        extra.extend(kwargs.clone());
        let extra = Value::from_serialize(&extra);
        template
            .render(context! { messages, add_generation_prompt => true, bos_token => &self.bos, eos_token => &self.eos, ..extra })
            .map_err(fail)
    }
}
