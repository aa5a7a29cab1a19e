//! The page's request handling (`sieve_web::request`), on OpenAI-shaped requests generated from
//! the input's structure: messages of every role with text, parts or tool calls, a raw prompt,
//! every `response_format` (schemas from the schema generator, regexes, GBNF, structural tags),
//! tools, `tool_choice` and template variables, in well-formed and malformed shapes. A request
//! is refused with a `RequestError` or planned, its prompt renders or fails, and a planned
//! constraint compiles or fails, its masks agreeing with `accept_token`: never a panic.

#![no_main]

#[path = "common.rs"]
mod common;
#[path = "schemas.rs"]
mod schemas;

use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;
use schemas::{Lit, Name, Node, Pattern};
use serde_json::{Map, Value, json};
use sieve_core::{Constraint, ConstraintCache};
use sieve_model::chat::ChatTemplate;
use sieve_web::request::{Output, Request};

#[derive(Arbitrary, Debug)]
struct Input {
    messages: Option<Vec<Message>>,
    prompt: Option<Name>,
    format: Option<Format>,
    tools: Option<Vec<Tool>>,
    choice: Option<Choice>,
    parallel: Option<bool>,
    kwargs: Vec<(Name, Lit)>,
    /// A field of the request replaced by any value.
    odd: Option<(Field, Lit)>,
    ops: Vec<u8>,
}

#[derive(Arbitrary, Debug)]
enum Role {
    System,
    User,
    Assistant,
    Tool,
    Other(Name),
}

#[derive(Arbitrary, Debug)]
struct Message {
    role: Role,
    content: Option<Content>,
    calls: Vec<(Name, Lit)>,
    tool_call_id: Option<Name>,
}

#[derive(Arbitrary, Debug)]
enum Content {
    Text(Name),
    Parts(Vec<Name>),
    Other(Lit),
}

#[derive(Arbitrary, Debug)]
enum Format {
    Text,
    JsonObject,
    JsonSchema(Node, Option<bool>),
    Regex(Pattern),
    Grammar(Grammar),
    StructuralTag { tags: Vec<(Name, Node, Name)>, triggers: Vec<Name>, at_least_one: Option<bool> },
    Other(Name),
}

#[derive(Arbitrary, Debug)]
enum Grammar {
    Literal(Name),
    Repeat(Name),
    NoRoot,
    Broken(Name),
}

#[derive(Arbitrary, Debug)]
struct Tool {
    name: Name,
    description: Option<Name>,
    parameters: Option<Node>,
    strict: Option<bool>,
    not_a_function: bool,
}

#[derive(Arbitrary, Debug)]
enum Choice {
    Auto,
    None,
    Required,
    Named(Name),
    Other(Lit),
}

#[derive(Arbitrary, Debug)]
enum Field {
    Messages,
    Prompt,
    ResponseFormat,
    Tools,
    ToolChoice,
    MaxTokens,
    Temperature,
    TemplateKwargs,
}

impl Input {
    /// The request as JSON text, as the page would send it.
    fn request(&self) -> String {
        let mut r = Map::new();
        if let Some(messages) = &self.messages {
            r.insert("messages".into(), Value::Array(messages.iter().take(6).map(Message::value).collect()));
        }
        if let Some(p) = &self.prompt {
            r.insert("prompt".into(), json!(p.text()));
        }
        if let Some(f) = &self.format {
            r.insert("response_format".into(), f.value());
        }
        if let Some(tools) = &self.tools {
            r.insert("tools".into(), Value::Array(tools.iter().take(4).map(Tool::value).collect()));
        }
        if let Some(c) = &self.choice {
            let choice = match c {
                Choice::Auto => json!("auto"),
                Choice::None => json!("none"),
                Choice::Required => json!("required"),
                Choice::Named(n) => json!({"type": "function", "function": {"name": n.text()}}),
                Choice::Other(l) => l.value(),
            };
            r.insert("tool_choice".into(), choice);
        }
        if let Some(p) = self.parallel {
            r.insert("parallel_tool_calls".into(), json!(p));
        }
        if !self.kwargs.is_empty() {
            let kwargs: Map<String, Value> = self.kwargs.iter().take(4).map(|(k, v)| (k.text(), v.value())).collect();
            r.insert("chat_template_kwargs".into(), Value::Object(kwargs));
        }
        if let Some((field, value)) = &self.odd {
            let key = match field {
                Field::Messages => "messages",
                Field::Prompt => "prompt",
                Field::ResponseFormat => "response_format",
                Field::Tools => "tools",
                Field::ToolChoice => "tool_choice",
                Field::MaxTokens => "max_tokens",
                Field::Temperature => "temperature",
                Field::TemplateKwargs => "chat_template_kwargs",
            };
            r.insert(key.into(), value.value());
        }
        Value::Object(r).to_string()
    }
}

impl Message {
    fn value(&self) -> Value {
        let role = match &self.role {
            Role::System => "system".to_string(),
            Role::User => "user".to_string(),
            Role::Assistant => "assistant".to_string(),
            Role::Tool => "tool".to_string(),
            Role::Other(n) => n.text(),
        };
        let mut m = json!({"role": role});
        if let Some(c) = &self.content {
            m["content"] = match c {
                Content::Text(t) => json!(t.text()),
                Content::Parts(parts) => Value::Array(parts.iter().take(3).map(|p| json!({"type": "text", "text": p.text()})).collect()),
                Content::Other(l) => l.value(),
            };
        }
        if !self.calls.is_empty() {
            let calls: Vec<Value> = self
                .calls
                .iter()
                .take(3)
                .map(|(name, args)| json!({"id": "call_1", "type": "function", "function": {"name": name.text(), "arguments": args.value().to_string()}}))
                .collect();
            m["tool_calls"] = Value::Array(calls);
        }
        if let Some(id) = &self.tool_call_id {
            m["tool_call_id"] = json!(id.text());
        }
        m
    }
}

impl Format {
    fn value(&self) -> Value {
        match self {
            Format::Text => json!({"type": "text"}),
            Format::JsonObject => json!({"type": "json_object"}),
            Format::JsonSchema(schema, strict) => {
                let mut f = json!({"type": "json_schema", "json_schema": {"name": "out", "schema": schema.value()}});
                if let Some(s) = strict {
                    f["json_schema"]["strict"] = json!(s);
                }
                f
            }
            Format::Regex(p) => json!({"type": "regex", "pattern": p.text()}),
            Format::Grammar(g) => {
                let text = match g {
                    Grammar::Literal(n) => format!("root ::= {}", json!(n.text())),
                    Grammar::Repeat(n) => format!("root ::= item+\nitem ::= {} | [0-9]", json!(n.text())),
                    Grammar::NoRoot => "start ::= \"a\"".to_string(),
                    Grammar::Broken(n) => format!("root ::= ({}", n.text()),
                };
                json!({"type": "grammar", "grammar": text})
            }
            Format::StructuralTag { tags, triggers, at_least_one } => {
                let structures: Vec<Value> =
                    tags.iter().take(3).map(|(begin, schema, end)| json!({"begin": begin.text(), "schema": schema.value(), "end": end.text()})).collect();
                let triggers: Vec<Value> = triggers.iter().take(3).map(|t| json!(t.text())).collect();
                let mut f = json!({"type": "structural_tag", "structures": structures, "triggers": triggers});
                if let Some(a) = at_least_one {
                    f["at_least_one"] = json!(a);
                }
                f
            }
            Format::Other(n) => json!({"type": n.text()}),
        }
    }
}

impl Tool {
    fn value(&self) -> Value {
        let mut function = json!({"name": self.name.text()});
        if let Some(d) = &self.description {
            function["description"] = json!(d.text());
        }
        if let Some(p) = &self.parameters {
            function["parameters"] = p.value();
        }
        if let Some(s) = self.strict {
            function["strict"] = json!(s);
        }
        json!({"type": if self.not_a_function { "retrieval" } else { "function" }, "function": function})
    }
}

fuzz_target!(|input: Input| {
    let text = input.request();
    if std::env::var_os("SIEVE_FUZZ_PRINT").is_some() {
        // To turn an input into a regression test: the request it stands for.
        eprintln!("{text}");
    }
    let Ok(request) = serde_json::from_str::<Request>(&text) else { return };
    let template = ChatTemplate::chatml();
    let Ok(toolbox) = request.toolbox(&template) else { return };
    let _ = request.prompt_text(&template, toolbox.as_ref());
    let cache = ConstraintCache::new(common::limits(), 4);
    let Ok(planned) = request.plan(&cache, toolbox.as_ref()) else { return };
    let compiled = match planned.output {
        Output::Text => return,
        Output::Ready(c) => Ok(c),
        Output::Compile(source, Some(grammar)) => cache.get_with(&source, |limits| Constraint::from_grammar(&grammar, limits)),
        Output::Compile(source, None) => cache.get(&source),
    };
    if let Ok(c) = compiled {
        common::drive(&c, &common::vocab(), &input.ops);
    }
});
