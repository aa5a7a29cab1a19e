//! Matcher operations: rollback, validation, end of sequence, jump-forward,
//! batches, errors and limits.

#[cfg(target_family = "wasm")]
use wasm_bindgen_test::wasm_bindgen_test as test;

use crate::common;

use common::{Rng, bit};
use proptest::prelude::*;
use sieve_core::{
    CompileErrorKind, Constraint, ConstraintCache, ConstraintSource, Limits, MatchError, Matcher, Vocabulary,
    fill_next_token_bitmasks,
};
use std::sync::Arc;

fn mask_of(m: &mut Matcher) -> Vec<u32> {
    let mut mask = vec![0u32; m.vocabulary().mask_words()];
    m.fill_next_token_bitmask(&mut mask).unwrap();
    mask
}

fn allowed(mask: &[u32], vocab: &Vocabulary) -> Vec<u32> {
    (0..vocab.width() as u32).filter(|&t| bit(mask, t)).collect()
}

/// A random walk of allowed tokens (EOS included) of at most `n` steps.
fn walk(c: &Constraint, vocab: &Arc<Vocabulary>, seed: u64, n: usize) -> Vec<u32> {
    let mut rng = Rng(seed | 1);
    let mut m = Matcher::new(c, vocab);
    let mut out = Vec::new();
    for _ in 0..n {
        let a = allowed(&mask_of(&mut m), vocab);
        if a.is_empty() {
            break;
        }
        let t = a[rng.below(a.len())];
        m.accept_token(t).unwrap();
        out.push(t);
        if m.is_terminated() {
            break;
        }
    }
    out
}

fn constraints() -> Vec<Constraint> {
    vec![
        Constraint::regex(r#"\{"a": (true|[0-9]{1,4})(, "b": "[a-zé]*")?\}"#).unwrap(),
        Constraint::any_json(),
        Constraint::gbnf("root ::= x+\nx ::= \"ab\" | \"a\" | \"b\" x \"c\"").unwrap(),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Rolling back n steps gives the same state as replaying the rest.
    #[test]
    fn rollback_equals_replay(seed in any::<u64>(), which in 0usize..3, back in 0usize..12) {
        let vocab = common::toy();
        let c = &constraints()[which];
        let toks = walk(c, &vocab, seed, 16);
        let mut m = Matcher::new(c, &vocab);
        for &t in &toks {
            m.accept_token(t).unwrap();
        }
        let back = back.min(toks.len());
        m.rollback(back).unwrap();
        let mut fresh = Matcher::new(c, &vocab);
        for &t in &toks[..toks.len() - back] {
            fresh.accept_token(t).unwrap();
        }
        prop_assert_eq!(m.is_terminated(), fresh.is_terminated());
        prop_assert_eq!(m.is_accepting(), fresh.is_accepting());
        prop_assert_eq!(mask_of(&mut m), mask_of(&mut fresh));
        prop_assert!(m.rollback(toks.len() - back + 1).is_err());
    }

    /// validate_tokens finds the longest acceptable prefix and changes nothing.
    #[test]
    fn validate_tokens_is_the_longest_prefix(seed in any::<u64>(), which in 0usize..3, junk in any::<u32>(), at in any::<prop::sample::Index>()) {
        let vocab = common::toy();
        let c = &constraints()[which];
        let mut toks = walk(c, &vocab, seed, 16);
        let cut = at.index(toks.len() + 1);
        toks.insert(cut, junk % vocab.width() as u32);
        let mut m = Matcher::new(c, &vocab);
        let before = mask_of(&mut m);
        let n = m.validate_tokens(&toks);
        prop_assert_eq!(mask_of(&mut m), before);
        let mut probe = Matcher::new(c, &vocab);
        let expected = toks.iter().take_while(|&&t| probe.accept_token(t).is_ok()).count();
        prop_assert_eq!(n, expected);
        prop_assert!(n >= cut);
    }

    /// A forbidden token is an error and leaves the state as it was.
    #[test]
    fn forbidden_tokens_change_nothing(seed in any::<u64>(), which in 0usize..3) {
        let vocab = common::toy();
        let c = &constraints()[which];
        let toks = walk(c, &vocab, seed, 6);
        let mut m = Matcher::new(c, &vocab);
        for &t in toks.iter().filter(|_| true) {
            if m.accept_token(t).is_err() { break; }
        }
        if m.is_terminated() { return Ok(()); }
        let mask = mask_of(&mut m);
        for t in 0..vocab.width() as u32 {
            if !bit(&mask, t) {
                prop_assert!(m.accept_token(t).is_err());
            }
        }
        prop_assert_eq!(mask_of(&mut m), mask);
    }
}

#[test]
fn end_of_sequence() {
    let vocab = common::toy();
    let eos = vocab.eos_ids()[0];
    let c = Constraint::regex("ab|abc").unwrap();
    let mut m = Matcher::new(&c, &vocab);
    assert_eq!(m.accept_token(eos), Err(MatchError::TokenRejected { token: eos }));
    m.accept_bytes(b"ab").unwrap();
    assert!(m.is_accepting());
    let mask = mask_of(&mut m);
    assert!(bit(&mask, eos) && bit(&mask, b'c' as u32));
    m.accept_token(eos).unwrap();
    assert!(m.is_terminated());
    assert!(mask_of(&mut m).iter().all(|&w| w == 0));
    assert_eq!(m.accept_token(b'c' as u32), Err(MatchError::Terminated));
    m.rollback(1).unwrap();
    assert!(!m.is_terminated());
    m.accept_token(b'c' as u32).unwrap();
    m.reset();
    assert_eq!(m.bytes_len(), 0);
    // Padding ids past the vocabulary are never allowed and are errors.
    let pad = vocab.len() as u32 + 3;
    assert_eq!(m.accept_token(pad), Err(MatchError::UnknownToken { token: pad }));
}

/// Greedy longest-match tokenization over the toy vocabulary.
fn greedy(vocab: &Vocabulary, bytes: &[u8]) -> Option<Vec<u32>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let (len, t) = (0..vocab.len() as u32)
            .filter_map(|t| vocab.token_bytes(t).filter(|b| !b.is_empty() && bytes[i..].starts_with(b)).map(|b| (b.len(), t)))
            .max()?;
        out.push(t);
        i += len;
    }
    Some(out)
}

#[test]
fn jump_forward_backs_off_a_merging_token() {
    let vocab = common::toy();
    let c = Constraint::regex(r#"\{"a": [0-9]\}"#).unwrap();
    let mut m = Matcher::new(&c, &vocab);
    m.accept_token(b'{' as u32).unwrap();
    let jf = m.jump_forward(|b| greedy(&vocab, b)).unwrap();
    assert_eq!(jf.bytes, b"\"a\": ");
    // `{` followed by `"` is one token, `{"`: the `{` is backed off.
    assert_eq!(jf.backoff, 1);
    assert_eq!(vocab.decode(&jf.tokens), b"{\"a\": ");
    assert_eq!(m.bytes_len(), 1, "jump_forward leaves the state alone");
    m.rollback(jf.backoff).unwrap();
    for t in jf.tokens {
        m.accept_token(t).unwrap();
    }
    assert_eq!(m.forced_bytes().unwrap(), b"");
    // Nothing is forced where the output may end.
    let mut m = Matcher::new(&Constraint::regex("a|ab").unwrap(), &vocab);
    m.accept_bytes(b"a").unwrap();
    assert_eq!(m.forced_bytes().unwrap(), b"");
    // A grammar forces its literals too.
    let mut m = Matcher::new(&Constraint::gbnf("root ::= \"[\" x \"]\"\nx ::= \"true\" | \"tree\"").unwrap(), &vocab);
    assert_eq!(m.forced_bytes().unwrap(), b"[tr");
    m.accept_bytes(b"[tr").unwrap();
    assert_eq!(m.forced_bytes().unwrap(), b"");
    m.accept_bytes(b"u").unwrap();
    assert_eq!(m.jump_forward(|b| greedy(&vocab, b)).unwrap().bytes, b"e]");
}

#[test]
fn batch_isolates_failures() {
    let vocab = common::toy();
    let tight = Limits { mask_fuel: 10, ..Limits::default() };
    let bad = Constraint::compile(&ConstraintSource::AnyJson, &tight).unwrap();
    let mut ms = vec![
        Matcher::new(&Constraint::any_json(), &vocab),
        Matcher::new(&bad, &vocab),
        Matcher::new(&Constraint::regex("[0-9]+").unwrap(), &vocab),
    ];
    let words = vocab.mask_words();
    let mut masks = vec![u32::MAX; 3 * words];
    let results = fill_next_token_bitmasks(&mut ms, &mut masks, words);
    assert!(results[0].is_ok() && results[2].is_ok());
    assert!(matches!(results[1], Err(MatchError::Limit { .. })));
    assert!(masks[words..2 * words].iter().all(|&w| w == 0));
    assert_eq!(&masks[..words], mask_of(&mut ms[0]).as_slice());
    assert_eq!(&masks[2 * words..], mask_of(&mut ms[2]).as_slice());
    assert!(matches!(fill_next_token_bitmasks(&mut ms, &mut masks[1..], words)[0], Err(MatchError::MaskTooSmall { .. })));
}

/// Matchers of a few fresh constraints interleaved (the batch fills rows of one constraint on
/// several threads, making its cache's entries as they go): each row is its own matcher's mask,
/// in the order given.
#[test]
fn batch_rows_follow_their_matchers_when_constraints_repeat() {
    let vocab = common::toy();
    let constraints = [Constraint::any_json(), Constraint::regex("[0-9]+(,[0-9]+)*").unwrap(), Constraint::gbnf("root ::= \"ab\"+ \"c\"").unwrap()];
    let starts = [["[1, ", "{\"a", "2"], ["1", "12,", "3,4"], ["ab", "abab", "a"]];
    let mut ms: Vec<Matcher> = (0..48)
        .map(|i| {
            let mut m = Matcher::new(&constraints[i % 3], &vocab);
            m.accept_bytes(starts[i % 3][i / 4 % 3].as_bytes()).unwrap();
            m
        })
        .collect();
    let words = vocab.mask_words();
    let mut masks = vec![u32::MAX; 48 * words];
    assert!(sieve_core::fill_next_token_bitmasks(&mut ms, &mut masks, words).iter().all(Result::is_ok));
    for (i, m) in ms.iter_mut().enumerate() {
        assert_eq!(&masks[i * words..(i + 1) * words], mask_of(m).as_slice(), "row {i}");
    }
}

#[test]
fn limits_turn_blowups_into_errors() {
    let vocab = common::toy();
    // The DFA of (a|b)*a(a|b){14} has 2^15 states.
    let few = Limits { max_dfa_states: 64, ..Limits::default() };
    let c = Constraint::compile(&ConstraintSource::Regex("(a|b)*a(a|b){14}".into()), &few).unwrap();
    let mut m = Matcher::new(&c, &vocab);
    let mut rng = Rng(3);
    let mut err = None;
    for _ in 0..200 {
        let t = [b'a', b'b'][rng.below(2)] as u32;
        if let Err(e) = m.accept_token(t) {
            err = Some(e);
            break;
        }
    }
    let err = err.expect("the DFA outgrows 64 states");
    assert!(matches!(err, MatchError::Limit { what: "regex DFA states", limit: 64 }), "{err:?}");
    // The error sticks: every later call returns it, even one that needs no new state, until
    // a reset.
    let mut mask = vec![0u32; vocab.mask_words()];
    assert_eq!(m.fill_next_token_bitmask(&mut mask), Err(err.clone()));
    assert!(mask.iter().all(|&w| w == 0), "a failed mask allows nothing");
    assert_eq!(m.accept_token(b'a' as u32), Err(err.clone()));
    assert_eq!(m.accept_bytes(b"a"), Err(err.clone()));
    assert_eq!(m.forced_bytes(), Err(err.clone()));
    assert_eq!(m.rollback(0), Err(err.clone()));
    assert_eq!(m.validate_tokens(&[b'a' as u32]), 0);
    m.reset();
    assert_eq!(m.rollback(0), Ok(()), "a reset forgets the error");
    let big = Limits { max_regex_bytes: 1000, ..Limits::default() };
    let e = Constraint::compile(&ConstraintSource::Regex(r"\w{50}".into()), &big).unwrap_err();
    assert_eq!(e.kind, CompileErrorKind::Limit);
}

#[test]
fn errors_carry_positions() {
    let e = Constraint::gbnf("root ::= a\na ::= \"x\" b\n").unwrap_err();
    assert_eq!(e.kind, CompileErrorKind::UndefinedRule);
    assert_eq!(e.line_col, Some((2, 11)));
    let e = Constraint::gbnf("root ::= \"x\"\nroot ::= \"y\"").unwrap_err();
    assert_eq!((e.kind, e.line_col), (CompileErrorKind::DuplicateRule, Some((2, 1))));
    assert_eq!(Constraint::gbnf("a ::= \"x\"").unwrap_err().kind, CompileErrorKind::NoRoot);
    let e = Constraint::regex("ab(c").unwrap_err();
    assert_eq!(e.kind, CompileErrorKind::Regex);
    assert!(e.offset.is_some());
    assert_eq!(Constraint::regex("^a$").unwrap_err().kind, CompileErrorKind::Unsupported);
    assert_eq!(Constraint::regex("a[^\\s\\S]").unwrap_err().kind, CompileErrorKind::Empty);
    assert_eq!(Constraint::gbnf("root ::= root \"a\"").unwrap_err().kind, CompileErrorKind::Empty);
    assert!(Constraint::gbnf("root ::= <[1000]>").is_err());
}

#[test]
fn cache_shares_compiled_constraints() {
    let cache = ConstraintCache::new(Limits::default(), 2);
    let regex = ConstraintSource::Regex("a+".into());
    assert!(cache.cached(&regex).is_none());
    let a = cache.get(&regex).unwrap();
    let b = cache.get(&regex).unwrap();
    assert!(std::ptr::eq(a.source().unwrap(), b.source().unwrap()));
    assert!(std::ptr::eq(a.source().unwrap(), cache.cached(&regex).unwrap().source().unwrap()));
    cache.get(&ConstraintSource::AnyJson).unwrap();
    cache.get(&ConstraintSource::Choices(vec!["x".into()])).unwrap();
    assert_eq!(cache.len(), 2);
    // The oldest went first.
    assert!(cache.cached(&regex).is_none());
}

#[test]
fn json_schema_sources_compile_with_their_warnings() {
    use sieve_core::json_schema::{JsonSchemaOptions, Mode};
    let schema = r#"{"type": "array", "items": {"type": "integer"}, "uniqueItems": true}"#;
    let lenient = JsonSchemaOptions { mode: Mode::Lenient, ..Default::default() };
    let c = Constraint::compile(&ConstraintSource::JsonSchema(schema.into(), lenient), &Limits::default()).unwrap();
    assert_eq!(c.warnings().iter().map(|w| w.keyword.as_str()).collect::<Vec<_>>(), ["uniqueItems"]);
    assert!(c.matches(b"[1, 2]").unwrap() && !c.matches(b"[1, \"a\"]").unwrap());
    let strict = ConstraintSource::JsonSchema(schema.into(), JsonSchemaOptions::default());
    assert_eq!(Constraint::compile(&strict, &Limits::default()).unwrap_err().kind, CompileErrorKind::Unsupported);
    let not_json = ConstraintSource::JsonSchema("{".into(), JsonSchemaOptions::default());
    assert_eq!(Constraint::compile(&not_json, &Limits::default()).unwrap_err().kind, CompileErrorKind::Schema);
}

#[test]
fn whole_string_checks() {
    let c = Constraint::gbnf("root ::= \"a\"+ \"b\"").unwrap();
    assert!(c.matches(b"aab").unwrap());
    assert!(!c.matches(b"aa").unwrap());
    assert!(!c.matches(b"abb").unwrap());
    assert!(Constraint::any_json().matches(br#" {"x": [1, -2.5e3, "\u00e9", null]} "#).unwrap());
    assert!(!Constraint::any_json().matches(b"[1,]").unwrap());
}
