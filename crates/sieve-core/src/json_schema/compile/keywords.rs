//! Keyword tables and JSON value helpers: annotations, known and
//! constraining keywords, types, counts and JSON equality.

use super::{invalid, Res, CONTAINS, FRACTION, NOT_MULTIPLE, NOT_PATTERNS, NOT_STRINGS, PATTERNS, SOME_KEY, TYPES};
use super::super::number::Dec;
use serde_json::{Map, Value};

/// The types `type` names (all of them when it is absent).
pub(super) fn type_names(m: &Map<String, Value>, ptr: &str) -> Res<Vec<String>> {
    Ok(match m.get("type") {
        None => TYPES.iter().map(|s| s.to_string()).collect(),
        Some(t) => {
            let l = type_list(t);
            if l.is_empty() && !t.is_array() {
                return Err(invalid("type", ptr, "must be a string or an array of strings"));
            }
            l.iter().filter_map(|v| v.as_str().map(String::from)).collect()
        }
    })
}

/// A non-negative integer keyword (`2.0` counts as 2).
pub(super) fn count(m: &Map<String, Value>, k: &str, ptr: &str) -> Res<Option<u64>> {
    match m.get(k) {
        None => Ok(None),
        Some(v) => match v.as_number().and_then(|n| Dec::parse(&n.to_string())) {
            Some(d) if !d.neg && d.is_integer() => Ok(Some(d.int.parse().unwrap_or(u64::MAX))),
            _ => Err(invalid(k, ptr, "must be a non-negative integer")),
        },
    }
}

/// The schema `{k: v}`.
pub(super) fn keyword(k: &str, v: Value) -> Value {
    let mut m = Map::new();
    m.insert(k.to_string(), v);
    Value::Object(m)
}

pub(super) fn is_annotation(k: &str) -> bool {
    matches!(
        k,
        "title"
            | "description"
            | "default"
            | "examples"
            | "$comment"
            | "$schema"
            | "$id"
            | "id"
            | "deprecated"
            | "readOnly"
            | "writeOnly"
            | "contentMediaType"
            | "contentEncoding"
            | "contentSchema"
            | "$anchor"
            | "$dynamicAnchor"
            | "$vocabulary"
            | "definitions"
            | "$defs"
            | "then"
            | "else"
    )
}

/// Keywords that constrain nothing: annotations (but `then` and `else`,
/// which `if` reads) and unknown keywords (but `discriminator`, which
/// `allOf` merging compares).
pub(super) fn is_inert(k: &str) -> bool {
    !matches!(k, "then" | "else" | "discriminator") && (is_annotation(k) || !is_known_keyword(k))
}

/// Keywords this module reads (anything else is an annotation or unknown).
pub(super) fn is_known_keyword(k: &str) -> bool {
    is_constraint_keyword(k)
        || matches!(
            k,
            "type" | "enum" | "const" | "properties" | "required" | "additionalProperties" | "minProperties"
                | "maxProperties" | "minLength" | "maxLength" | "pattern" | "format" | "minimum" | "maximum"
                | "exclusiveMinimum" | "exclusiveMaximum" | "multipleOf" | "minItems" | "maxItems" | "uniqueItems"
                | "allOf" | "anyOf" | "oneOf" | "not" | "$ref" | NOT_STRINGS | NOT_PATTERNS | PATTERNS | FRACTION
                | NOT_MULTIPLE
        )
}

pub(super) fn is_constraint_keyword(k: &str) -> bool {
    matches!(
        k,
        "prefixItems"
            | "items"
            | "additionalItems"
            | "contains"
            | CONTAINS
            | SOME_KEY
            | "minContains"
            | "maxContains"
            | "patternProperties"
            | "propertyNames"
            | "if"
            | "dependentRequired"
            | "dependentSchemas"
            | "dependencies"
            | "unevaluatedProperties"
            | "unevaluatedItems"
            | "$dynamicRef"
            | "$recursiveRef"
    )
}

/// The JSON types a flattened map can match (`integer` stands apart from
/// `number` here only when `number` is absent).
pub(super) fn effective_types(m: &Map<String, Value>) -> Vec<&'static str> {
    let mut types: Vec<&'static str> = match m.get("type") {
        Some(t) => TYPES.iter().copied().filter(|x| lists_type(t, x)).collect(),
        None => TYPES.to_vec(),
    };
    let values = m.get("const").map(std::slice::from_ref).or_else(|| m.get("enum").and_then(Value::as_array).map(Vec::as_slice));
    if let Some(vals) = values {
        types.retain(|t| vals.iter().any(|v| has_type(v, t)));
    }
    types
}

/// Whether the value of a `type` keyword names `name`.
pub(super) fn lists_type(t: &Value, name: &str) -> bool {
    match t {
        Value::String(s) => s == name,
        Value::Array(a) => a.iter().any(|x| x.as_str() == Some(name)),
        _ => false,
    }
}

pub(super) fn type_list(t: &Value) -> Vec<Value> {
    match t {
        Value::String(_) => vec![t.clone()],
        Value::Array(a) => a.iter().filter(|x| x.is_string()).cloned().collect(),
        _ => Vec::new(),
    }
}

pub(super) fn has_type(v: &Value, t: &str) -> bool {
    match t {
        "null" => v.is_null(),
        "boolean" => v.is_boolean(),
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "number" => v.is_number(),
        "integer" => v.as_number().and_then(|n| Dec::parse(&n.to_string())).is_some_and(|d| d.is_integer()),
        _ => false,
    }
}

/// JSON Schema equality: numbers by value, objects regardless of key order.
pub(super) fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (Dec::parse(&x.to_string()), Dec::parse(&y.to_string())) {
            (Some(p), Some(q)) => p == q,
            _ => x == y,
        },
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_eq(p, q)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}

/// Compact JSON text (non-ASCII kept).
pub(super) fn json_text(v: &Value) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

/// Greatest common divisor (1 for two zeros).
pub(super) fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a.max(1) } else { gcd(b, a % b) }
}
