//! Tool calls: the format each template implies (Qwen3's real template renders the tools and the
//! calls itself; SmolLM2's gets the generic description and history written out), the
//! constraint each `tool_choice` makes, the reply read back whole and piece by piece alike, and
//! bad tools, choices and messages refused with the tool named.

use serde_json::{Map, Value, json};
use sieve_core::{Constraint, ConstraintSource, Limits};
use sieve_model::chat::ChatTemplate;
use sieve_model::tools::{CallFormat, Event, Reply, Tool, ToolCall, ToolChoice, Toolbox};
use sieve_model::{Gguf, Tokenizer};

use crate::common;

fn tools() -> Vec<Tool> {
    Tool::from_openai(&json!([
        {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "unit": {"enum": ["C", "F"]}},
                "required": ["city"], "additionalProperties": false}}},
        {"type": "function", "function": {"name": "add", "description": "a + b",
            "parameters": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                "required": ["a", "b"], "additionalProperties": false}}}
    ]))
    .expect("tools")
}

fn qwen3() -> ChatTemplate {
    let path = common::package_dir().join("../../assets/tokenizers/qwen3.config.json");
    let config: Value = serde_json::from_str(&std::fs::read_to_string(&path).expect("run scripts/fetch-assets.sh")).expect("json");
    ChatTemplate::new(config["chat_template"].as_str().expect("template"), "", "<|im_end|>")
}

fn smollm2() -> Tokenizer {
    Tokenizer::from_gguf(&Gguf::parse(&common::gguf_bytes()).expect("gguf")).expect("tokenizer")
}

/// A conversation with one call made and answered.
fn second_turn() -> Vec<Value> {
    vec![
        json!({"role": "user", "content": "Weather in Oslo?"}),
        json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"}}]}),
        json!({"role": "tool", "tool_call_id": "call_1", "content": "4 C, rain"}),
    ]
}

fn read_all(toolbox: &Toolbox, pieces: &[&str]) -> (Reply, Vec<Event>) {
    let mut reader = toolbox.reader("call_");
    let mut events: Vec<Event> = pieces.iter().flat_map(|p| reader.push(p)).collect();
    events.extend(reader.flush());
    (reader.finish(), events)
}

#[test]
fn qwen3_renders_the_tools_and_the_calls_itself() {
    let template = qwen3();
    let toolbox = Toolbox::new(tools(), ToolChoice::Auto, true, &template).expect("toolbox");
    assert_eq!(toolbox.format(), CallFormat::Hermes);
    let prompt = toolbox.prompt(&template, &second_turn(), &Map::new()).expect("renders");
    // The template's own words, with the tools as Python's json.dumps writes them.
    assert!(prompt.starts_with("<|im_start|>system\n# Tools\n"), "{prompt}");
    assert!(prompt.contains("<tools>\n{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": \"Weather in a city\", \"parameters\": {\"type\": \"object\""), "{prompt}");
    assert!(prompt.contains("<|im_start|>assistant\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call><|im_end|>"), "{prompt}");
    assert!(prompt.contains("<|im_start|>user\n<tool_response>\n4 C, rain\n</tool_response><|im_end|>"), "{prompt}");
    assert!(prompt.ends_with("<|im_start|>assistant\n<think>\n\n</think>\n\n"), "{prompt}");
    // `none` offers no tools.
    let none = Toolbox::new(tools(), ToolChoice::None, true, &template).expect("toolbox");
    assert!(!none.prompt(&template, &second_turn(), &Map::new()).expect("renders").contains("<tools>"));
}

#[test]
fn smollm2_gets_the_generic_format_written_into_its_messages() {
    let tokenizer = smollm2();
    let template = tokenizer.chat_template();
    let toolbox = Toolbox::new(tools(), ToolChoice::Auto, true, template).expect("toolbox");
    assert_eq!(toolbox.format(), CallFormat::Hermes);
    let mut messages = vec![json!({"role": "system", "content": "Be brief."})];
    messages.extend(second_turn());
    let prompt = toolbox.prompt(template, &messages, &Map::new()).expect("renders");
    assert!(prompt.starts_with("<|im_start|>system\nBe brief.\n\n# Tools\n\nYou may call one or more functions"), "{prompt}");
    assert!(prompt.contains("<tools>\n{\"type\": \"function\", \"function\": {\"name\": \"get_weather\""), "{prompt}");
    assert!(prompt.contains("<|im_start|>assistant\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\":\"Oslo\"}}\n</tool_call><|im_end|>"), "{prompt}");
    assert!(prompt.contains("<|im_start|>user\n<tool_response>\n4 C, rain\n</tool_response><|im_end|>"), "{prompt}");
    // Arguments given as an object are written as the same JSON.
    let mut objects = second_turn();
    objects[1]["tool_calls"][0]["function"]["arguments"] = json!({"city": "Oslo"});
    assert_eq!(toolbox.prompt(template, &objects, &Map::new()).expect("renders"), toolbox.prompt(template, &second_turn(), &Map::new()).expect("renders"));
    // Without a system message of the caller's, the tools are one.
    let prompt = toolbox.prompt(template, &second_turn(), &Map::new()).expect("renders");
    assert!(prompt.starts_with("<|im_start|>system\n# Tools\n"), "{prompt}");
}

#[test]
fn a_template_that_speaks_of_parameters_gets_llama_calls() {
    let template = ChatTemplate::new(
        "{% if tools %}Respond in the format {\"name\": function name, \"parameters\": dictionary of argument name and its value}.\
         {% for t in tools %}{{ t | tojson(indent=4) }}{% endfor %}{% endif %}{% for m in messages %}[{{ m.role }}] {{ m.content }}{% endfor %}",
        "",
        "",
    );
    let toolbox = Toolbox::new(tools(), ToolChoice::Required, false, &template).expect("toolbox");
    assert_eq!(toolbox.format(), CallFormat::Llama3);
    let prompt = toolbox.prompt(&template, &[json!({"role": "user", "content": "2+3?"})], &Map::new()).expect("renders");
    assert!(prompt.contains("{\n    \"type\": \"function\",\n    \"function\": {\n        \"name\": \"get_weather\""), "{prompt}");
    let c = Constraint::compile(&ConstraintSource::StructuralTag(toolbox.constraint()), &Limits::default()).expect("compiles");
    assert!(c.matches(br#"{"name": "add", "parameters": {"a":2,"b":3}}"#).unwrap());
    assert!(!c.matches(br#"{"name": "add", "parameters": {"a":2}}"#).unwrap());
    let (reply, _) = read_all(&toolbox, &[r#"{"name": "add", "parameters": {"a":2,"b":3}}"#]);
    assert_eq!(reply.calls, vec![ToolCall { id: "call_0".into(), name: "add".into(), arguments: r#"{"a":2,"b":3}"#.into() }]);
}

/// What each `tool_choice` lets the reply be, checked on whole outputs.
#[test]
fn each_tool_choice_constrains_the_reply() {
    let template = qwen3();
    let call = |name: &str, args: &str| format!("<tool_call>\n{{\"name\": \"{name}\", \"arguments\": {args}}}\n</tool_call>");
    let weather = call("get_weather", r#"{"city":"Oslo","unit":"C"}"#);
    let add = call("add", r#"{"a":1.5,"b":-2}"#);
    let outputs = [
        ("text".to_string(), "It is sunny.".to_string()),
        ("a call".to_string(), weather.clone()),
        ("text, then a call".to_string(), format!("Let me look.\n{weather}")),
        ("two calls".to_string(), format!("{weather}\n{add}")),
        ("a bad call".to_string(), call("get_weather", r#"{"town":"Oslo"}"#)),
        ("an unknown tool".to_string(), call("sum", r#"{"a":1,"b":2}"#)),
        ("another tool".to_string(), add.clone()),
    ];
    let expect = [
        (ToolChoice::Auto, true, [true, true, true, true, false, false, true]),
        (ToolChoice::Auto, false, [true, true, true, false, false, false, true]),
        (ToolChoice::Required, true, [false, true, false, true, false, false, true]),
        (ToolChoice::None, true, [true, false, false, false, false, false, false]),
        (ToolChoice::Function("get_weather".into()), true, [false, true, false, false, false, false, false]),
    ];
    for (choice, parallel, allowed) in expect {
        let toolbox = Toolbox::new(tools(), choice.clone(), parallel, &template).expect("toolbox");
        let c = Constraint::compile(&ConstraintSource::StructuralTag(toolbox.constraint()), &Limits::default()).expect("compiles");
        for ((what, text), allowed) in outputs.iter().zip(allowed) {
            assert_eq!(c.matches(text.as_bytes()).unwrap(), allowed, "{choice:?}, parallel {parallel}: {what}");
        }
    }
}

/// The reply read back: text and calls apart, arguments whole (braces and the end tag inside a
/// string do not end them), the same events however the text is cut.
#[test]
fn replies_read_back_the_same_however_they_are_cut() {
    let toolbox = Toolbox::new(tools(), ToolChoice::Auto, true, &qwen3()).expect("toolbox");
    let args = r#"{"city":"} </tool_call> <tool_call>\"","unit":"F"}"#;
    let text = format!(
        "Let me see. <tool_ca\n<tool_call>\n{{\"name\": \"get_weather\", \"arguments\": {args}}}\n</tool_call>\n\
         <tool_call>\n{{\"name\": \"add\", \"arguments\": {{\"a\":1,\"b\":[2]}}}}\n</tool_call> Done <tool"
    );
    let (whole, _) = read_all(&toolbox, &[&text]);
    assert_eq!(whole.content.as_deref(), Some("Let me see. <tool_ca\n\n Done <tool"));
    assert_eq!(
        whole.calls,
        vec![
            ToolCall { id: "call_0".into(), name: "get_weather".into(), arguments: args.into() },
            ToolCall { id: "call_1".into(), name: "add".into(), arguments: r#"{"a":1,"b":[2]}"#.into() },
        ]
    );
    let chars: Vec<String> = text.chars().map(String::from).collect();
    let (by_char, events) = read_all(&toolbox, &chars.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(by_char, whole);
    // The events spell the reply: text as it was, then each call's name and its arguments.
    let mut texts = String::new();
    let mut calls: Vec<(String, String)> = Vec::new();
    for e in events {
        match e {
            Event::Text(t) => texts.push_str(&t),
            Event::Call { index, name, .. } => {
                assert_eq!(index, calls.len());
                calls.push((name, String::new()));
            }
            Event::Arguments { index, text } => calls[index].1.push_str(&text),
        }
    }
    assert_eq!(texts, "Let me see. <tool_ca\n\n Done <tool");
    assert_eq!(calls, vec![("get_weather".to_string(), args.to_string()), ("add".to_string(), r#"{"a":1,"b":[2]}"#.to_string())]);
    // Only calls: no content. A call cut short is text, not a call.
    let (reply, _) = read_all(&toolbox, &["<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\":1,\"b\":2}}\n</tool_call>"]);
    assert_eq!((reply.content, reply.calls.len()), (None, 1));
    let cut = "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\":1";
    let (reply, _) = read_all(&toolbox, &[cut]);
    assert_eq!((reply.content.as_deref(), reply.calls.len()), (Some(cut), 0));
}

#[test]
fn bad_tools_choices_and_messages_are_refused_with_the_tool_named() {
    let template = qwen3();
    let with = |extra: Value| {
        let mut list = json!([{"type": "function", "function": {"name": "add", "parameters": {"type": "object"}}}]);
        list.as_array_mut().unwrap().push(extra);
        Tool::from_openai(&list).and_then(|t| Toolbox::new(t, ToolChoice::Auto, true, &template))
    };
    let e = with(json!({"type": "function", "function": {"name": "add"}})).unwrap_err();
    assert_eq!(e.tool.as_deref(), Some("add"));
    assert!(e.message.contains("two tools"), "{e}");
    let e = with(json!({"type": "function", "function": {"name": "bad name"}})).unwrap_err();
    assert_eq!(e.tool.as_deref(), Some("bad name"));
    let e = with(json!({"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"x": {"type": "string", "pattern": "(?=a)"}}}}})).unwrap_err();
    let schema = e.schema.clone().expect("a schema error");
    assert_eq!((e.tool.as_deref(), schema.keyword.as_str(), schema.pointer.as_str()), (Some("f"), "pattern", "/properties/x"), "{e}");
    let e = with(json!({"type": "retrieval"})).unwrap_err();
    assert!(e.message.contains("tools[1]"), "{e}");
    let e = Toolbox::new(tools(), ToolChoice::from_openai(Some(&json!({"type": "function", "function": {"name": "nope"}}))).unwrap(), true, &template)
        .unwrap_err();
    assert_eq!(e.tool.as_deref(), Some("nope"));
    assert!(ToolChoice::from_openai(Some(&json!("sometimes"))).is_err());
    // Messages: a tool result without its call's id, calls whose arguments are a number.
    let toolbox = Toolbox::new(tools(), ToolChoice::Auto, true, &template).expect("toolbox");
    let e = toolbox.prompt(&template, &[json!({"role": "tool", "content": "4 C"})], &Map::new()).unwrap_err().to_string();
    assert!(e.contains("messages[0]") && e.contains("tool_call_id"), "{e}");
    let bad_call = json!({"role": "assistant", "tool_calls": [{"id": "c", "type": "function", "function": {"name": "add", "arguments": 5}}]});
    let e = toolbox.prompt(&template, &[bad_call], &Map::new()).unwrap_err().to_string();
    assert!(e.contains("messages[0]") && e.contains("arguments"), "{e}");
}
