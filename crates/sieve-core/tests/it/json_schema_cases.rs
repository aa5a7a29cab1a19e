//! JSON Schema translation: options, errors, recursion, and numeric bounds
//! checked against a brute-force oracle.

#[cfg(target_family = "wasm")]
use wasm_bindgen_test::wasm_bindgen_test as test;

use serde_json::json;
use sieve_core::{Constraint, Limits};
use sieve_core::json_schema::{JsonSchemaOptions, Mode, SchemaErrorKind, Whitespace, to_grammar};

fn compile(schema: serde_json::Value, options: &JsonSchemaOptions) -> Constraint {
    Constraint::json_schema(&schema, options).unwrap().0
}

fn accepts(c: &Constraint, text: &str) -> bool {
    c.matches(text.as_bytes()).unwrap()
}

/// Exact decimal comparison of `x / 8` against `b / 8` (all values are eighths).
fn in_range(x: i64, lo: Option<(i64, bool)>, hi: Option<(i64, bool)>) -> bool {
    lo.is_none_or(|(b, excl)| if excl { x > b } else { x >= b }) && hi.is_none_or(|(b, excl)| if excl { x < b } else { x <= b })
}

fn eighths(k: i64) -> String {
    let neg = k < 0;
    let a = k.unsigned_abs();
    let (int, frac) = (a / 8, a % 8 * 125);
    let mut s = if frac == 0 { int.to_string() } else { format!("{int}.{frac:03}").trim_end_matches('0').to_string() };
    if neg {
        s.insert(0, '-');
    }
    s
}

#[test]
fn numeric_bounds_match_a_brute_force_oracle() {
    let bounds = [-20i64, -9, -8, -1, 0, 1, 3, 8, 12, 17];
    for (i, &lo) in bounds.iter().enumerate() {
        for &hi in &bounds[i..] {
            for (lo_ex, hi_ex) in [(false, false), (true, false), (false, true), (true, true)] {
                for integer in [false, true] {
                    let mut s = serde_json::Map::new();
                    s.insert("type".into(), json!(if integer { "integer" } else { "number" }));
                    s.insert(if lo_ex { "exclusiveMinimum" } else { "minimum" }.into(), serde_json::from_str(&eighths(lo)).unwrap());
                    s.insert(if hi_ex { "exclusiveMaximum" } else { "maximum" }.into(), serde_json::from_str(&eighths(hi)).unwrap());
                    let schema = serde_json::Value::Object(s);
                    let c = match Constraint::json_schema(&schema, &JsonSchemaOptions::default()) {
                        Ok((c, _)) => c,
                        Err(e) => {
                            // Only an empty range may fail to compile.
                            assert!((lo..=hi).all(|x| !in_range(x, Some((lo, lo_ex)), Some((hi, hi_ex))) || (integer && x % 8 != 0)), "{schema}: {e}");
                            continue;
                        }
                    };
                    for x in -30i64..30 {
                        let want = in_range(x, Some((lo, lo_ex)), Some((hi, hi_ex))) && (!integer || x % 8 == 0);
                        let text = eighths(x);
                        assert_eq!(accepts(&c, &text), want, "{schema} on {text}");
                        // Other spellings of the same value.
                        if x % 8 == 0 {
                            assert_eq!(accepts(&c, &format!("{text}.0")), want, "{schema} on {text}.0");
                        } else {
                            assert_eq!(accepts(&c, &format!("{text}00")), want, "{schema} on {text}00");
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn whitespace_options() {
    let schema = json!({"type": "array", "items": {"type": "integer"}});
    let any = compile(schema.clone(), &JsonSchemaOptions::default());
    assert!(accepts(&any, "[1,2]") && accepts(&any, "[ 1 ,\n\t2 ]"));
    let compact = compile(schema.clone(), &JsonSchemaOptions { whitespace: Whitespace::Compact, ..Default::default() });
    assert!(accepts(&compact, "[1,2]") && !accepts(&compact, "[1, 2]"));
    let bounded = compile(schema, &JsonSchemaOptions { whitespace: Whitespace::Bounded(2), ..Default::default() });
    assert!(accepts(&bounded, "[1,  2]") && !accepts(&bounded, "[1,   2]"));
}

#[test]
fn strict_errors_name_keyword_and_pointer() {
    let schema = json!({"properties": {"a": {"type": "array", "uniqueItems": true}}});
    let e = to_grammar(&schema, &JsonSchemaOptions::default(), &Limits::default()).unwrap_err();
    assert_eq!(e.keyword, "uniqueItems");
    assert_eq!(e.pointer, "/properties/a");
    assert!(matches!(e.kind, SchemaErrorKind::Unsupported(_)));
    // A name with `~` and `/` is escaped in the pointer (RFC 6901).
    let e = to_grammar(&json!({"properties": {"é~/x": {"uniqueItems": true}}}), &JsonSchemaOptions::default(), &Limits::default()).unwrap_err();
    assert_eq!(e.pointer, "/properties/é~0~1x");
    let e = to_grammar(&json!({"pattern": "a(?=b)"}), &JsonSchemaOptions::default(), &Limits::default()).unwrap_err();
    assert_eq!(e.keyword, "pattern");
    assert!(e.to_string().contains("lookaround"));
}

#[test]
fn lenient_mode_reports_what_it_left_out() {
    let schema = json!({"type": "array", "uniqueItems": true, "items": {"type": "integer"}});
    let lenient = JsonSchemaOptions { mode: Mode::Lenient, ..Default::default() };
    let g = to_grammar(&schema, &lenient, &Limits::default()).unwrap();
    assert_eq!(g.warnings.len(), 1);
    assert_eq!(g.warnings[0].keyword, "uniqueItems");
    // A pattern read twice (by an allOf merge, then by the object) is reported once.
    let merged = json!({"allOf": [{"patternProperties": {"a(?=b)": {}}, "additionalProperties": false}, {"properties": {"x": {}}}]});
    let g = to_grammar(&merged, &lenient, &Limits::default()).unwrap();
    assert_eq!(g.warnings.iter().map(|w| w.keyword.as_str()).collect::<Vec<_>>(), ["patternProperties"]);
}

#[test]
fn recursive_references_become_recursive_rules() {
    let schema = json!({
        "$defs": {"node": {"type": "object", "properties": {"v": {"type": "integer"}, "next": {"$ref": "#/$defs/node"}},
                           "required": ["v"], "additionalProperties": false}},
        "$ref": "#/$defs/node"
    });
    let c = compile(schema, &JsonSchemaOptions::default());
    let mut deep = String::from(r#"{"v": 0}"#);
    for i in 1..40 {
        deep = format!(r#"{{"v": {i}, "next": {deep}}}"#);
    }
    assert!(accepts(&c, &deep));
    assert!(!accepts(&c, r#"{"v": 1, "next": {"v": "x"}}"#));
}

#[test]
fn recursion_through_merged_references_becomes_recursive_rules() {
    // A reference with siblings is merged into a map no pointer names; each level merges again.
    let member = json!({"minProperties": 1, "anyOf": [{"type": "string"}, {"$ref": "#/definitions/resource"}]});
    let schema = json!({
        "type": "object",
        "additionalProperties": member,
        "definitions": {"resource": {"type": "object", "additionalProperties": member}}
    });
    let mut deep = String::from(r#""leaf""#);
    for i in 0..60 {
        deep = format!(r#"{{"k{i}": {deep}}}"#);
    }
    let deep_empty = deep.replace(r#""leaf""#, "{}");
    table(
        schema,
        &[
            (r#"{"a": "x"}"#, true),
            (r#"{"a": {"b": "y", "c": {"d": "z"}}}"#, true),
            (&deep, true),
            (r#"{"a": {}}"#, false),
            (r#"{"a": {"b": {}}}"#, false),
            (&deep_empty, false),
            (r#"{"a": 3}"#, false),
        ],
    );
    // allOf of a definition and one that contains it: the merge repeats at every level.
    let schema = json!({
        "definitions": {
            "child": {"type": "object"},
            "foo": {"properties": {"children": {"allOf": [{"$ref": "#/definitions/foo"}, {"$ref": "#/definitions/child"}]}},
                    "required": ["children"], "type": "object"}
        },
        "properties": {"foo": {"$ref": "#/definitions/foo"}}
    });
    table(schema, &[(r#"{}"#, true), (r#"{"foo": {"children": 1}}"#, false), (r#"{"foo": []}"#, false)]);
}

#[test]
fn additional_properties_cannot_shadow_declared_ones() {
    let schema = json!({"properties": {"a": {"type": "integer"}}});
    let c = compile(schema, &JsonSchemaOptions::default());
    assert!(accepts(&c, r#"{"a": 1, "b": "x"}"#));
    assert!(!accepts(&c, r#"{"a": 1, "a": "x"}"#));
    assert!(accepts(&c, r#"{"ab": "x", "": 2}"#));
}

#[test]
fn patterns_combine_with_lengths_and_property_regions() {
    let c = compile(json!({"type": "string", "pattern": "^a+b*$", "minLength": 2, "maxLength": 4}), &JsonSchemaOptions::default());
    for (s, ok) in [("\"a\"", false), ("\"ab\"", true), ("\"aabb\"", true), ("\"aabbb\"", false), ("\"ba\"", false)] {
        assert_eq!(accepts(&c, s), ok, "{s}");
    }
    let c = compile(
        json!({"type": "object", "patternProperties": {"^x": {"type": "integer"}, "y$": {"type": "integer", "minimum": 10}}}),
        &JsonSchemaOptions::default(),
    );
    for (s, ok) in [(r#"{"x1": 1}"#, true), (r#"{"x1": "s"}"#, false), (r#"{"xy": 5}"#, false), (r#"{"xy": 12}"#, true), (r#"{"q": "s"}"#, true)] {
        assert_eq!(accepts(&c, s), ok, "{s}");
    }
}

/// A format's automaton times its length counts (an email of at most 255
/// characters: hundreds of states times 256) is bounded by the grammar's
/// states, not by one automaton's: it compiles, counts exactly, and a
/// grammar too small for it is a limit error that says so.
#[test]
fn formats_with_length_bounds_are_bounded_as_grammar_states() {
    let schema = json!({"type": "string", "format": "email", "maxLength": 255});
    let c = compile(schema.clone(), &JsonSchemaOptions::default());
    let email = |len: usize| format!("\"{}@example.com\"", "a".repeat(len - "@example.com".len()));
    for (len, ok) in [(20, true), (254, true), (255, true), (256, false), (300, false)] {
        assert_eq!(accepts(&c, &email(len)), ok, "length {len}");
    }
    assert!(!accepts(&c, "\"not an email\""));
    let small = Limits { max_grammar_states: 50_000, ..Limits::default() };
    let err = Constraint::json_schema_with_limits(&schema, &JsonSchemaOptions::default(), &small).err().unwrap();
    assert!(err.to_string().contains("max_grammar_states"), "{err}");
}

/// An unanchored pattern is a search through its minimal DFA: once it has
/// matched, any character follows, whichever characters led there.
#[test]
fn searches_take_any_character_after_a_match() {
    let cases = [("\"\"", false), ("\"x\"", false), ("\"a\"", true), ("\"aa\"", true), ("\"ba\"", true), ("\"xa\"", true), ("\"a~é\"", true), ("\"xyz\"", false)];
    table(json!({"type": "string", "pattern": "[ab]"}), &cases);
    table(json!({"type": "string", "pattern": "[0-9]", "minLength": 3}), &[("\"a7\"", false), ("\"a7b\"", true), ("\"77a\"", true), ("\"abc\"", false), ("\"~é7\"", true)]);
}

/// Lengths past the 1000 a repetition holds are written in blocks; every
/// kind of character, escapes included, counts once, at every length near
/// each bound and block edge.
#[test]
fn long_strings_count_every_character_once() {
    let units = ["a", "\\n", "\\\"", "\\u00e9", "\\ud83d\\ude00", "é", "\\u0041"];
    let text = |len: usize, shift: usize| {
        let body: String = (0..len).map(|i| units[(i + shift) % units.len()]).collect();
        format!("\"{body}\"")
    };
    for (min, max) in [(0, 1001), (1500, 2300), (2000, 2000)] {
        let c = compile(json!({"type": "string", "minLength": min, "maxLength": max}), &JsonSchemaOptions::default());
        for len in [0, 1, 999, 1000, 1001, 1002, 1499, 1500, 1501, 1999, 2000, 2001, 2299, 2300, 2301] {
            for shift in 0..units.len() {
                assert_eq!(accepts(&c, &text(len, shift)), (min..=max).contains(&len), "{min}..={max}, length {len}");
            }
        }
    }
}

fn table(schema: serde_json::Value, cases: &[(&str, bool)]) {
    let c = compile(schema.clone(), &JsonSchemaOptions::default());
    for (text, ok) in cases {
        assert_eq!(accepts(&c, text), *ok, "{schema} on {text}");
    }
}

#[test]
fn negations_are_exact_per_kind_of_value() {
    // `required` holds for every non-object, so its negation is an object.
    table(json!({"not": {"required": ["a"]}}), &[(r#"{"b": 1}"#, true), (r#"{"a": 1}"#, false), (r#""s""#, false), ("3", false)]);
    table(
        json!({"not": {"type": "string", "minLength": 2}}),
        &[(r#""a""#, true), (r#""ab""#, false), ("1", true), ("null", true)],
    );
    table(json!({"type": "string", "not": {"pattern": "^a"}}), &[(r#""ba""#, true), (r#""ab""#, false)]);
    table(
        json!({"type": "number", "not": {"enum": [1, 2.5]}}),
        &[("0", true), ("1", false), ("1.0", false), ("2", true), ("2.5", false), ("3", true)],
    );
    table(
        json!({"type": "object", "not": {"properties": {"k": {"const": "x"}}}}),
        &[(r#"{"k": "x"}"#, false), (r#"{"k": "y"}"#, true), ("{}", false)],
    );
    table(json!({"not": {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "integer"}}]}}), &[
        (r#""s""#, false),
        ("[1]", false),
        ("[1, \"a\"]", true),
        ("1", true),
    ]);
    table(json!({"$defs": {"t": {"type": "object", "properties": {"n": {"$ref": "#/$defs/t"}, "v": {"type": "integer"}}}},
                 "not": {"$ref": "#/$defs/t"}}), &[
        ("1", true),
        (r#"{"v": 1}"#, false),
        (r#"{"n": {"v": "x"}}"#, true),
        (r#"{"n": {"n": {"v": 2}}}"#, false),
    ]);
}

#[test]
fn overlapping_one_of_excludes_the_overlap() {
    let schema = json!({"type": "object", "properties": {"a": {}, "b": {}, "c": {}},
                        "oneOf": [{"required": ["a"]}, {"required": ["b", "c"]}]});
    table(schema, &[
        (r#"{"a": 1}"#, true),
        (r#"{"b": 1, "c": 2}"#, true),
        (r#"{"a": 1, "b": 1}"#, true),
        (r#"{"a": 1, "b": 1, "c": 2}"#, false),
        (r#"{"b": 1}"#, false),
    ]);
    // Without `type`, every non-object matches both branches.
    table(json!({"oneOf": [{"required": ["a"]}, {"required": ["b"]}]}), &[(r#"{"a": 1}"#, true), ("1", false), (r#"{"a": 1, "b": 2}"#, false)]);
    table(json!({"oneOf": [{"type": "integer"}, {"minimum": 2}]}), &[("1", true), ("2", false), ("2.5", true), (r#""s""#, true), ("null", true)]);
    let e = to_grammar(&json!({"oneOf": [{"type": "array", "uniqueItems": true}, {"type": "array", "maxItems": 3}]}), &JsonSchemaOptions::default(), &Limits::default())
        .unwrap_err();
    assert_eq!(e.keyword, "oneOf");
    // Siblings both branches hold are not negated (`uniqueItems` has no
    // exact negation): only the other branch's own keywords are.
    let schema = json!({"type": "object", "properties": {"a": {}, "b": {}, "u": {"type": "array", "items": {"enum": [1, 2]}, "uniqueItems": true}},
                        "additionalProperties": false, "oneOf": [{"required": ["a"]}, {"required": ["b"]}]});
    table(schema, &[
        (r#"{"a": 1, "u": [1, 2]}"#, true),
        (r#"{"b": 1}"#, true),
        (r#"{"a": 1, "b": 2}"#, false),
        (r#"{"b": 1, "u": [1, 1]}"#, false),
        (r#"{"c": 1}"#, false),
    ]);
}

/// "At most one of these options is set", written as one `if`/`then` per
/// option: the branches' product holds as many distinct branches as there
/// are ways to satisfy it, not two to the number of options.
#[test]
fn exclusive_options_as_conditions_match_a_brute_force_oracle() {
    let n = 8;
    let names: Vec<String> = (0..n).map(|i| format!("o{i}")).collect();
    let props: serde_json::Map<String, serde_json::Value> =
        names.iter().map(|k| (k.clone(), json!({"type": ["null", "integer"]}))).collect();
    let conditions: Vec<serde_json::Value> = names
        .iter()
        .map(|k| {
            let others: serde_json::Map<String, serde_json::Value> =
                names.iter().filter(|o| *o != k).map(|o| (o.clone(), json!({"const": null}))).collect();
            json!({"if": {"not": {"properties": {k.as_str(): {"const": null}}}}, "then": {"properties": others}})
        })
        .collect();
    let schema = json!({"type": "object", "properties": props, "additionalProperties": false, "allOf": conditions});
    let c = compile(schema, &JsonSchemaOptions::default());
    // Each option absent, null or 1: valid where at most one is 1.
    for code in 0..3usize.pow(n as u32) {
        let digits: Vec<usize> = (0..n).map(|i| code / 3usize.pow(i as u32) % 3).collect();
        let members: Vec<String> = digits
            .iter()
            .enumerate()
            .filter(|(_, d)| **d > 0)
            .map(|(i, d)| format!("\"o{i}\": {}", if *d == 1 { "null" } else { "1" }))
            .collect();
        let text = format!("{{{}}}", members.join(", "));
        assert_eq!(accepts(&c, &text), digits.iter().filter(|d| **d == 2).count() <= 1, "{text}");
    }
}

#[test]
fn all_of_keeps_every_pattern() {
    table(json!({"allOf": [{"pattern": "^a"}, {"pattern": "b$"}], "type": "string"}), &[(r#""ab""#, true), (r#""a""#, false), (r#""b""#, false)]);
}

/// One side's `additionalProperties` reaches the names the other side
/// declares, except those its own patterns match, and the keys only the other
/// side's patterns match (see also
/// `additional_properties_reach_the_keys_of_another_schemas_patterns`).
#[test]
fn all_of_applies_each_sides_additional_properties() {
    let ap_with_patterns = json!({"allOf": [
        {"patternProperties": {"^y": {"type": "integer"}}, "additionalProperties": false},
        {"properties": {"y1": {"minimum": 3}, "z": {}}}
    ]});
    table(ap_with_patterns, &[(r#"{"y1": 4}"#, true), (r#"{"y1": 1}"#, false), (r#"{"y1": "a"}"#, false), (r#"{"z": 4}"#, false), ("{}", true)]);
    let other_patterns = json!({"allOf": [{"properties": {"x": {}}, "additionalProperties": false}, {"patternProperties": {"^y": {}}}]});
    table(other_patterns, &[(r#"{"x": 1}"#, true), (r#"{"y": 1}"#, false), ("{}", true)]);
    let same_patterns = json!({"allOf": [
        {"patternProperties": {"^y": {}}, "additionalProperties": false},
        {"patternProperties": {"^y": {"type": "integer"}}}
    ]});
    table(same_patterns, &[(r#"{"y1": 4}"#, true), (r#"{"y1": "a"}"#, false), (r#"{"z": 4}"#, false)]);
}

#[test]
fn undeclared_members_may_come_between_declared_ones() {
    use sieve_core::json_schema::PropertyOrder;
    let schema = json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {}, "c": {"type": "integer"}},
                        "required": ["a", "c"], "additionalProperties": {"type": "string"}});
    for order in [PropertyOrder::Schema, PropertyOrder::AnyUpTo(8)] {
        let c = compile(schema.clone(), &JsonSchemaOptions { property_order: order, ..Default::default() });
        let any = order != PropertyOrder::Schema;
        for (text, ok) in [
            (r#"{"x": "s", "a": 1, "y": "t", "c": 2, "z": "u"}"#, true),
            (r#"{"a": 1, "c": 2}"#, true),
            (r#"{"c": 2, "x": "s", "a": 1}"#, any),
            (r#"{"a": 1, "x": 2, "c": 2}"#, false),
            (r#"{"a": 1, "a": 2, "c": 2}"#, false),
            (r#"{"a": 1, "x": "s"}"#, false),
        ] {
            assert_eq!(accepts(&c, text), ok, "{order:?} on {text}");
        }
    }
}

#[test]
fn members_that_can_never_appear_take_no_place_in_the_order() {
    use sieve_core::json_schema::PropertyOrder;
    // Two members may appear: in any order up to 2, though five are declared
    // (an impossible definition referenced twice stays impossible).
    let schema = json!({"type": "object", "properties": {"a": {"type": "integer"}, "gone": false, "b": {"not": {}}, "c": {},
                                                         "d": {"$ref": "#/$defs/no"}, "e": {"$ref": "#/$defs/no"}},
                        "additionalProperties": {"type": "string"},
                        "$defs": {"no": {"not": {"type": ["array", "boolean", "null", "number", "object", "string"]}}}});
    let c = compile(schema, &JsonSchemaOptions { property_order: PropertyOrder::AnyUpTo(2), ..Default::default() });
    for (text, ok) in [
        (r#"{"c": 2, "a": 1}"#, true),
        (r#"{"a": 1, "x": "s", "c": 2}"#, true),
        (r#"{"gone": "s"}"#, false),
        (r#"{"a": 1, "b": "s"}"#, false),
        (r#"{"e": "s", "a": 1}"#, false),
        (r#"{"c": 1, "c": 2}"#, false),
    ] {
        assert_eq!(accepts(&c, text), ok, "{text}");
    }
    // Required, such a member leaves no valid object.
    let required = json!({"type": "object", "properties": {"gone": false}, "required": ["gone"]});
    assert!(Constraint::json_schema(&required, &JsonSchemaOptions::default()).is_err());
}

#[test]
fn additional_properties_reach_the_keys_of_another_schemas_patterns() {
    let string_extras = json!({"type": "object", "allOf": [
        {"properties": {"a": {"type": "integer"}}, "additionalProperties": {"type": "string"}},
        {"patternProperties": {"^x": {"maxLength": 3}}}
    ]});
    table(
        string_extras,
        &[
            (r#"{"a": 1}"#, true),
            (r#"{"a": 1, "xy": "ab"}"#, true),
            (r#"{"xy": "abcd"}"#, false),
            (r#"{"xy": 5}"#, false),
            (r#"{"b": 5}"#, false),
            (r#"{"b": "longer than three"}"#, true),
        ],
    );
    let closed = json!({"type": "object", "allOf": [
        {"properties": {"a": {}}, "additionalProperties": false},
        {"patternProperties": {"^x": {"type": "integer"}}}
    ]});
    table(closed, &[("{}", true), (r#"{"a": "s"}"#, true), (r#"{"x": 1}"#, false), (r#"{"a": 1, "b": 2}"#, false)]);
    // A declared name the pattern matches would take the other side's additionalProperties
    // once merged, and patterns of this side's own would take some of the keys instead: both
    // refused.
    for this in [json!({"properties": {"xa": {}}, "additionalProperties": {"type": "string"}}), json!({"patternProperties": {"^xb": {}}, "additionalProperties": {"type": "string"}})] {
        let schema = json!({"allOf": [this, {"patternProperties": {"^x": {"type": "integer"}}}]});
        let e = to_grammar(&schema, &JsonSchemaOptions::default(), &Limits::default()).unwrap_err();
        assert!(matches!(e.kind, SchemaErrorKind::Unsupported(_)) && e.keyword == "additionalProperties", "{e}");
    }
}

#[test]
fn enum_values_are_checked_against_positional_items() {
    table(
        json!({"enum": [[1, "a"], [1, 2, 3], ["x"], [2]], "items": [{"type": "integer"}], "additionalItems": {"type": "string"}}),
        &[(r#"[1, "a"]"#, true), ("[1, 2, 3]", false), (r#"["x"]"#, false), ("[2]", true)],
    );
    table(
        json!({"enum": [[1, "a"], [1, 2]], "prefixItems": [{"type": "integer"}], "items": {"type": "string"}}),
        &[(r#"[1, "a"]"#, true), ("[1, 2]", false)],
    );
    // additionalItems beside an items schema (not a list) has no effect.
    table(
        json!({"allOf": [{"enum": [[1, 2, 3]]}, {"not": {"not": {"additionalItems": false, "items": {}}}}]}),
        &[("[1, 2, 3]", true), ("[1, 2]", false)],
    );
}

#[test]
fn two_one_of_in_one_all_of_match_exactly_one_branch_of_each() {
    // Overlapping branches on both sides, so that values match none, one or two of each.
    let (a, b) = ([2, 3], [(Some(5), None), (None, Some(10))]);
    let schema = json!({"type": "integer", "allOf": [
        {"oneOf": [{"multipleOf": a[0]}, {"multipleOf": a[1]}]},
        {"oneOf": [{"minimum": 5}, {"maximum": 10}]}
    ]});
    let c = compile(schema, &JsonSchemaOptions::default());
    for x in -20i64..40 {
        let in_a = a.iter().filter(|&&k| x % k == 0).count();
        let in_b = b.iter().filter(|(lo, hi)| lo.is_none_or(|lo| x >= lo) && hi.is_none_or(|hi| x <= hi)).count();
        assert_eq!(accepts(&c, &x.to_string()), in_a == 1 && in_b == 1, "{x}");
    }
}

#[test]
fn unique_items_over_few_values_in_any_order() {
    table(json!({"type": "array", "uniqueItems": true, "items": {"enum": ["a", "b", 1, 1.0]}, "minItems": 1}), &[
        ("[]", false),
        (r#"["a"]"#, true),
        (r#"["b", 1, "a"]"#, true),
        (r#"[1, 1.0]"#, false),
        (r#"["a", "b", "a"]"#, false),
        (r#"["c"]"#, false),
    ]);
    table(json!({"type": "array", "uniqueItems": true, "items": {"type": "boolean"}}), &[
        ("[true, false]", true),
        ("[false]", true),
        ("[true, true]", false),
    ]);
    let e = to_grammar(&json!({"type": "array", "uniqueItems": true, "items": {"type": "string"}}), &JsonSchemaOptions::default(), &Limits::default()).unwrap_err();
    assert_eq!(e.keyword, "uniqueItems");
}

#[test]
fn any_of_literals_under_siblings_keeps_those_they_allow() {
    // Literal branches the siblings reject are left out before merging;
    // the others, and branches with more than literals, stay.
    let schema = json!({
        "pattern": "^a",
        "maxLength": 3,
        "anyOf": [{"const": "ab"}, {"const": "ba"}, {"enum": ["abcd", "ac", 1]}, {"type": "string", "enum": ["b"]}, {"minLength": 3}]
    });
    table(schema, &[
        (r#""ab""#, true),
        (r#""ac""#, true),
        (r#""abc""#, true),
        ("1", true),
        (r#""ba""#, false),
        (r#""b""#, false),
        (r#""abcd""#, false),
        (r#""a""#, false),
    ]);
    // A rejected literal branch adds nothing, though it would pass alone.
    table(json!({"type": "integer", "anyOf": [{"const": "x"}, {"const": 2}]}), &[("2", true), (r#""x""#, false)]);
}

#[test]
fn copies_drop_only_what_constrains_nothing() {
    // Branches and siblings are copied without annotations and unknown
    // keywords; `if`/`then`/`else` and references inside them still hold.
    let schema = json!({
        "$defs": {"small": {"type": "integer", "maximum": 9, "x-note": {"maximum": 0}}},
        "type": "object",
        "x-vendor": {"required": ["nowhere"]},
        "properties": {"n": {"$ref": "#/$defs/small", "description": "n"}},
        "oneOf": [
            {"title": "a", "if": {"required": ["x"]}, "then": {"not": {"required": ["error"]}}, "else": {"required": ["error"]}},
            {"dependencies": {"x": {"not": {"required": ["error"]}}}, "x-extra": false}
        ]
    });
    table(schema, &[
        ("{}", true),
        (r#"{"n": 5}"#, true),
        (r#"{"n": 10}"#, false),
        (r#"{"x": 1}"#, false),
        (r#"{"error": 1}"#, false),
        (r#"{"x": 1, "error": 1}"#, false),
        ("3", false),
    ]);
}

/// An enum beside `contains` (with its counts) or beside the negation of a closed object:
/// its values are checked one by one.
#[test]
fn enum_values_checked_against_contains_and_some_key() {
    table(json!({"enum": [[1, 2], [3], []], "contains": {"const": 3}}), &[("[3]", true), ("[1, 2]", false), ("[]", false)]);
    table(json!({"enum": [[3, 3], [3]], "contains": {"const": 3}, "minContains": 2}), &[("[3, 3]", true), ("[3]", false)]);
    let keys = json!({"allOf": [{"enum": [{"é": 2}, {"áb": 1}]}, {"not": {"additionalProperties": false, "patternProperties": {"^á": {}}}}]});
    table(keys, &[(r#"{"é": 2}"#, true), (r#"{"áb": 1}"#, false)]);
}

/// Closed objects in `oneOf`: a branch excludes the others through the negation of their
/// `additionalProperties: false` (some key outside their names), which holds on an object
/// whose keys are its own declared names when one of those outside is present.
#[test]
fn one_of_closed_objects() {
    let apart = json!({"oneOf": [
        {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"], "additionalProperties": false},
        {"type": "object", "properties": {"b": {}}, "required": ["b"], "additionalProperties": false}
    ]});
    table(apart, &[(r#"{"a": 1}"#, true), (r#"{"b": 1}"#, true), (r#"{"a": 1, "b": 2}"#, false), ("{}", false), (r#"{"a": "x"}"#, false)]);
    let nested = json!({"oneOf": [
        {"properties": {"a": {}, "b": {}}, "additionalProperties": false},
        {"properties": {"a": {}}, "additionalProperties": false}
    ]});
    table(nested, &[(r#"{"a": 1}"#, false), (r#"{"a": 1, "b": 1}"#, true), (r#"{"b": 1}"#, true), ("{}", false), ("3", false)]);
    let patterned = json!({"type": "object", "properties": {"x1": {}, "y": {}}, "additionalProperties": false,
        "not": {"patternProperties": {"^x": {}}, "additionalProperties": false}});
    table(patterned, &[(r#"{"x1": 1}"#, false), (r#"{"y": 1}"#, true), (r#"{"x1": 1, "y": 2}"#, true)]);
    // On an object that allows other keys: refused, not guessed.
    assert!(Constraint::json_schema(&json!({"not": {"properties": {"a": {}}, "additionalProperties": false}}), &JsonSchemaOptions::default()).is_err());
}

/// `not` of `oneOf`: no branch, or two at once.
#[test]
fn not_one_of_is_none_or_two() {
    table(json!({"not": {"oneOf": [{"minimum": 5}, {"maximum": 10}]}}), &[("3", false), ("7", true), ("5", true), ("12", false), (r#""s""#, true)]);
    table(json!({"not": {"oneOf": [{"type": "string"}, {"type": "integer"}]}}), &[("1.5", true), ("null", true), (r#""a""#, false), ("3", false)]);
    table(json!({"not": {"oneOf": [{"const": 1}, {"const": 2}, {"enum": [2, 3]}]}}), &[("1", false), ("2", true), ("3", false), ("4", true)]);
    // (A const and an enum in one allOf keep the values in both.)
    assert!(Constraint::json_schema(&json!({"allOf": [{"const": 1}, {"enum": [2, 3]}]}), &JsonSchemaOptions::default()).is_err());
    table(json!({"allOf": [{"enum": [1, 2]}, {"const": 2}]}), &[("1", false), ("2", true)]);
}

/// `propertyNames` as an enum or const of names, a regular format, or a pattern with length
/// bounds: every key is in all its languages, declared names included.
#[test]
fn property_names_from_enums_formats_and_bounds() {
    let names = json!({"type": "object", "propertyNames": {"enum": ["a", "bc", 3]}});
    table(names, &[(r#"{"a": 1}"#, true), (r#"{"bc": 2, "a": 1}"#, true), (r#"{"b": 1}"#, false), ("{}", true), (r#"{"3": 1}"#, false)]);
    let declared = json!({"type": "object", "properties": {"x": {}, "a": {"type": "integer"}}, "propertyNames": {"const": "a"}});
    table(declared, &[(r#"{"a": 1}"#, true), (r#"{"x": 1}"#, false), (r#"{"a": "s"}"#, false)]);
    let bounded = json!({"type": "object", "propertyNames": {"pattern": "^a", "maxLength": 2}});
    table(bounded, &[(r#"{"ab": 1}"#, true), (r#"{"abc": 1}"#, false), (r#"{"b": 1}"#, false)]);
    let dates = json!({"type": "object", "propertyNames": {"format": "date"}, "additionalProperties": {"type": "integer"}});
    table(dates, &[(r#"{"2024-01-02": 1}"#, true), (r#"{"x": 1}"#, false), (r#"{"2024-01-02": "1"}"#, false)]);
    table(json!({"type": "object", "propertyNames": {"const": 1}}), &[("{}", true), (r#"{"a": 1}"#, false)]);
    let both = json!({"type": "object", "propertyNames": {"allOf": [{"pattern": "a"}, {"pattern": "b"}]}});
    table(both, &[(r#"{"ab": 1}"#, true), (r#"{"a": 1}"#, false), (r#"{"ba": 1}"#, true)]);
}

/// `multipleOf` with bounds and excluded multiples (`not`): the integers in range whose digits
/// leave the right remainders, checked against arithmetic on every integer around the bounds,
/// spelled with and without a zero fraction; negated, in `oneOf`, and two at once.
#[test]
fn multiples_within_bounds_equal_arithmetic() {
    let mut rng = sieve_core::rng::Rng::new(11);
    let mut compiled = 0;
    for _ in 0..40 {
        let k = 2 + rng.below(29) as i64;
        let bound = |rng: &mut sieve_core::rng::Rng| (rng.below(3) != 0).then(|| (rng.below(401) as i64 - 200, rng.below(2) == 1));
        let (lo, hi) = (bound(&mut rng), bound(&mut rng));
        if lo.is_none() && hi.is_none() {
            continue;
        }
        let integer = rng.below(2) == 1;
        // Sometimes the multiples of another integer excluded as well.
        let j = (rng.below(2) == 1).then(|| 2 + rng.below(9) as i64);
        let mut schema = json!({"type": if integer { "integer" } else { "number" }, "multipleOf": k});
        if let Some(j) = j {
            schema["not"] = json!({"multipleOf": j});
        }
        if let Some((b, excl)) = lo {
            schema[if excl { "exclusiveMinimum" } else { "minimum" }] = json!(b);
        }
        if let Some((b, excl)) = hi {
            schema[if excl { "exclusiveMaximum" } else { "maximum" }] = json!(b);
        }
        let Ok((c, _)) = Constraint::json_schema(&schema, &JsonSchemaOptions::default()) else {
            // Refused only as unsatisfiable: no multiple in range.
            assert!((-320i64..=320).all(|n| n % k != 0 || j.is_some_and(|j| n % j == 0) || !in_range(n, lo, hi)), "{schema}");
            continue;
        };
        compiled += 1;
        for n in -320i64..=320 {
            let want = n % k == 0 && j.is_none_or(|j| n % j != 0) && in_range(n, lo, hi);
            assert_eq!(accepts(&c, &n.to_string()), want, "{schema} on {n}");
            assert_eq!(accepts(&c, &format!("{n}.00")), want, "{schema} on {n}.00");
        }
        assert!(!accepts(&c, &format!("{k}.5")) && !accepts(&c, "0.5"), "{schema}: fractions");
    }
    assert!(compiled >= 25, "{compiled} of 40 schemas compiled");
    let draft4 = json!({"$schema": "http://json-schema.org/draft-04/schema#", "type": "integer", "multipleOf": 5, "maximum": 20});
    table(draft4, &[("15", true), ("15.0", false), ("-5", true), ("25", false)]);
    // Negated, in oneOf (exactly one), and two at once (their common multiples).
    table(json!({"not": {"multipleOf": 4}}), &[("2.5", true), ("8", false), ("8.0", false), ("7", true), (r#""s""#, false)]);
    table(json!({"type": "integer", "oneOf": [{"multipleOf": 3}, {"multipleOf": 5}]}), &[("3", true), ("10", true), ("15", false), ("7", false)]);
    table(json!({"allOf": [{"multipleOf": 4}, {"multipleOf": 6}]}), &[("12", true), ("8", false), ("-24", true), ("18", false)]);
}

/// Several `contains` (from `allOf`) each need an item of their own, or one item matching
/// several; the negation is exact.
#[test]
fn several_contains_each_find_an_item() {
    let two = json!({"type": "array", "items": {"type": "integer"}, "allOf": [{"contains": {"minimum": 5}}, {"contains": {"maximum": 0}}]});
    table(two.clone(), &[("[1, 6, -1]", true), ("[-1, 6]", true), ("[6]", false), ("[-1]", false), ("[]", false), ("[6, 7]", false), (r#"["a", 6, -1]"#, false)]);
    let overlapping = json!({"allOf": [{"contains": {"type": "integer", "minimum": 5}}, {"contains": {"type": "integer", "maximum": 7}}]});
    table(overlapping, &[("[6]", true), ("[9]", false), ("[9, 1]", true), (r#"["x", 1, null, 9]"#, true), ("3", true)]);
    // Counted beside another: refused, not miscounted.
    let counted = json!({"allOf": [{"contains": {"maximum": 0}}, {"contains": {"minimum": 5}, "minContains": 2}]});
    assert!(Constraint::json_schema(&counted, &JsonSchemaOptions::default()).is_err());
    let three = json!({"allOf": [{"contains": {"const": "a"}}, {"contains": {"const": "b"}}, {"contains": {"const": "c"}}]});
    table(three, &[(r#"["c", "b", "a"]"#, true), (r#"["a", "b", "x", "b"]"#, false), (r#"["b", "x", "c", "a", "a"]"#, true)]);
    table(json!({"not": two}), &[("[6]", true), ("[6, -1]", false), ("[]", true), (r#""x""#, true)]);
}

/// `if` with one branch names its condition once, so conditions nested in conditions cost
/// work in proportion to their depth (named twice, each level doubled it: 2^40 here).
#[test]
fn conditions_nested_in_conditions_compile() {
    for depth in [39, 40] {
        let mut schema = json!({"type": "integer"});
        for _ in 0..depth {
            schema = json!({"if": schema, "then": {"minimum": 0}});
        }
        // Level k holds where level k - 1 fails or the value is not below 0: below 0, the
        // levels alternate from level 0 (an integer: -1 holds, -1.5 fails).
        table(schema, &[("-1", depth % 2 == 0), ("-1.5", depth % 2 == 1), ("1", true), (r#""a""#, true)]);
    }
    // Only `else`: the condition or the branch (a string or at most 3, else at least 10).
    let with_else = json!({"if": {"if": {"type": "string"}, "else": {"maximum": 3}}, "else": {"minimum": 10}});
    table(with_else, &[(r#""a""#, true), ("2", true), ("7", false), ("12", true), ("null", true)]);
}

#[test]
fn plain_name_identifiers_follow_the_draft() {
    let positive = |key: &str, value: &str| json!({"type": "integer", "minimum": 1, key: value});
    let cases = [
        ("http://json-schema.org/draft-04/schema#", positive("id", "#pos")),
        ("http://json-schema.org/draft-07/schema#", positive("$id", "#pos")),
        ("https://json-schema.org/draft/2020-12/schema", positive("$anchor", "pos")),
    ];
    for (dialect, named) in cases {
        let schema = json!({"$schema": dialect, "definitions": {"n": named}, "properties": {"n": {"$ref": "#pos"}}});
        table(schema, &[(r#"{"n": 1}"#, true), (r#"{"n": 0}"#, false), (r#"{"n": "1"}"#, false)]);
    }
    // Since draft 6, `id` is no keyword: it names nothing.
    let schema = json!({"$schema": "http://json-schema.org/draft-07/schema#", "definitions": {"n": positive("id", "#pos")},
                        "properties": {"n": {"$ref": "#pos"}}});
    let err = Constraint::json_schema(&schema, &JsonSchemaOptions::default()).unwrap_err().to_string();
    assert!(err.contains("unresolvable anchor"), "{err}");
}

#[test]
fn integers_with_a_zero_fraction_follow_the_draft() {
    let draft04 = "http://json-schema.org/draft-04/schema#";
    // Draft 4: an integer is written without a fraction; `multipleOf: 1` is about the value.
    table(json!({"$schema": draft04, "type": "integer", "maximum": 50}), &[("12", true), ("12.0", false), ("-3", true), ("51", false)]);
    table(json!({"$schema": draft04, "type": "integer"}), &[("0", true), ("0.0", false), ("7.00", false)]);
    table(json!({"$schema": draft04, "type": "number", "multipleOf": 1}), &[("12", true), ("12.0", true), ("12.5", false)]);
    // Since draft 6: 12.0 is the integer 12.
    for dialect in ["http://json-schema.org/draft-07/schema#", "https://json-schema.org/draft/2020-12/schema"] {
        table(json!({"$schema": dialect, "type": "integer", "maximum": 50}), &[("12", true), ("12.0", true), ("12.5", false)]);
    }
}
