//! Pathological inputs stay inside the documented limits: each compiles under [`Limits`] and the
//! translator's limits, or fails that one request with an error that says which limit; none
//! panics, hangs or takes unbounded memory. Where one compiles, a matcher over the SmolLM2
//! vocabulary computes a mask, and the compiled form's memory is reported and bounded.

use serde_json::{Value, json};
use sieve_core::{CompileErrorKind, Constraint, ConstraintSource, Limits, Matcher};
use std::time::Instant;

use crate::common;

/// How one input ended: compiled (with its memory after one mask) or refused with this kind.
#[derive(Debug, PartialEq)]
enum Outcome {
    Compiled { bytes: usize },
    Refused(CompileErrorKind),
}

fn run(name: &str, source: ConstraintSource) -> Outcome {
    let t = Instant::now();
    let outcome = match Constraint::compile(&source, &Limits::default()) {
        Ok(c) => {
            let vocab = common::smollm2();
            let mut m = Matcher::new(&c, &vocab);
            let mut mask = vec![0u32; vocab.mask_words()];
            // A mask may run out of fuel (a limit error); it must not panic.
            let _ = m.fill_next_token_bitmask(&mut mask);
            Outcome::Compiled { bytes: c.memory_bytes() }
        }
        Err(e) => {
            eprintln!("{name}: {}", &e.message[..e.message.len().min(160)]);
            Outcome::Refused(e.kind)
        }
    };
    eprintln!("{name:<28} {outcome:?} in {:?}", t.elapsed());
    outcome
}

fn schema(v: Value) -> ConstraintSource {
    ConstraintSource::JsonSchema(v.to_string(), Default::default())
}

/// At most this much memory per compiled constraint with its caches after one mask.
const MAX_BYTES: usize = 64 << 20;

fn bounded(outcome: &Outcome) -> bool {
    match outcome {
        Outcome::Compiled { bytes } => *bytes <= MAX_BYTES,
        Outcome::Refused(_) => true,
    }
}

#[test]
fn pathological_inputs_compile_within_limits_or_are_refused() {
    // Deep $ref chains and a reference to itself with nothing else.
    let mut defs = serde_json::Map::new();
    for i in 0..2_000 {
        defs.insert(format!("d{i}"), json!({"type": "array", "items": {"$ref": format!("#/$defs/d{}", i + 1)}, "maxItems": 1}));
    }
    defs.insert("d2000".into(), json!({"type": "integer"}));
    let limit = Outcome::Refused(CompileErrorKind::Limit);
    assert_eq!(run("2,000-deep $ref chain", schema(json!({"$defs": defs, "$ref": "#/$defs/d0"}))), limit);
    assert_eq!(run("$ref to itself", schema(json!({"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}))), Outcome::Refused(CompileErrorKind::Empty));
    // Big enums and big schemas.
    let members: Vec<String> = (0..10_000).map(|i| format!("member-{i:05}")).collect();
    assert!(bounded(&run("10,000-member enum", schema(json!({"enum": members})))));
    let properties: serde_json::Map<String, Value> = (0..25_000).map(|i| (format!("property_{i:05}"), json!({"type": "string", "maxLength": 8}))).collect();
    let big = json!({"type": "object", "properties": properties});
    assert!(big.to_string().len() > 1 << 20, "a schema over 1 MB");
    // Its grammar is over `max_grammar_states` (each member's automaton holds its own copy of the
    // value's); 1,000 members with names of 32 bytes compile, with the automaton of the other names beside them (the
    // declared names' trie is paid for by the schema's text, not by `max_dfa_states`).
    assert_eq!(run("1 MB schema", schema(big)), limit);
    let long_names: serde_json::Map<String, Value> =
        (0..1_000u128).map(|i| (format!("{:032x}", i.wrapping_mul(0x9E37_79B9_7F4A_7C15_F39C_C060_5CED_C835)), json!({"type": "string"}))).collect();
    assert!(matches!(run("1,000 long property names", schema(json!({"type": "object", "properties": long_names}))), Outcome::Compiled { .. }));
    // Patterns whose DFA blows up, and lengths and counts in the millions.
    // (The grammar engine follows the pattern's NFA-sized automaton: no blow-up to refuse.)
    assert!(bounded(&run("pattern DFA blow-up", schema(json!({"type": "string", "pattern": "^(a|b)*a(a|b){24}$"})))));
    assert!(bounded(&run("minLength 5,000,000", schema(json!({"type": "string", "minLength": 5_000_000})))));
    assert_eq!(run("maxLength 5,000,000", schema(json!({"type": "string", "maxLength": 5_000_000, "pattern": "^[a-z]+$"}))), limit);
    assert_eq!(run("minItems 5,000,000", schema(json!({"type": "array", "minItems": 5_000_000}))), limit);
    // anyOf nested 24 deep through references, two branches each: 2^24 paths if expanded.
    let mut levels = serde_json::Map::from_iter([("l0".to_string(), json!({"type": "integer"}))]);
    for i in 1..=24 {
        let below = json!({"$ref": format!("#/$defs/l{}", i - 1)});
        let object = json!({"type": "object", "properties": {"k": below}, "required": ["k"], "additionalProperties": false});
        levels.insert(format!("l{i}"), json!({"anyOf": [below, object]}));
    }
    assert!(bounded(&run("anyOf nested 24 deep", schema(json!({"$defs": levels, "$ref": "#/$defs/l24"})))));
    // Negations of an anyOf that leads back to itself through references (found by the fuzzer:
    // each branch's negation negated the anyOf again, past the stack).
    let cycle = json!({"not": {"not": {"not": {"$ref": "#/$defs/d3"}}}, "$defs": {
        "d0": {"anyOf": [{"anyOf": [{"$ref": "#/$defs/d3"}, {"type": "null"}]}, {"type": "null"}]},
        "d3": {"$ref": "#/$defs/d0"}}});
    assert_eq!(run("negated reference cycle", schema(cycle)), limit);
    // GBNF with 100,000 rules, a chain, and a regex whose NFA is over the limit.
    let rules: String = (0..100_000).map(|i| format!("r{i} ::= \"a\" r{}\n", i + 1)).collect::<String>() + "r100000 ::= \"b\"\n";
    assert!(bounded(&run("GBNF of 100,000 rules", ConstraintSource::Gbnf(format!("root ::= r0\n{rules}")))));
    assert_eq!(run("regex NFA over the limit", ConstraintSource::Regex("[a-z]{2000}[0-9]{2000}\\w{1000}".into())), limit);
}

/// The limits a schema is compiled under bound its translation too, on every path from a schema
/// to a constraint: a source compiled directly or through a cache, and a parsed schema.
#[test]
fn a_schemas_translation_keeps_the_limits_it_is_compiled_under() {
    let nested = json!({"type": "array", "items": {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}}});
    let shallow = Limits { max_depth: 2, ..Limits::default() };
    let refused = |r: Result<Constraint, sieve_core::CompileError>| matches!(r, Err(e) if e.kind == CompileErrorKind::Limit);
    assert!(refused(Constraint::compile(&schema(nested.clone()), &shallow)));
    assert!(refused(sieve_core::ConstraintCache::new(shallow, 4).get(&schema(nested.clone()))));
    let options = Default::default();
    assert!(matches!(Constraint::json_schema_with_limits(&nested, &options, &shallow), Err(sieve_core::json_schema::JsonSchemaError::Schema(_))));
    assert!(Constraint::compile(&schema(nested.clone()), &Limits::default()).is_ok());
    // A pattern with a length bound is one automaton of 2^7 states times the counts.
    let patterned = schema(json!({"type": "string", "pattern": "^(a|b)*a(a|b){6}$", "maxLength": 30}));
    let few_states = Limits { max_dfa_states: 64, ..Limits::default() };
    assert!(Constraint::compile(&patterned, &few_states).is_err_and(|e| e.message.contains("max_dfa_states")));
    assert!(Constraint::compile(&patterned, &Limits::default()).is_ok());
}
