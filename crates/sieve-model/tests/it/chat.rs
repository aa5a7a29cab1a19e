//! Chat prompts from the model's own template: SmolLM2's, read from its GGUF and rendered by
//! minijinja, gives the ChatML prompt with its default system message; the Jinja that Hugging
//! Face templates use (Python string methods, `raise_exception`, `bos_token`) works, with the
//! caller's variables and `enable_thinking` off unless asked for; a template that fails says why.

use serde_json::{Map, json};
use sieve_model::chat::ChatTemplate;
use sieve_model::{Gguf, Tokenizer};

fn none() -> Map<String, serde_json::Value> {
    Map::new()
}

fn msgs(pairs: &[(&str, &str)]) -> Vec<serde_json::Value> {
    pairs.iter().map(|(role, content)| json!({"role": role, "content": content})).collect()
}

use crate::common;

#[test]
fn smollm2_renders_its_own_template() {
    let bytes = common::gguf_bytes();
    let tokenizer = Tokenizer::from_gguf(&Gguf::parse(&bytes).expect("gguf")).expect("tokenizer");
    let system = "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n";
    assert_eq!(
        tokenizer.chat_prompt(&msgs(&[("user", "Hi")]), &none()).expect("renders"),
        format!("{system}<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n")
    );
    // A system message of the caller's replaces the default one.
    assert_eq!(
        tokenizer.chat_prompt(&msgs(&[("system", "Be brief."), ("user", "Hi"), ("assistant", "Hello."), ("user", "Bye")]), &none()).expect("renders"),
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello.<|im_end|>\n\
         <|im_start|>user\nBye<|im_end|>\n<|im_start|>assistant\n"
    );
}

#[test]
fn a_tokenizer_without_a_template_speaks_chatml() {
    let json = std::fs::read_to_string(common::package_dir().join("../sieve-core/tests/fixtures/smollm2.json")).expect("fixture");
    let tokenizer = Tokenizer::from_json(json, 0).expect("tokenizer");
    assert_eq!(tokenizer.chat_prompt(&msgs(&[("user", "Hi")]), &none()).expect("renders"), "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
}

#[test]
fn templates_get_the_jinja_hugging_face_templates_use() {
    let template = ChatTemplate::new(
        "{{ bos_token }}{% for m in messages %}{% if m.role not in ['user', 'assistant'] %}\
         {{ raise_exception('roles are user and assistant, not ' + m.role) }}{% endif %}\
         [{{ m.role | upper }}] {{ m.content.strip() }}{% if not loop.last %}\n{% endif %}{% endfor %}\
         {% if add_generation_prompt %}{{ eos_token }}{% endif %}",
        "<s>",
        "</s>",
    );
    assert_eq!(template.render(&msgs(&[("user", "  Hi  "), ("assistant", "Hello")]), &none()).expect("renders"), "<s>[USER] Hi\n[ASSISTANT] Hello</s>");
    let err = template.render(&msgs(&[("critic", "42")]), &none()).expect_err("a role the template refuses").to_string();
    assert!(err.contains("roles are user and assistant, not critic"), "{err}");
    let err = ChatTemplate::new("{% for m in messages %}", "", "").render(&msgs(&[("user", "Hi")]), &none()).expect_err("unclosed loop").to_string();
    assert!(err.starts_with("tokenizer: chat template:"), "{err}");
}

/// Thinking models' templates (Qwen3's ends its generation prompt with an empty think block when
/// `enable_thinking` is false) get it off by default and on by request; other variables pass.
#[test]
fn thinking_is_off_unless_asked_for() {
    let template = ChatTemplate::new(
        "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}\
         {% if add_generation_prompt %}<|im_start|>assistant\n{% if enable_thinking is defined and enable_thinking is false %}\
         <think>\n\n</think>\n\n{% endif %}{% endif %}{{ note | default('') }}",
        "",
        "",
    );
    let base = "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n";
    assert_eq!(template.render(&msgs(&[("user", "Hi")]), &none()).unwrap(), format!("{base}<think>\n\n</think>\n\n"));
    let on = json!({"enable_thinking": true, "note": "!"});
    assert_eq!(template.render(&msgs(&[("user", "Hi")]), on.as_object().unwrap()).unwrap(), format!("{base}!"));
}
