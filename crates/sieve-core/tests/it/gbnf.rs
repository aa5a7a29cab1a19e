//! GBNF as llama.cpp writes it, and grammars of the size schema compilers emit.

#[cfg(target_family = "wasm")]
use wasm_bindgen_test::wasm_bindgen_test as test;

use crate::common;

use sieve_core::{Constraint, Matcher};

/// llama.cpp's grammars/json.gbnf (MIT), verbatim.
const LLAMA_CPP_JSON: &str = r#"root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws

object ::=
  "{" ws (
            string ":" ws value
    ("," ws string ":" ws value)*
  )? "}" ws

array  ::=
  "[" ws (
            value
    ("," ws value)*
  )? "]" ws

string ::=
  "\"" (
    [^"\\\x7F\x00-\x1F] |
    "\\" (["\\bfnrt] | "u" [0-9a-fA-F]{4}) # escapes
  )* "\"" ws

number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9] [1-7]{0,15})? ws

# Optional space: by convention, applied in this grammar after literal chars when allowed
ws ::= | " " | "\n" [ \t]{0,20}
"#;

#[test]
fn llama_cpp_json_grammar() {
    let c = Constraint::gbnf(LLAMA_CPP_JSON).unwrap();
    for ok in [r#"{"a": [1, 2.5e3, "x\u00e9", {"b": null}], "c": true}"#, "{}", "{\"k\":\n  \"v\" }"] {
        assert!(c.matches(ok.as_bytes()).unwrap(), "{ok}");
    }
    for bad in ["[1]", "{\"a\": 01}", "{\"a\" 1}", "{\"a\": \"\x01\"}", "{\"a\": 1,}", "{\"a\":   1}"] {
        assert!(!c.matches(bad.as_bytes()).unwrap(), "{bad}");
    }
}

/// A grammar with thousands of rules: a chain of 3,000 object-like rules,
/// each naming the next, with a recursive tail.
#[test]
fn thousands_of_rules() {
    let n = 3000;
    let mut g = String::from("root ::= r0\n");
    for i in 0..n {
        g.push_str(&format!("r{i} ::= \"{{\\\"k{i}\\\": \" (r{} | \"0\") \"}}\"\n", i + 1));
    }
    g.push_str(&format!("r{n} ::= \"[\" (r{n} | \"1\") \"]\"\n"));
    let c = Constraint::gbnf(&g).unwrap();
    assert!(c.matches(b"{\"k0\": 0}").unwrap());
    assert!(c.matches(b"{\"k0\": {\"k1\": 0}}").unwrap());
    assert!(!c.matches(b"{\"k0\": {\"k2\": 0}}").unwrap());
    let vocab = common::smollm2();
    let mut m = Matcher::new(&c, &vocab);
    let mut mask = vec![0u32; vocab.mask_words()];
    let text = b"{\"k0\": {\"k1\": {\"k2\": 0}}}";
    let toks = common::random_tokenization(&vocab, text, &mut common::Rng(7)).unwrap();
    for t in toks {
        m.fill_next_token_bitmask(&mut mask).unwrap();
        assert!(common::bit(&mask, t), "{:?}", vocab.token_bytes(t));
        m.accept_token(t).unwrap();
    }
    assert!(m.is_accepting());
}
