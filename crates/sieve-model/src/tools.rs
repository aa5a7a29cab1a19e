//! Tool calls (OpenAI's `tools`, `tool_choice`, `parallel_tool_calls`) in the model's own
//! format: the prompt that describes the tools, the constraint that makes every call exact (a
//! [`StructuralTag`]: free text until the call tag, then one of the tools' names and arguments
//! valid for that tool's schema), and the reply read back into calls, whole or as it streams.
//!
//! The format comes from the chat template: one that writes `<tool_call>` (Qwen2.5, Qwen3,
//! Hermes) gets `<tool_call>\n{"name": NAME, "arguments": ARGS}\n</tool_call>` and renders the
//! tools itself; one that speaks of `"parameters"` (Llama 3.1 and later) gets
//! `{"name": NAME, "parameters": ARGS}`. Any other template (SmolLM2's) gets the first format,
//! described in a system message this module writes, with earlier calls and tool results
//! written into the messages as the tags they were.

use serde::Deserialize;
use serde_json::{Map, Value as Json, json};
use sieve_core::json_schema::{self, JsonSchemaOptions, Mode, Whitespace};
use sieve_core::{Limits, StructuralTag, Tag, TagContent};

use crate::chat::ChatTemplate;
use crate::error::ModelError;

/// A function the model may call.
#[derive(Debug, Clone, PartialEq)]
pub struct Tool {
    /// 1 to 64 of `a-z A-Z 0-9 _ -`.
    pub name: String,
    pub description: Option<String>,
    /// The JSON Schema of the arguments.
    pub parameters: Json,
    /// True (the default): a keyword that cannot be enforced exactly is an error; false: it is
    /// left out, with a warning.
    pub strict: bool,
}

/// Which calls the reply may or must hold (OpenAI's `tool_choice`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ToolChoice {
    /// Text, calls, or both.
    #[default]
    Auto,
    /// At least one call, first.
    Required,
    /// Text only: the call tag cannot appear.
    None,
    /// One call of this tool.
    Function(String),
}

/// A `tools` or `tool_choice` that cannot be used: which tool, and for a schema that cannot be
/// enforced, the schema error (its keyword and JSON pointer into the tool's `parameters`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolError {
    pub tool: Option<String>,
    pub message: String,
    pub schema: Option<json_schema::SchemaError>,
}

impl std::fmt::Display for ToolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.tool {
            Some(tool) => write!(f, "tool {tool:?}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for ToolError {}

fn tool_error(tool: Option<&str>, message: impl Into<String>) -> ToolError {
    ToolError { tool: tool.map(str::to_string), message: message.into(), schema: None }
}

/// How a model family writes a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallFormat {
    /// `<tool_call>\n{"name": "NAME", "arguments": ARGS}\n</tool_call>`.
    Hermes,
    /// `{"name": "NAME", "parameters": ARGS}`.
    Llama3,
}

impl CallFormat {
    /// The text that starts every call.
    pub fn trigger(self) -> &'static str {
        match self {
            CallFormat::Hermes => "<tool_call>",
            CallFormat::Llama3 => "{\"name\": \"",
        }
    }

    /// A call of `name` up to its arguments.
    pub fn begin(self, name: &str) -> String {
        match self {
            CallFormat::Hermes => format!("<tool_call>\n{{\"name\": \"{name}\", \"arguments\": "),
            CallFormat::Llama3 => format!("{{\"name\": \"{name}\", \"parameters\": "),
        }
    }

    /// What follows the arguments.
    pub fn end(self) -> &'static str {
        match self {
            CallFormat::Hermes => "}\n</tool_call>",
            CallFormat::Llama3 => "}",
        }
    }
}

/// One call the model made: `arguments` is JSON valid for the tool's parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// A reply read back: its text outside the calls (trimmed; `None` when there are calls and no
/// text), and its calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub content: Option<String>,
    pub calls: Vec<ToolCall>,
}

/// The tools of one request, checked, with the format of the model that gets them.
#[derive(Debug, Clone)]
pub struct Toolbox {
    tools: Vec<Tool>,
    choice: ToolChoice,
    parallel: bool,
    format: CallFormat,
    /// The template renders `tools` and calls itself.
    native: bool,
    warnings: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OpenAiTool {
    r#type: String,
    function: OpenAiFunction,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OpenAiFunction {
    name: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    parameters: Option<Json>,
    #[serde(default)]
    strict: Option<bool>,
}

impl Tool {
    /// `tools` as OpenAI's API takes them: `[{type: "function", function: {name, description,
    /// parameters, strict}}]`. No `parameters` means no arguments (`{}`).
    pub fn from_openai(tools: &Json) -> Result<Vec<Tool>, ToolError> {
        let Json::Array(items) = tools else { return Err(tool_error(None, "`tools` is not an array")) };
        items
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let named = t.pointer("/function/name").and_then(Json::as_str);
                let t: OpenAiTool =
                    serde_json::from_value(t.clone()).map_err(|e| tool_error(named, format!("tools[{i}] is not a function tool: {e}")))?;
                if t.r#type != "function" {
                    return Err(tool_error(named, format!("tools[{i}] has type {:?}; only \"function\" is supported", t.r#type)));
                }
                let f = t.function;
                let none = json!({"type": "object", "properties": {}, "additionalProperties": false});
                Ok(Tool { name: f.name, description: f.description, parameters: f.parameters.unwrap_or(none), strict: f.strict != Some(false) })
            })
            .collect()
    }

    /// The tool as the OpenAI API and chat templates write it.
    pub fn to_openai(&self) -> Json {
        let mut function = Map::new();
        function.insert("name".into(), json!(self.name));
        if let Some(d) = &self.description {
            function.insert("description".into(), json!(d));
        }
        function.insert("parameters".into(), self.parameters.clone());
        json!({"type": "function", "function": function})
    }
}

impl ToolChoice {
    /// OpenAI's `tool_choice`: `"auto"`, `"required"`, `"none"` or `{type: "function",
    /// function: {name}}`; absent is `auto`.
    pub fn from_openai(choice: Option<&Json>) -> Result<ToolChoice, ToolError> {
        match choice {
            None | Some(Json::Null) => Ok(ToolChoice::Auto),
            Some(Json::String(s)) => match s.as_str() {
                "auto" => Ok(ToolChoice::Auto),
                "required" => Ok(ToolChoice::Required),
                "none" => Ok(ToolChoice::None),
                other => Err(tool_error(None, format!("tool_choice {other:?}: \"auto\", \"required\", \"none\" or a function"))),
            },
            Some(v) => match (v.get("type").and_then(Json::as_str), v.pointer("/function/name").and_then(Json::as_str)) {
                (Some("function"), Some(name)) => Ok(ToolChoice::Function(name.to_string())),
                _ => Err(tool_error(None, format!("tool_choice {v}: \"auto\", \"required\", \"none\" or {{type: \"function\", function: {{name}}}}"))),
            },
        }
    }
}

/// Arguments as the constraint writes them: JSON without whitespace, which a small model
/// cannot pad with endless spaces.
fn schema_options(strict: bool) -> JsonSchemaOptions {
    JsonSchemaOptions { whitespace: Whitespace::Compact, mode: if strict { Mode::Strict } else { Mode::Lenient }, ..Default::default() }
}

impl Toolbox {
    /// Checks the tools (names, no two alike, each schema translatable) and the choice (a named
    /// function must be one of them), for a model with `template`.
    pub fn new(tools: Vec<Tool>, choice: ToolChoice, parallel: bool, template: &ChatTemplate) -> Result<Toolbox, ToolError> {
        let mut warnings = Vec::new();
        for (i, tool) in tools.iter().enumerate() {
            let name = &tool.name;
            if name.is_empty() || name.len() > 64 || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-') {
                return Err(tool_error(Some(name), "a tool's name is 1 to 64 of a-z, A-Z, 0-9, _ and -"));
            }
            if tools[..i].iter().any(|t| &t.name == name) {
                return Err(tool_error(Some(name), "two tools have this name"));
            }
            let g = json_schema::to_grammar(&tool.parameters, &schema_options(tool.strict), &Limits::default()).map_err(|e| ToolError {
                tool: Some(name.clone()),
                message: format!("parameters: {e}"),
                schema: Some(e),
            })?;
            warnings.extend(g.warnings.iter().map(|w| format!("tool {name:?}: {w}")));
        }
        if let ToolChoice::Function(name) = &choice
            && !tools.iter().any(|t| &t.name == name)
        {
            return Err(tool_error(Some(name), "tool_choice names a tool that is not in `tools`"));
        }
        if tools.is_empty() && matches!(choice, ToolChoice::Required) {
            return Err(tool_error(None, "tool_choice \"required\" with no tools"));
        }
        let source = template.source();
        let (format, native) = if source.contains("<tool_call>") {
            (CallFormat::Hermes, true)
        } else if source.contains("tools") && source.contains("\"parameters\"") {
            (CallFormat::Llama3, true)
        } else {
            (CallFormat::Hermes, false)
        };
        Ok(Toolbox { tools, choice, parallel, format, native, warnings })
    }

    /// The format calls are written in.
    pub fn format(&self) -> CallFormat {
        self.format
    }

    /// Keywords left out of non-strict tools' schemas.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The constraint of the reply: text in which the call tag starts a call of one of the
    /// tools (all of them, or the named one), arguments exact to its schema; calls first with
    /// `required` or a named tool, at most one without `parallel`; with `none`, text in which
    /// the tag never appears.
    pub fn constraint(&self) -> StructuralTag {
        let tags = self
            .tools
            .iter()
            .filter(|t| match &self.choice {
                ToolChoice::Function(name) => &t.name == name,
                ToolChoice::None => false,
                _ => true,
            })
            .map(|t| Tag {
                begin: self.format.begin(&t.name),
                content: TagContent::JsonSchema(t.parameters.to_string(), schema_options(t.strict)),
                end: self.format.end().to_string(),
            })
            .collect();
        let (at_least_one, stop_after_first) = match self.choice {
            ToolChoice::Auto | ToolChoice::None => (false, !self.parallel),
            ToolChoice::Required => (true, !self.parallel),
            ToolChoice::Function(_) => (true, true),
        };
        StructuralTag { tags, triggers: vec![self.format.trigger().to_string()], at_least_one, stop_after_first }
    }

    /// The prompt for `messages` (see [`ChatTemplate::render`]) with the tools described (not
    /// with `none`), ending where the reply begins.
    pub fn prompt(&self, template: &ChatTemplate, messages: &[Json], kwargs: &Map<String, Json>) -> Result<String, ModelError> {
        let mut messages = crate::chat::check_messages(messages)?;
        let offered = self.choice != ToolChoice::None && !self.tools.is_empty();
        let mut kwargs = kwargs.clone();
        if self.native {
            if offered {
                kwargs.insert("tools".into(), Json::Array(self.tools.iter().map(Tool::to_openai).collect()));
            }
            // Templates write earlier calls' arguments with `tojson`, as Hugging Face's take them:
            // objects, not the JSON text OpenAI's messages carry.
            for m in &mut messages {
                for call in m.get_mut("tool_calls").and_then(Json::as_array_mut).into_iter().flatten() {
                    if let Some(args) = call.pointer_mut("/function/arguments")
                        && let Some(parsed) = args.as_str().and_then(|a| serde_json::from_str::<Json>(a).ok())
                    {
                        *args = parsed;
                    }
                }
            }
            return template.render_checked(&messages, &kwargs);
        }
        messages = self.written_out(messages);
        if offered {
            let text = self.system_text();
            match messages.first_mut() {
                Some(first) if first["role"] == "system" => {
                    let content = first["content"].as_str().unwrap_or_default();
                    first["content"] = json!(format!("{content}\n\n{text}"));
                }
                _ => messages.insert(0, json!({"role": "system", "content": text})),
            }
        }
        template.render_checked(&messages, &kwargs)
    }

    /// The generic format's description of the tools (as Qwen's templates write it).
    fn system_text(&self) -> String {
        let tools: Vec<String> = self.tools.iter().map(|t| json_schema::to_spaced_json(&t.to_openai())).collect();
        format!(
            "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n\
             You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n{}\n</tools>\n\n\
             For each function call, return a json object with function name and arguments within \
             <tool_call></tool_call> XML tags:\n<tool_call>\n{{\"name\": <function-name>, \"arguments\": <args-json-object>}}\n</tool_call>",
            tools.join("\n")
        )
    }

    /// Messages for a template that knows no tools: an assistant's calls written after its
    /// text as the tags they were, and tool results as a user message of `<tool_response>`s.
    fn written_out(&self, messages: Vec<Json>) -> Vec<Json> {
        let mut out: Vec<Json> = Vec::with_capacity(messages.len());
        // Whether the last message out holds tool results, which the next result joins.
        let mut results = false;
        for m in messages {
            let content = m["content"].as_str().unwrap_or_default().to_string();
            let tool = m["role"] == "tool";
            if tool {
                let response = format!("<tool_response>\n{content}\n</tool_response>");
                match out.last_mut() {
                    Some(last) if results => {
                        let before = last["content"].as_str().unwrap_or_default();
                        last["content"] = json!(format!("{before}\n{response}"));
                    }
                    _ => out.push(json!({"role": "user", "content": response})),
                }
            } else if let Some(calls) = m.get("tool_calls").and_then(Json::as_array) {
                let calls = calls.iter().map(|c| {
                    let name = c.pointer("/function/name").and_then(Json::as_str).unwrap_or_default();
                    // Arguments as JSON text, or an object written compactly.
                    let args = match c.pointer("/function/arguments") {
                        Some(Json::String(text)) => text.clone(),
                        Some(other) => other.to_string(),
                        None => "{}".into(),
                    };
                    format!("{}{args}{}", self.format.begin(name), self.format.end())
                });
                let text: Vec<String> = (!content.is_empty()).then_some(content).into_iter().chain(calls).collect();
                out.push(json!({"role": "assistant", "content": text.join("\n")}));
            } else {
                out.push(m);
            }
            results = tool;
        }
        out
    }

    /// A reader of the reply, naming calls `{id_prefix}{n}`.
    pub fn reader(&self, id_prefix: &str) -> CallReader {
        let names = self.tools.iter().map(|t| (self.format.begin(&t.name), t.name.clone())).collect();
        CallReader {
            trigger: self.format.trigger().to_string(),
            begins: names,
            end: self.format.end().to_string(),
            id_prefix: id_prefix.to_string(),
            state: Read::Text,
            buffer: String::new(),
            text: String::new(),
            calls: Vec::new(),
        }
    }
}

/// What a reader finds in the text it is given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// Text outside the calls.
    Text(String),
    /// Call `index` starts.
    Call { index: usize, id: String, name: String },
    /// More of call `index`'s arguments.
    Arguments { index: usize, text: String },
}

#[derive(Debug, Clone)]
enum Read {
    Text,
    /// After the trigger, before a tool's name is known.
    Begin,
    Arguments(JsonEnd),
    End,
}

/// Reads a reply into text and calls as it comes: text is held back only while it may be the
/// start of the call tag, arguments while they may be the end of the call.
#[derive(Debug, Clone)]
pub struct CallReader {
    trigger: String,
    /// Per tool: the text of a call up to its arguments, and the name.
    begins: Vec<(String, String)>,
    end: String,
    id_prefix: String,
    state: Read,
    /// Text read and not yet told.
    buffer: String,
    /// All the text outside calls.
    text: String,
    calls: Vec<ToolCall>,
}

impl CallReader {
    /// Reads `piece`, the next text of the reply.
    pub fn push(&mut self, piece: &str) -> Vec<Event> {
        self.buffer.push_str(piece);
        let mut events = Vec::new();
        loop {
            match &mut self.state {
                Read::Text => match self.buffer.find(&self.trigger) {
                    Some(at) => {
                        let text: String = self.buffer.drain(..at).collect();
                        self.tell_text(text, &mut events);
                        self.state = Read::Begin;
                    }
                    None => {
                        let keep = held_back(&self.buffer, &self.trigger);
                        let text: String = self.buffer.drain(..self.buffer.len() - keep).collect();
                        self.tell_text(text, &mut events);
                        return events;
                    }
                },
                Read::Begin => {
                    if let Some((begin, name)) = self.begins.iter().find(|(b, _)| self.buffer.starts_with(b.as_str())) {
                        let (len, name) = (begin.len(), name.clone());
                        self.buffer.drain(..len);
                        let index = self.calls.len();
                        let id = format!("{}{index}", self.id_prefix);
                        self.calls.push(ToolCall { id: id.clone(), name: name.clone(), arguments: String::new() });
                        events.push(Event::Call { index, id, name });
                        self.state = Read::Arguments(JsonEnd::default());
                    } else if self.begins.iter().any(|(b, _)| b.starts_with(self.buffer.as_str())) {
                        return events;
                    } else {
                        return self.not_a_call(events);
                    }
                }
                Read::Arguments(scan) => {
                    let taken = scan.read(&self.buffer);
                    let done = scan.done;
                    let text: String = self.buffer.drain(..taken).collect();
                    if !text.is_empty() {
                        let index = self.calls.len() - 1;
                        self.calls[index].arguments.push_str(&text);
                        events.push(Event::Arguments { index, text });
                    }
                    if !done {
                        return events;
                    }
                    self.state = Read::End;
                }
                Read::End => {
                    if self.buffer.starts_with(self.end.as_str()) {
                        self.buffer.drain(..self.end.len());
                        self.state = Read::Text;
                    } else if self.end.starts_with(self.buffer.as_str()) {
                        return events;
                    } else {
                        return self.not_a_call(events);
                    }
                }
            }
        }
    }

    /// Text held as a call's start that does not go on as one (only without the constraint):
    /// it is text, told as such.
    fn not_a_call(&mut self, mut events: Vec<Event>) -> Vec<Event> {
        let text = std::mem::take(&mut self.buffer);
        self.tell_text(text, &mut events);
        self.state = Read::Text;
        events
    }

    fn tell_text(&mut self, text: String, events: &mut Vec<Event>) {
        if !text.is_empty() {
            self.text.push_str(&text);
            events.push(Event::Text(text));
        }
    }

    /// The text held back at the end of the reply (a start of the call tag that never went on),
    /// told as text.
    pub fn flush(&mut self) -> Vec<Event> {
        let mut events = Vec::new();
        if matches!(self.state, Read::Text) {
            let text = std::mem::take(&mut self.buffer);
            self.tell_text(text, &mut events);
        }
        events
    }

    /// The reply: its text and its complete calls. A call cut short (the reply ran out of
    /// tokens) is not a call: its text goes with the content.
    pub fn finish(mut self) -> Reply {
        self.flush();
        if !matches!(self.state, Read::Text)
            && let Some(cut) = self.calls.pop()
        {
            let begin = self.begins.iter().find(|(_, n)| *n == cut.name).map_or("", |(b, _)| b.as_str());
            self.text.push_str(&format!("{begin}{}{}", cut.arguments, self.buffer));
        }
        let content = self.text.trim().to_string();
        let content = if content.is_empty() && !self.calls.is_empty() { None } else { Some(content) };
        Reply { content, calls: self.calls }
    }
}

/// How many bytes at the end of `text` may be the start of `tag` (on a character boundary).
fn held_back(text: &str, tag: &str) -> usize {
    (1..tag.len().min(text.len() + 1))
        .rev()
        .find(|&n| text.is_char_boundary(text.len() - n) && tag.starts_with(&text[text.len() - n..]))
        .unwrap_or(0)
}

/// Finds where one JSON value ends, a piece at a time: strings and nesting are followed, so a
/// `}` inside a string or an inner object does not end it.
#[derive(Debug, Clone, Default)]
struct JsonEnd {
    depth: u32,
    in_string: bool,
    escaped: bool,
    /// A number or a literal (`true`, ...), which ends at the first byte not its own.
    scalar: bool,
    done: bool,
}

impl JsonEnd {
    /// How many bytes of `text` belong to the value (all of them unless it ends inside).
    fn read(&mut self, text: &str) -> usize {
        for (i, b) in text.bytes().enumerate() {
            if self.done {
                return i;
            }
            if self.in_string {
                match (self.escaped, b) {
                    (true, _) => self.escaped = false,
                    (false, b'\\') => self.escaped = true,
                    (false, b'"') => {
                        self.in_string = false;
                        self.done = self.depth == 0;
                    }
                    _ => {}
                }
            } else if self.scalar {
                if !(b.is_ascii_alphanumeric() || matches!(b, b'.' | b'+' | b'-')) {
                    self.done = true;
                    return i;
                }
            } else {
                match b {
                    b'"' => self.in_string = true,
                    b'{' | b'[' => self.depth += 1,
                    b'}' | b']' => {
                        self.depth = self.depth.saturating_sub(1);
                        self.done = self.depth == 0;
                    }
                    b' ' | b'\t' | b'\n' | b'\r' | b',' | b':' => {}
                    _ => self.scalar = self.depth == 0,
                }
            }
        }
        text.len()
    }
}
