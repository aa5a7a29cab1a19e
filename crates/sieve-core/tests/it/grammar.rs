//! Context-free constraints: the cached grammar masks against the plain
//! byte-level Earley parser (feed each token's bytes, see if it survives),
//! the built-in JSON grammar against serde_json, and left- against
//! right-recursive formulations of one language.

#[cfg(target_family = "wasm")]
use wasm_bindgen_test::wasm_bindgen_test as test;

use crate::common;

use common::{Rng, bit, random_tokenization};
use proptest::prelude::*;
use sieve_core::{Constraint, Matcher, Vocabulary};
use std::sync::Arc;

const ARITH_LEFT: &str = r#"root   ::= expr
expr   ::= expr ("+" | "-") term | term
term   ::= term ("*" | "/") factor | factor
factor ::= [0-9]+ | "(" ws expr ws ")" | "-" factor
ws     ::= " "?
"#;

const ARITH_RIGHT: &str = r#"root   ::= expr
expr   ::= term (("+" | "-") term)*
term   ::= factor (("*" | "/") factor)*
factor ::= [0-9]+ | "(" ws expr ws ")" | "-" factor
ws     ::= " "?
"#;

const CSV: &str = r#"root ::= row ("\n" row)* "\n"?
row  ::= cell ("," cell)*
cell ::= [^,"\n]* | "\"" ([^"] | "\"\"")* "\""
"#;

const NESTED: &str = "root ::= list\nlist ::= \"[\" (item (\", \" item)*)? \"]\"\nitem ::= list | \"\\\"\" [a-zé😀]* \"\\\"\" | [0-9]+\n";

/// On a random walk, compares each mask bit with taking the token on the
/// uncached parser (accept then roll back).
fn walk_against_parser(vocab: &Arc<Vocabulary>, c: &Constraint, seed: u64, walks: usize, steps: usize) {
    let mut rng = Rng(seed);
    let mut mask = vec![0u32; vocab.mask_words()];
    for _ in 0..walks {
        let mut m = Matcher::new(c, vocab);
        for _ in 0..steps {
            m.fill_next_token_bitmask(&mut mask).unwrap();
            let mut allowed = Vec::new();
            for t in 0..vocab.width() as u32 {
                let ok = m.accept_token(t).is_ok();
                if ok {
                    m.rollback(1).unwrap();
                    allowed.push(t);
                }
                assert_eq!(bit(&mask, t), ok, "{:?}: token {t} {:?}", c.source(), vocab.token_bytes(t).map(String::from_utf8_lossy));
            }
            if allowed.is_empty() {
                break;
            }
            let t = allowed[rng.below(allowed.len())];
            m.accept_token(t).unwrap();
            if m.is_terminated() {
                break;
            }
        }
    }
}

#[test]
fn grammar_masks_equal_the_parser() {
    let mut vocabs = vec![("toy", common::toy()), ("smollm2", common::smollm2())];
    vocabs.push(("llama3", common::asset("llama3")));
    vocabs.push(("llama2", common::asset("llama2")));
    for (name, vocab) in vocabs {
        let (walks, steps) = if name == "toy" { (20, 25) } else { (1, 8) };
        for (i, g) in [ARITH_LEFT, ARITH_RIGHT, CSV, NESTED].iter().enumerate() {
            let c = Constraint::gbnf(g).unwrap();
            walk_against_parser(&vocab, &c, 11 + i as u64, walks, steps);
        }
        walk_against_parser(&vocab, &Constraint::any_json(), 3, walks, steps);
    }
}

#[test]
fn left_and_right_recursion_give_the_same_masks() {
    let vocab = common::toy();
    let left = Constraint::gbnf(ARITH_LEFT).unwrap();
    let right = Constraint::gbnf(ARITH_RIGHT).unwrap();
    let mut rng = Rng(5);
    let (mut a, mut b) = (vec![0u32; vocab.mask_words()], vec![0u32; vocab.mask_words()]);
    for _ in 0..40 {
        let (mut ml, mut mr) = (Matcher::new(&left, &vocab), Matcher::new(&right, &vocab));
        for _ in 0..30 {
            ml.fill_next_token_bitmask(&mut a).unwrap();
            mr.fill_next_token_bitmask(&mut b).unwrap();
            assert_eq!(a, b);
            let allowed: Vec<u32> = (0..vocab.len() as u32).filter(|&t| bit(&a, t)).collect();
            if allowed.is_empty() {
                break;
            }
            let t = allowed[rng.below(allowed.len())];
            ml.accept_token(t).unwrap();
            mr.accept_token(t).unwrap();
            if ml.is_terminated() {
                break;
            }
        }
    }
}

fn json_value() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::Value;
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        (-1e6f64..1e6).prop_map(Value::from),
        "[a-z \"\\\\é😀\\n\\t\\u{1}]{0,8}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 24, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(serde_json::Value::Array),
            prop::collection::btree_map("[a-z\"]{0,4}", inner, 0..5)
                .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Every JSON text is accepted, under any tokenization, with each token
    /// allowed by the mask and end of sequence allowed at the end.
    #[test]
    fn any_json_accepts_every_json_text(v in json_value(), pretty in any::<bool>(), seed in any::<u64>()) {
        let text = if pretty { serde_json::to_string_pretty(&v).unwrap() } else { serde_json::to_string(&v).unwrap() };
        let c = Constraint::any_json();
        prop_assert!(c.matches(text.as_bytes()).unwrap());
        let vocab = common::toy();
        let mut rng = Rng(seed | 1);
        let toks = random_tokenization(&vocab, text.as_bytes(), &mut rng).unwrap();
        let mut m = Matcher::new(&c, &vocab);
        let mut mask = vec![0u32; vocab.mask_words()];
        for t in toks {
            m.fill_next_token_bitmask(&mut mask).unwrap();
            prop_assert!(bit(&mask, t));
            m.accept_token(t).unwrap();
        }
        m.fill_next_token_bitmask(&mut mask).unwrap();
        prop_assert!(bit(&mask, vocab.eos_ids()[0]));
    }

    /// On mutated JSON texts the grammar and serde_json agree.
    #[test]
    fn any_json_agrees_with_serde_json(v in json_value(), at in any::<prop::sample::Index>(), b in prop::sample::select(b"{}[],:\"\\ 0-.eE1tfn".to_vec()), delete in any::<bool>()) {
        let mut text = serde_json::to_string(&v).unwrap().into_bytes();
        if !text.is_empty() {
            let i = at.index(text.len());
            if delete { text.remove(i); } else { text.insert(i, b); }
        }
        let parsed = serde_json::from_slice::<serde_json::Value>(&text);
        // serde_json also refuses what the JSON grammar allows: numbers that
        // overflow f64 and lone UTF-16 surrogate escapes.
        let out_of_range = parsed.as_ref().is_err_and(|e| e.to_string().contains("out of range"));
        let serde_ok = parsed.is_ok();
        let lone_surrogate = String::from_utf8_lossy(&text).to_lowercase().contains("\\ud");
        if !lone_surrogate && !out_of_range {
            prop_assert_eq!(Constraint::any_json().matches(&text).unwrap(), serde_ok, "{}", String::from_utf8_lossy(&text));
        }
    }
}
