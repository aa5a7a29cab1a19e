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
    fn full_match(&mut self, bytes: &[u8]) -> bool;
    /// Called with the output so far before the tokens after it are asked about.
    fn at(&mut self, _prefix: &[u8]) {}
}

impl Language for Oracle {
    fn viable(&mut self, bytes: &[u8]) -> bool {
        Oracle::viable(self, bytes)
    }

    fn full_match(&mut self, bytes: &[u8]) -> bool {
        Oracle::full_match(self, bytes)
    }
}

fn check_walks(name: &str, vocab: &Arc<Vocabulary>, c: &Constraint, oracle: &mut impl Language, seed: u64, walks: usize, steps: usize) {
    check_guided_walks(name, vocab, c, oracle, seed, walks, steps, &[]);
}

/// [`check_walks`], where each walk follows one of `plans` (a valid output)
/// four steps in five while a token continues it, so that walks reach what
/// random tokens rarely would (a trigger, say); every token is still checked.
#[allow(clippy::too_many_arguments)]
fn check_guided_walks(name: &str, vocab: &Arc<Vocabulary>, c: &Constraint, oracle: &mut impl Language, seed: u64, walks: usize, steps: usize, plans: &[&str]) {
    let mut rng = Rng(seed);
    let mut mask = vec![0u32; vocab.mask_words()];
    for walk in 0..walks {
        let plan = plans.get(walk % plans.len().max(1)).map_or(&b""[..], |p| p.as_bytes());
        let mut m = Matcher::new(c, vocab);
        let mut prefix: Vec<u8> = Vec::new();
        for _step in 0..steps {
            oracle.at(&prefix);
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
            let on_plan: Vec<u32> = allowed
                .iter()
                .copied()
                .filter(|&t| vocab.token_bytes(t).is_some_and(|b| plan.starts_with(&[&prefix[..], b].concat())))
                .collect();
            let t = if !on_plan.is_empty() && rng.below(5) > 0 {
                on_plan[rng.below(on_plan.len())]
            } else {
                allowed[rng.below(allowed.len())]
            };
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

    fn full_match(&mut self, bytes: &[u8]) -> bool {
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

/// Text with tagged sections, by brute force: the configurations an output
/// may be in (text since the last section, with that text; or inside tag
/// `k` entered by a trigger of `skip` bytes, with its regex's state), taken
/// forward byte by byte. Text must be UTF-8 and ends where the first
/// trigger ends; a tag's rest is matched by a regex oracle.
struct Tagged {
    triggers: Vec<String>,
    /// Per tag: its begin, its content as a regex, its end.
    tags: Vec<(String, String, String)>,
    at_least_one: bool,
    stop_after_first: bool,
    /// Regex oracles of a tag's rest, by `(tag, skip)`.
    rests: std::collections::HashMap<(usize, usize), Oracle>,
    /// The output the last [`Language::at`] named, and its configurations.
    base: (Vec<u8>, Vec<Config>),
}

#[derive(Clone, PartialEq, Eq, Hash)]
enum Config {
    Text(Vec<u8>),
    Tag(usize, usize, common::StateID),
    /// After the one section allowed.
    Done,
}

impl Tagged {
    fn new(
        triggers: &[&str],
        tags: &[(&str, &str, &str)],
        at_least_one: bool,
        stop_after_first: bool,
    ) -> Tagged {
        let mut me = Tagged {
            triggers: triggers.iter().map(|t| t.to_string()).collect(),
            tags: tags
                .iter()
                .map(|&(b, c, e)| (b.into(), c.into(), e.into()))
                .collect(),
            at_least_one,
            stop_after_first,
            rests: Default::default(),
            base: (Vec::new(), Vec::new()),
        };
        me.base.1 = me.start();
        me
    }

    fn rest(&mut self, k: usize, skip: usize) -> &mut Oracle {
        let (begin, content, end) = &self.tags[k];
        let pattern = format!(
            "{}(?:{content}){}",
            regex_syntax::escape(&begin[skip..]),
            regex_syntax::escape(end)
        );
        self.rests
            .entry((k, skip))
            .or_insert_with(|| Oracle::new(&pattern))
    }

    fn rests_start(&mut self, k: usize, skip: usize) -> common::StateID {
        self.rest(k, skip).start()
    }

    fn after_tag(&self) -> Config {
        if self.stop_after_first {
            Config::Done
        } else {
            Config::Text(Vec::new())
        }
    }

    fn step(&mut self, configs: &[Config], byte: u8) -> Vec<Config> {
        let mut out = std::collections::HashSet::new();
        for c in configs {
            match c {
                Config::Done => {}
                Config::Text(seg) => {
                    let seg = [&seg[..], &[byte]].concat();
                    if std::str::from_utf8(&seg).is_err_and(|e| e.error_len().is_some()) {
                        continue;
                    }
                    let fired: Vec<usize> = self
                        .triggers
                        .iter()
                        .filter(|t| seg.ends_with(t.as_bytes()))
                        .map(String::len)
                        .collect();
                    for &skip in &fired {
                        for k in 0..self.tags.len() {
                            if self.tags[k]
                                .0
                                .as_bytes()
                                .starts_with(&seg[seg.len() - skip..])
                            {
                                out.insert(Config::Tag(k, skip, self.rests_start(k, skip)));
                            }
                        }
                    }
                    if fired.is_empty() {
                        out.insert(Config::Text(seg));
                    }
                }
                Config::Tag(k, skip, s) => {
                    let after = self.after_tag();
                    let rest = self.rest(*k, *skip);
                    let s = rest.next(*s, byte);
                    if rest.accepts(s) {
                        out.insert(after);
                    }
                    if rest.live(s) {
                        out.insert(Config::Tag(*k, *skip, s));
                    }
                }
            }
        }
        out.into_iter().collect()
    }

    fn start(&mut self) -> Vec<Config> {
        if self.at_least_one {
            (0..self.tags.len())
                .map(|k| Config::Tag(k, 0, self.rests_start(k, 0)))
                .collect()
        } else {
            vec![Config::Text(Vec::new())]
        }
    }

    fn configs(&mut self, bytes: &[u8]) -> Vec<Config> {
        let (mut configs, from) = if bytes.starts_with(&self.base.0) {
            (self.base.1.clone(), self.base.0.len())
        } else {
            (self.start(), 0)
        };
        for &b in &bytes[from..] {
            configs = self.step(&configs, b);
        }
        configs
    }
}

impl Language for Tagged {
    fn viable(&mut self, bytes: &[u8]) -> bool {
        !self.configs(bytes).is_empty()
    }

    fn full_match(&mut self, bytes: &[u8]) -> bool {
        self.configs(bytes).iter().any(|c| match c {
            Config::Text(seg) => std::str::from_utf8(seg).is_ok(),
            Config::Done => true,
            Config::Tag(..) => false,
        })
    }

    fn at(&mut self, prefix: &[u8]) {
        let configs = self.configs(prefix);
        self.base = (prefix.to_vec(), configs);
    }
}

/// Structural tags against the brute-force [`Tagged`]: tool calls in free
/// text with two tools whose argument schemas overlap, a tag required first
/// and alone, triggers that end together (`b` ends `ab`) and a multi-byte
/// one; walks follow outputs that reach the triggers, split across tokens
/// however the vocabulary splits them. In two halves: in the browser a test
/// holds the page until it ends, and the page must answer within 30 s.
#[test]
fn structural_tags_equal_the_oracle() {
    structural_tag_cases_equal_the_oracle(0..2);
}

/// The other half of [`structural_tags_equal_the_oracle`].
#[test]
fn more_structural_tags_equal_the_oracle() {
    structural_tag_cases_equal_the_oracle(2..5);
}

fn structural_tag_cases_equal_the_oracle(which: std::ops::Range<usize>) {
    use sieve_core::json_schema::{JsonSchemaOptions, Whitespace};
    use sieve_core::{ConstraintSource, Limits, StructuralTag, Tag, TagContent};
    let compact = JsonSchemaOptions {
        whitespace: Whitespace::Compact,
        ..Default::default()
    };
    let city = r#"{"type":"object","properties":{"city":{"enum":["Paris","Oslo"]},"rain":{"type":"boolean"}},"required":["city"],"additionalProperties":false}"#;
    let town = r#"{"type":"object","properties":{"city":{"const":"Oslo"}},"required":["city"],"additionalProperties":false}"#;
    let city_re = r#"\{"city":"(Paris|Oslo)"(,"rain":(true|false))?\}"#;
    let town_re = r#"\{"city":"Oslo"\}"#;
    let call = |name: &str| format!("<tool_call>{{\"name\": \"{name}\", \"arguments\": ");
    let (weather, local) = (call("weather"), call("local"));
    let end = "}</tool_call>";
    let json_tags = [(weather.as_str(), city, city_re), (local.as_str(), town, town_re)];
    struct Case<'a> {
        triggers: Vec<&'a str>,
        tags: Vec<(&'a str, TagContent, &'a str, &'a str)>,
        at_least_one: bool,
        stop_after_first: bool,
        plans: Vec<String>,
    }
    let json = |at_least_one, stop_after_first, plans: Vec<String>| Case {
        triggers: vec!["<tool_call>"],
        tags: json_tags.iter().map(|&(b, s, re)| (b, TagContent::JsonSchema(s.into(), compact), re, end)).collect(),
        at_least_one,
        stop_after_first,
        plans,
    };
    let cases = [
        json(false, false, vec![
            format!("Sure. {weather}{{\"city\":\"Paris\",\"rain\":true}}{end}\n{local}{{\"city\":\"Oslo\"}}{end} ok"),
            format!("<tool_c é {local}{{\"city\":\"Oslo\"}}{end}"),
        ]),
        json(false, true, vec![format!("Hm. {weather}{{\"city\":\"Oslo\"}}{end}"), "Just text <tool".into()]),
        json(true, true, vec![format!("{weather}{{\"city\":\"Oslo\"}}{end}"), format!("{local}{{\"city\":\"Oslo\"}}{end}")]),
        json(true, false, vec![format!("{local}{{\"city\":\"Oslo\"}}{end} then {weather}{{\"city\":\"Paris\"}}{end}")]),
        Case {
            triggers: vec!["ab", "b", "é→"],
            tags: vec![
                ("abX", TagContent::Gbnf("root ::= [0-9]+".into()), "[0-9]+", ";"),
                ("b(", TagContent::Gbnf("root ::= (\"yes\" | \"no\")".into()), "yes|no", ")"),
                ("é→[", TagContent::Gbnf("root ::= [a-z]*".into()), "[a-z]*", "]"),
            ],
            at_least_one: false,
            stop_after_first: false,
            plans: vec!["cabX12;b(no) é→[abc] a b(yes)".into(), "abX7;abX8;".into(), "aab(yes)".into()],
        },
    ];
    assert!(which.end <= cases.len());
    for (i, case) in cases.iter().enumerate().filter(|(i, _)| which.contains(i)) {
        let tag = StructuralTag {
            tags: case.tags.iter().map(|(b, c, _, e)| Tag { begin: b.to_string(), content: c.clone(), end: e.to_string() }).collect(),
            triggers: case.triggers.iter().map(|t| t.to_string()).collect(),
            at_least_one: case.at_least_one,
            stop_after_first: case.stop_after_first,
        };
        let c = Constraint::compile(&ConstraintSource::StructuralTag(tag), &Limits::default()).unwrap();
        let oracle_tags: Vec<(&str, &str, &str)> = case.tags.iter().map(|(b, _, re, e)| (*b, *re, *e)).collect();
        let plans: Vec<&str> = case.plans.iter().map(String::as_str).collect();
        for plan in &plans {
            assert!(c.matches(plan.as_bytes()).unwrap(), "case {i}: {plan}");
        }
        for (vname, vocab) in all_vocabs() {
            // The real vocabularies split the first plan's trigger their own ways.
            let (walks, steps) = if vname == "toy" { (24, 90) } else if i == 0 || i == 4 { (1, 16) } else { continue };
            let mut oracle = Tagged::new(&case.triggers, &oracle_tags, case.at_least_one, case.stop_after_first);
            check_guided_walks(vname, &vocab, &c, &mut oracle, 31 + i as u64, walks, steps, &plans);
        }
    }
}

#[test]
fn malformed_structural_tags_are_errors_that_name_the_tag() {
    use sieve_core::{CompileErrorKind, ConstraintSource, Limits, StructuralTag, Tag, TagContent};
    let tag = |begin: &str, content: TagContent| Tag { begin: begin.into(), content, end: ")".into() };
    let digits = || TagContent::Gbnf("root ::= [0-9]+".into());
    let compile = |tags: Vec<Tag>, triggers: &[&str], at_least_one: bool| {
        let t = StructuralTag { tags, triggers: triggers.iter().map(|t| t.to_string()).collect(), at_least_one, stop_after_first: false };
        Constraint::compile(&ConstraintSource::StructuralTag(t), &Limits::default())
    };
    let kind = |r: Result<Constraint, sieve_core::CompileError>| r.unwrap_err().kind;
    assert_eq!(kind(compile(vec![], &[], false)), CompileErrorKind::StructuralTag);
    assert_eq!(kind(compile(vec![], &["f("], true)), CompileErrorKind::Empty);
    assert_eq!(kind(compile(vec![tag("f(", digits())], &[""], false)), CompileErrorKind::StructuralTag);
    assert_eq!(kind(compile(vec![tag("f(", digits())], &[], false)), CompileErrorKind::StructuralTag);
    let e = compile(vec![tag("f(", digits()), tag("g(", digits())], &["f"], false).unwrap_err();
    assert!(e.message.contains("tag 1") && e.message.contains("g("), "{e}");
    let bad_schema = TagContent::JsonSchema(r#"{"type": "nope"}"#.into(), Default::default());
    let e = compile(vec![tag("f(", digits()), tag("g(", bad_schema)], &["f", "g"], false).unwrap_err();
    assert_eq!(e.kind, CompileErrorKind::Schema);
    assert!(e.message.contains("tag 1"), "{e}");
    let e = compile(vec![tag("f(", TagContent::Gbnf("root ::= [0-9".into()))], &["f"], false).unwrap_err();
    assert_eq!((e.kind.clone(), e.line_col), (CompileErrorKind::Syntax, Some((1, 14))), "{e}");
    // Without tags: text in which no trigger appears.
    let c = compile(vec![], &["f("], false).unwrap();
    assert_eq!((c.matches(b"a f b (").unwrap(), c.matches(b"a f( b").unwrap()), (true, false));
    // With at_least_one the first tag needs no trigger.
    assert!(compile(vec![tag("f(", digits())], &[], true).is_ok());
}
