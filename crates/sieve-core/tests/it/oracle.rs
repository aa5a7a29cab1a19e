//! Brute-force oracle: on random walks, every token's bit in the mask must
//! equal what an independent byte-level matcher says about
//! `prefix + token bytes` (soundness and completeness), over the toy,
//! SmolLM2, Llama-2, Llama-3 and Qwen3 vocabularies.

#[cfg(target_family = "wasm")]
use wasm_bindgen_test::wasm_bindgen_test as test;

use crate::common;

use common::{Oracle, Rng, all_vocabs, bit};
use sieve_core::{Constraint, Matcher, Vocabulary};
use std::sync::Arc;

/// Regexes and, where given, an equivalent GBNF grammar; both are checked
/// against the regex oracle. Chosen for token-boundary cases: a string end
/// followed by a comma in one token, multi-byte UTF-8 split across tokens
/// and byte-fallback tokens, long alternations, optional whitespace, right
/// recursion.
const CASES: &[(&str, Option<&str>)] = &[
    (
        r#"\{"name": "[a-zé中 ]{1,12}", "age": [0-9]{1,3}\}"#,
        Some(
            r#"root ::= "{\"name\": \"" [a-z\u00e9\u4e2d ]{1,12} "\", \"age\": " [0-9]{1,3} "}""#,
        ),
    ),
    (
        r#"\[("[a-zé中😀]{0,5}"(, "[a-zé中😀]{0,5}")*)?\]"#,
        Some("root ::= \"[\" ( item ( \", \" item )* )? \"]\"\nitem ::= \"\\\"\" [a-z\\u00e9\\u4e2d\\U0001F600]{0,5} \"\\\"\"\n"),
    ),
    (r"[a-z0-9._%+-]+@[a-z0-9.-]+\.[a-z]{2,4}", None),
    (
        "(January|February|March|April|May|June|July|August|September|October|November|December) [0-9]{1,2}",
        Some("root ::= month \" \" [0-9] [0-9]?\nmonth ::= \"January\" | \"February\" | \"March\" | \"April\" | \"May\" | \"June\"\n  | \"July\" | \"August\" | \"September\" | \"October\" | \"November\" | \"December\"\n"),
    ),
    (r"[ \n\t]*(yes|no)[ \n\t]*", Some("root ::= ws (\"yes\" | \"no\") ws\nws ::= [ \\n\\t]*")),
    (r#""([^"\\\x00-\x1f]|\\["\\/bfnrt])*""#, Some(r#"root ::= "\"" ( [^"\\\x00-\x1F] | "\\" ["\\/bfnrt] )* "\"""#)),
    (r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?", None),
    // String bodies where every string of body characters keeps the set
    // alive, so the token cache allows the whole string slice at once: one
    // set (plain), several sets (a required "ab" inside).
    (
        r#"[a-z]{0,2}"[^"\\\x00-\x1f]*""#,
        Some(r#"root ::= [a-z]{0,2} "\"" [^"\\\x00-\x1F]* "\"""#),
    ),
    (
        r#""[^"\\\x00-\x1f]*ab[^"\\\x00-\x1f]*", [0-9]"#,
        Some(r#"root ::= "\"" [^"\\\x00-\x1F]* "ab" [^"\\\x00-\x1F]* "\", " [0-9]"#),
    ),
    // Two rules of one shape (kept out of line by a dead left-recursive
    // alternative) followed by the same byte: the token cache analyses one
    // and reuses it for the other.
    (
        r#""[a-z]*","[a-z]*","#,
        Some("root ::= a \",\" b \",\"\na ::= \"\\\"\" [a-z]* \"\\\"\" | a [^\\u0000-\\U0010FFFF]\nb ::= \"\\\"\" [a-z]* \"\\\"\" | b [^\\u0000-\\U0010FFFF]\n"),
    ),
    // Right recursion: a list and a string body written as rules that call
    // themselves last.
    (
        r#"\[("[a-zé中]*"(, "[a-zé中]*")*)?\]"#,
        Some("root ::= \"[]\" | \"[\" items \"]\"\nitems ::= item \", \" items | item\nitem ::= \"\\\"\" chars \"\\\"\"\nchars ::= [a-z\\u00e9\\u4e2d] chars | \"\"\n"),
    ),
];

/// What the walks check masks against: whether some output starts with
/// `bytes`, and whether `bytes` is one.
trait Language {
    fn viable(&mut self, bytes: &[u8]) -> bool;
    fn full_match(&self, bytes: &[u8]) -> bool;
}

impl Language for Oracle {
    fn viable(&mut self, bytes: &[u8]) -> bool {
        Oracle::viable(self, bytes)
    }

    fn full_match(&self, bytes: &[u8]) -> bool {
        Oracle::full_match(self, bytes)
    }
}

fn check_walks(name: &str, vocab: &Arc<Vocabulary>, c: &Constraint, oracle: &mut impl Language, seed: u64, walks: usize, steps: usize) {
    let mut rng = Rng(seed);
    let mut mask = vec![0u32; vocab.mask_words()];
    for _ in 0..walks {
        let mut m = Matcher::new(c, vocab);
        let mut prefix: Vec<u8> = Vec::new();
        for _step in 0..steps {
            m.fill_next_token_bitmask(&mut mask).unwrap();
            let mut allowed = Vec::new();
            for t in 0..vocab.width() as u32 {
                let expected = if vocab.is_eos(t) {
                    oracle.full_match(&prefix)
                } else if let Some(b) = vocab.token_bytes(t).filter(|b| !b.is_empty()) {
                    let mut p = prefix.clone();
                    p.extend_from_slice(b);
                    oracle.viable(&p)
                } else {
                    false
                };
                assert_eq!(
                    bit(&mask, t),
                    expected,
                    "{name}: {:?} after {:?}: token {t} {:?}",
                    c.source(),
                    String::from_utf8_lossy(&prefix),
                    vocab.token_bytes(t).map(String::from_utf8_lossy)
                );
                if expected {
                    allowed.push(t);
                }
            }
            assert_eq!(m.is_accepting(), oracle.full_match(&prefix));
            if allowed.is_empty() {
                break;
            }
            let t = allowed[rng.below(allowed.len())];
            m.accept_token(t).unwrap();
            if m.is_terminated() {
                break;
            }
            prefix.extend_from_slice(vocab.token_bytes(t).unwrap_or_default());
        }
    }
}

#[test]
fn masks_equal_the_oracle_on_random_walks() {
    for (vname, vocab) in all_vocabs() {
        let (walks, steps) = if vname == "toy" { (30, 12) } else { (2, 6) };
        for (i, (re, gbnf)) in CASES.iter().enumerate() {
            let mut oracle = Oracle::new(re);
            let c = Constraint::regex(re).unwrap();
            check_walks(vname, &vocab, &c, &mut oracle, 7 + i as u64, walks, steps);
            if let Some(g) = gbnf {
                let c = Constraint::gbnf(g).unwrap_or_else(|e| panic!("{g}: {e}"));
                check_walks(vname, &vocab, &c, &mut oracle, 99 + i as u64, walks, steps);
            }
        }
    }
}

#[test]
fn choices_equal_the_oracle() {
    let vocab = common::toy();
    let choices = ["yes", "no", "maybe so", "\"quoted\", too", "é中"];
    let pattern = choices.iter().map(|c| regex_syntax::escape(c)).collect::<Vec<_>>().join("|");
    let mut oracle = Oracle::new(&pattern);
    check_walks("toy", &vocab, &Constraint::choices(&choices).unwrap(), &mut oracle, 5, 30, 12);
}

/// Members in any order (`PropertyOrder::AnyUpTo`), each at most once, the
/// required ones present and `maxProperties` counted, against a regex that
/// lists every allowed order.
#[test]
fn any_order_members_equal_the_oracle() {
    use sieve_core::json_schema::{JsonSchemaOptions, PropertyOrder, Whitespace};
    let members = [r#""a":"y""#, r#""b":true"#, r#""c":"x""#, r#""d":null"#];
    let schema = serde_json::json!({"type": "object", "additionalProperties": false,
        "properties": {"a": {"const": "y"}, "b": {"const": true}, "c": {"enum": ["x"]}, "d": {"type": "null"}},
        "required": ["a", "c"], "maxProperties": 3});
    // Every sequence of distinct members with `a` and `c`, at most three.
    fn orders(members: &[&str], used: u32, out: &mut Vec<String>, at: &mut Vec<usize>) {
        if used & 0b101 == 0b101 {
            out.push(at.iter().map(|&i| members[i]).collect::<Vec<_>>().join(","));
        }
        if at.len() == 3 {
            return;
        }
        for i in 0..members.len() {
            if used >> i & 1 == 0 {
                at.push(i);
                orders(members, used | 1 << i, out, at);
                at.pop();
            }
        }
    }
    let mut all = Vec::new();
    orders(&members, 0, &mut all, &mut Vec::new());
    let pattern = format!(r"\{{(?:{})\}}", all.iter().map(|o| regex_syntax::escape(o)).collect::<Vec<_>>().join("|"));
    let options = JsonSchemaOptions { whitespace: Whitespace::Compact, property_order: PropertyOrder::AnyUpTo(8), ..Default::default() };
    let (c, _) = Constraint::json_schema(&schema, &options).unwrap();
    for (vname, vocab) in all_vocabs() {
        let (walks, steps) = if vname == "toy" { (30, 16) } else { (4, 8) };
        check_walks(vname, &vocab, &c, &mut Oracle::new(&pattern), 11, walks, steps);
    }
}

/// JSON strings `"x@y"`, `x` and `y` lowercase letters, of 5 to 140
/// characters between the quotes: a pattern with two unbounded parts and
/// a length bound, which the schema compiler writes as the pattern's
/// product with a count (far from the bound, states at one count stand in
/// for those at another, for as many bytes as the longest token has).
struct BoundedEmails;

impl BoundedEmails {
    const MAX: usize = 140;

    /// Letters, `@`, letters, with the fewest characters a string starting
    /// so needs: `None` when none does.
    fn fewest(body: &[u8]) -> Option<usize> {
        let letters = |s: &[u8]| s.iter().all(u8::is_ascii_lowercase);
        let more = match body.iter().position(|&c| c == b'@') {
            None if letters(body) => usize::from(body.is_empty()) + 2,
            Some(at) if at > 0 && letters(&body[..at]) && letters(&body[at + 1..]) => usize::from(at + 1 == body.len()),
            _ => return None,
        };
        Some((body.len() + more).max(5))
    }
}

impl Language for BoundedEmails {
    fn viable(&mut self, bytes: &[u8]) -> bool {
        match bytes.split_first() {
            None => true,
            Some((b'"', rest)) => match rest.iter().position(|&c| c == b'"') {
                Some(end) => end + 1 == rest.len() && self.full_match(bytes),
                None => Self::fewest(rest).is_some_and(|n| n <= Self::MAX),
            },
            Some(_) => false,
        }
    }

    fn full_match(&self, bytes: &[u8]) -> bool {
        let body = bytes.strip_prefix(b"\"").and_then(|b| b.strip_suffix(b"\""));
        body.is_some_and(|b| b.contains(&b'@') && b.last() != Some(&b'@') && Self::fewest(b) == Some(b.len()) && b.len() <= Self::MAX)
    }
}

#[test]
fn bounded_pattern_strings_equal_the_oracle() {
    use sieve_core::json_schema::{JsonSchemaOptions, Whitespace};
    let schema = serde_json::json!({"type": "string", "pattern": "^[a-z]+@[a-z]+$", "minLength": 5, "maxLength": BoundedEmails::MAX});
    let options = JsonSchemaOptions { whitespace: Whitespace::Compact, ..Default::default() };
    let (c, _) = Constraint::json_schema(&schema, &options).unwrap();
    for (vname, vocab) in all_vocabs() {
        let (walks, steps) = if vname == "toy" { (20, 60) } else { (2, 40) };
        check_walks(vname, &vocab, &c, &mut BoundedEmails, 13, walks, steps);
    }
}
