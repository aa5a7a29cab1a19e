//! Property test: random schemas from a family that covers objects, numbers
//! with decimal bounds, strings with lengths and patterns, enums and arrays;
//! random instances shaped like them. The `jsonschema` crate is the oracle:
//! an instance it rejects must be rejected by the grammar (no false accept),
//! and one it accepts must be accepted (instances are written with keys in
//! declared order, the spelling the grammar promises).

#[cfg(target_family = "wasm")]
use wasm_bindgen_test::wasm_bindgen_test as test;

use proptest::prelude::*;
use serde_json::{Map, Value, json};
use sieve_core::Constraint;
use sieve_core::json_schema::{JsonSchemaError, JsonSchemaOptions, SchemaErrorKind};

const NAMES: [&str; 4] = ["a", "b", "c", "d"];
const PATTERNS: [&str; 6] = ["^[a-c]+$", "^x", "b", "^(ab|cd)*$", "^[0-9]{2,3}$", "^[^0-9]*$"];

fn decimal() -> impl Strategy<Value = f64> {
    (-400i32..400).prop_map(|x| f64::from(x) / 4.0)
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        (proptest::option::of(-50i64..50), proptest::option::of(-50i64..50), proptest::option::of(2u64..5)).prop_map(
            |(lo, hi, mul)| {
                let mut m = Map::new();
                m.insert("type".into(), json!("integer"));
                if let Some(lo) = lo { m.insert("minimum".into(), json!(lo)); }
                if let Some(hi) = hi { m.insert("exclusiveMaximum".into(), json!(hi)); }
                if let (Some(k), None, None) = (mul, lo, hi) { m.insert("multipleOf".into(), json!(k)); }
                Value::Object(m)
            }
        ),
        (proptest::option::of(decimal()), proptest::option::of(decimal()), any::<bool>()).prop_map(|(lo, hi, excl)| {
            let mut m = Map::new();
            m.insert("type".into(), json!("number"));
            if let Some(lo) = lo { m.insert(if excl { "exclusiveMinimum" } else { "minimum" }.into(), json!(lo)); }
            if let Some(hi) = hi { m.insert("maximum".into(), json!(hi)); }
            Value::Object(m)
        }),
        (0u64..3, proptest::option::of(0u64..6), proptest::option::of(0usize..PATTERNS.len())).prop_map(|(lo, hi, p)| {
            let mut m = Map::new();
            m.insert("type".into(), json!("string"));
            m.insert("minLength".into(), json!(lo));
            if let Some(hi) = hi { m.insert("maxLength".into(), json!(hi)); }
            if let Some(p) = p { m.insert("pattern".into(), json!(PATTERNS[p])); }
            Value::Object(m)
        }),
        proptest::sample::subsequence(vec![json!(1), json!("a"), json!(null), json!(true), json!([1]), json!({"k": 2}), json!(2.5)], 1..4)
            .prop_map(|v| json!({ "enum": v })),
        Just(json!({"type": ["boolean", "null"]})),
        (0u64..2, 2u64..4).prop_map(|(lo, hi)| json!({"type": "array", "items": {"type": "integer", "minimum": 0}, "minItems": lo, "maxItems": hi})),
    ]
}

fn schema() -> impl Strategy<Value = Value> {
    (
        proptest::collection::vec(proptest::option::of(leaf()), NAMES.len()),
        proptest::collection::vec(any::<bool>(), NAMES.len()),
        proptest::option::of(any::<bool>()),
    )
        .prop_map(|(props, req, ap)| {
            let mut p = Map::new();
            let mut r = Vec::new();
            for (i, s) in props.into_iter().enumerate() {
                if let Some(s) = s {
                    p.insert(NAMES[i].into(), s);
                    if req[i] {
                        r.push(json!(NAMES[i]));
                    }
                }
            }
            let mut m = Map::new();
            m.insert("type".into(), json!("object"));
            m.insert("properties".into(), Value::Object(p));
            m.insert("required".into(), Value::Array(r));
            if let Some(ap) = ap { m.insert("additionalProperties".into(), json!(ap)); }
            Value::Object(m)
        })
}

fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        (-60i64..60).prop_map(|x| json!(x)),
        decimal().prop_map(|x| json!(x)),
        "[abcdx0-9]{0,5}".prop_map(Value::String),
        any::<bool>().prop_map(Value::Bool),
        Just(Value::Null),
    ];
    leaf.prop_recursive(2, 8, 3, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            inner.prop_map(|v| json!({ "k": v })),
        ]
    })
}

fn instance() -> impl Strategy<Value = Value> {
    (proptest::collection::vec(proptest::option::of(value()), NAMES.len() + 1)).prop_map(|vals| {
        let mut m = Map::new();
        for (i, v) in vals.into_iter().enumerate() {
            if let Some(v) = v {
                m.insert(NAMES.get(i).copied().unwrap_or("zz").into(), v);
            }
        }
        Value::Object(m)
    })
}

fn spaced(v: &Value) -> String {
    match v {
        Value::Array(a) => format!("[{}]", a.iter().map(spaced).collect::<Vec<_>>().join(", ")),
        Value::Object(o) => format!(
            "{{{}}}",
            o.iter().map(|(k, x)| format!("{}: {}", Value::String(k.clone()), spaced(x))).collect::<Vec<_>>().join(", ")
        ),
        other => other.to_string(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, .. ProptestConfig::default() })]

    #[test]
    fn grammar_agrees_with_an_independent_validator(schema in schema(), instances in proptest::collection::vec(instance(), 8)) {
        let compiled = Constraint::json_schema(&schema, &JsonSchemaOptions::default());
        prop_assume!(compiled.is_ok());
        let (c, _) = compiled.unwrap();
        let oracle = jsonschema::validator_for(&schema).unwrap();
        let declared = schema["properties"].as_object().unwrap();
        for inst in &instances {
            // Declared properties first, in declared order; the others after.
            let o = inst.as_object().unwrap();
            let mut ordered = Map::new();
            for k in declared.keys().chain(o.keys().filter(|k| !declared.contains_key(*k))) {
                if let Some(v) = o.get(k) {
                    ordered.insert(k.clone(), v.clone());
                }
            }
            let inst = Value::Object(ordered);
            let text = spaced(&inst);
            let valid = oracle.is_valid(&inst);
            let accepted = c.matches(text.as_bytes()).unwrap();
            prop_assert_eq!(accepted, valid, "schema {} instance {}", schema, text);
        }
    }
}

/// String schema `schema`, within `lengths` (minimum, and how many more
/// at most) where given, accepts each of `strings` exactly where the
/// independent validator does.
fn strings_agree(mut schema: Value, lengths: Option<(u64, u64)>, strings: Vec<Vec<char>>) -> Result<(), TestCaseError> {
    if let Some((min, extra)) = lengths {
        schema["minLength"] = json!(min);
        schema["maxLength"] = json!(min + extra);
    }
    let oracle = jsonschema::validator_for(&schema).unwrap();
    // A schema no string satisfies is an error; the oracle must agree on every string.
    let c = match Constraint::json_schema(&schema, &JsonSchemaOptions::default()) {
        Ok((c, _)) => Some(c),
        Err(JsonSchemaError::Schema(e)) if e.kind == SchemaErrorKind::Unsatisfiable => None,
        Err(e) => panic!("schema {schema}: {e}"),
    };
    for s in strings {
        let inst = json!(s.into_iter().collect::<String>());
        let text = spaced(&inst);
        let accepted = c.as_ref().is_some_and(|c| c.matches(text.as_bytes()).unwrap());
        prop_assert_eq!(accepted, oracle.is_valid(&inst), "schema {} instance {}", schema, text);
    }
    Ok(())
}

/// Small ECMA-262 patterns: alternations, groups, classes, quantifiers, with
/// and without anchors (unanchored sides search); with lengths or without.
fn pattern() -> impl Strategy<Value = String> {
    let atom = proptest::sample::select(vec!["a", "b", "1", "[ab]", "[0-9]", r"\*", "."]);
    let piece = (atom, proptest::sample::select(vec!["", "+", "*", "?", "{1,2}"])).prop_map(|(a, q)| format!("{a}{q}"));
    let branch = proptest::collection::vec(piece, 1..3).prop_map(|v| v.concat());
    let body = proptest::collection::vec(branch, 1..4).prop_map(|v| v.join("|"));
    (body, any::<bool>(), any::<bool>(), any::<bool>()).prop_map(|(body, group, start, end)| {
        let body = if group { format!("({body})") } else { body };
        format!("{}{body}{}", if start { "^" } else { "" }, if end { "$" } else { "" })
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, .. ProptestConfig::default() })]

    #[test]
    fn patterns_agree_with_an_independent_validator(
        pattern in pattern(),
        lengths in proptest::option::of((0u64..3, 0u64..4)),
        strings in proptest::collection::vec(proptest::collection::vec(proptest::sample::select(vec!['a', 'b', '1', '*', 'x']), 0..5), 8),
    ) {
        let schema = json!({"type": "string", "pattern": pattern});
        strings_agree(schema, lengths, strings)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, .. ProptestConfig::default() })]

    /// `oneOf` of strings (patterns, excluded patterns, a branch with
    /// none, lengths beside): a string matches where exactly one branch does.
    #[test]
    fn one_of_strings_agrees_with_an_independent_validator(
        branches in proptest::collection::vec((proptest::option::of(pattern()), proptest::option::of(pattern())), 2..5),
        lengths in proptest::option::of((0u64..3, 0u64..4)),
        strings in proptest::collection::vec(proptest::collection::vec(proptest::sample::select(vec!['a', 'b', '1', '*', 'x']), 0..5), 12),
    ) {
        let branches: Vec<Value> = branches
            .into_iter()
            .map(|(p, not)| {
                let mut b = json!({});
                if let Some(p) = p { b["pattern"] = json!(p); }
                if let Some(n) = not { b["not"] = json!({"pattern": n}); }
                b
            })
            .collect();
        let schema = json!({"type": "string", "oneOf": branches});
        strings_agree(schema, lengths, strings)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, .. ProptestConfig::default() })]

    /// With `PropertyOrder::AnyUpTo`, members in any order are accepted
    /// exactly when the instance is valid, and a declared member written
    /// twice never is.
    #[test]
    fn any_order_grammar_agrees_with_an_independent_validator(
        schema in schema(),
        instances in proptest::collection::vec((instance(), any::<u64>()), 8),
    ) {
        use sieve_core::json_schema::PropertyOrder;
        let options = JsonSchemaOptions { property_order: PropertyOrder::AnyUpTo(8), ..Default::default() };
        let compiled = Constraint::json_schema(&schema, &options);
        prop_assume!(compiled.is_ok());
        let (c, _) = compiled.unwrap();
        let oracle = jsonschema::validator_for(&schema).unwrap();
        for (inst, seed) in &instances {
            // The members in an order drawn from `seed`.
            let mut members: Vec<(String, Value)> = inst.as_object().unwrap().clone().into_iter().collect();
            let mut s = *seed;
            for i in (1..members.len()).rev() {
                s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                members.swap(i, (s >> 33) as usize % (i + 1));
            }
            let text = |m: &[(String, Value)]| {
                format!("{{{}}}", m.iter().map(|(k, v)| format!("{}: {}", Value::String(k.clone()), spaced(v))).collect::<Vec<_>>().join(", "))
            };
            let valid = oracle.is_valid(inst);
            prop_assert_eq!(c.matches(text(&members).as_bytes()).unwrap(), valid, "schema {} instance {}", schema, text(&members));
            if let Some(dup) = members.iter().find(|(k, _)| schema["properties"].get(k).is_some()).cloned() {
                members.push(dup);
                prop_assert!(!c.matches(text(&members).as_bytes()).unwrap(), "schema {} instance {}", schema, text(&members));
            }
        }
    }
}
