//! Reasoning over kinds of value: which kinds no value of two maps can
//! share, and the exact negation of a flattened map as alternatives.

use super::super::format;
use super::keywords::{effective_types, is_annotation, json_eq, lists_type};
use super::{CONTAINS, FRACTION, NOT_MULTIPLE, NOT_PATTERNS, NOT_STRINGS, PATTERNS, SOME_KEY, TYPES};
use super::super::number::Dec;
use serde_json::{Map, Value};

/// Kinds of JSON value: the partition `not` and `oneOf` reason over
/// (integers are numbers here).
const KINDS: [&str; 6] = ["null", "boolean", "object", "array", "string", "number"];

fn kind_of(t: &str) -> &'static str {
    match t {
        "null" => "null",
        "boolean" => "boolean",
        "object" => "object",
        "array" => "array",
        "string" => "string",
        _ => "number",
    }
}

/// The kinds of value a flattened map can match.
pub(super) fn kinds(m: &Map<String, Value>) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for t in effective_types(m) {
        let k = kind_of(t);
        if !out.contains(&k) {
            out.push(k);
        }
    }
    out
}

/// The const/enum values of a flattened map.
pub(super) fn values_of(m: &Map<String, Value>) -> Option<&[Value]> {
    m.get("const").map(std::slice::from_ref).or_else(|| m.get("enum").and_then(Value::as_array).map(Vec::as_slice))
}

/// The kinds of value on which no value can match both maps.
pub(super) fn disjoint_kinds(a: &Map<String, Value>, b: &Map<String, Value>) -> Vec<&'static str> {
    let (ka, kb) = (kinds(a), kinds(b));
    let (va, vb) = (values_of(a), values_of(b));
    let mut out = Vec::new();
    for k in KINDS {
        if !ka.contains(&k) || !kb.contains(&k) {
            out.push(k);
            continue;
        }
        if let (Some(va), Some(vb)) = (&va, &vb)
            && !va.iter().any(|x| kind_of_value(x) == k && vb.iter().any(|y| json_eq(x, y)))
        {
            out.push(k);
            continue;
        }
        if k == "object" && objects_disjoint(a, b) {
            out.push(k);
        }
        let int_only = |m: &Map<String, Value>| {
            let t = effective_types(m);
            t.contains(&"integer") && !t.contains(&"number")
        };
        let frac = |m: &Map<String, Value>| m.get(FRACTION) == Some(&Value::Bool(true));
        if k == "number" && ((int_only(a) && frac(b)) || (frac(a) && int_only(b))) {
            out.push(k);
        }
    }
    out
}

fn kind_of_value(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Object(_) => "object",
        Value::Array(_) => "array",
        Value::String(_) => "string",
        Value::Number(_) => "number",
    }
}

/// Whether no value at all can match both maps.
pub(super) fn pair_disjoint(a: &Map<String, Value>, b: &Map<String, Value>) -> bool {
    disjoint_kinds(a, b).len() == KINDS.len()
}

fn required_of(m: &Map<String, Value>) -> Vec<String> {
    m.get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(|x| x.as_str().map(String::from)).collect())
        .unwrap_or_default()
}

/// Whether no object can match both maps: a property one requires and the
/// other forbids, or one both require with disjoint const/enum values.
fn objects_disjoint(a: &Map<String, Value>, b: &Map<String, Value>) -> bool {
    let (ra, rb) = (required_of(a), required_of(b));
    let forbids = |m: &Map<String, Value>, p: &str| -> bool {
        match m.get("properties").and_then(|x| x.get(p)) {
            Some(v) => *v == Value::Bool(false),
            None => m.get("additionalProperties") == Some(&Value::Bool(false)) && !m.contains_key("patternProperties"),
        }
    };
    if ra.iter().any(|p| forbids(b, p)) || rb.iter().any(|p| forbids(a, p)) {
        return true;
    }
    for p in ra.iter().filter(|p| rb.contains(p)) {
        let pa = a.get("properties").and_then(|x| x.get(p)).and_then(Value::as_object);
        let pb = b.get("properties").and_then(|x| x.get(p)).and_then(Value::as_object);
        if let (Some(pa), Some(pb)) = (pa, pb)
            && let (Some(va), Some(vb)) = (values_of(pa), values_of(pb))
            && !va.iter().any(|x| vb.iter().any(|y| json_eq(x, y)))
        {
            return true;
        }
    }
    false
}

/// The negation of a flattened map, as alternatives whose union is exactly
/// the values of the kinds in `want` that fail it; `Err` says which keyword
/// has no exact negation here.
pub(super) fn negate(nm: &Map<String, Value>, want: &[&'static str], int_only: bool, legacy: bool) -> Result<Vec<Value>, String> {
    use serde_json::json;
    let nm_types: Vec<&'static str> = match nm.get("type") {
        Some(t) => TYPES.iter().copied().filter(|x| lists_type(t, x)).collect(),
        None => TYPES.to_vec(),
    };
    let has = |k: &str| nm_types.iter().any(|t| kind_of(t) == k) && want.contains(&kind_of(k));
    let mut out: Vec<Value> = Vec::new();
    // Kinds the type keyword excludes.
    let mut other: Vec<Value> = Vec::new();
    for k in want {
        let ts: Vec<&&str> = nm_types.iter().filter(|t| kind_of(t) == *k).collect();
        if ts.is_empty() {
            other.push(Value::String(k.to_string()));
        } else if *k == "number" && !int_only && !ts.iter().any(|t| **t == "number") {
            out.push(json!({ "type": "number", FRACTION: true }));
        }
    }
    if !other.is_empty() {
        out.push(json!({ "type": other }));
    }
    let num = |v: &Value| v.as_number().and_then(|n| Dec::parse(&n.to_string()));
    let count = |v: &Value| num(v).filter(|d| !d.neg && d.is_integer()).and_then(|d| d.int.parse::<u64>().ok());
    for (k, v) in nm {
        let k = k.as_str();
        if is_annotation(k) {
            continue;
        }
        let scope = match k {
            "required" | "properties" | "additionalProperties" | "patternProperties" | "propertyNames" | SOME_KEY
            | "minProperties" | "maxProperties" => "object",
            "items" | "prefixItems" | "additionalItems" | "contains" | CONTAINS | "minContains" | "maxContains" | "minItems"
            | "maxItems" | "uniqueItems" => "array",
            "minLength" | "maxLength" | "pattern" | "format" | NOT_STRINGS | NOT_PATTERNS | PATTERNS => "string",
            "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" | "multipleOf" | FRACTION | NOT_MULTIPLE => "number",
            "type" => continue,
            _ => "",
        };
        if !scope.is_empty() && !has(scope) {
            continue;
        }
        let bad = |why: &str| Err(format!("{why} (in {k})"));
        match k {
            "enum" | "const" => {
                let vals = if k == "const" { vec![v.clone()] } else { v.as_array().cloned().ok_or("enum must be an array")? };
                for kind in KINDS {
                    if !has(kind) {
                        continue;
                    }
                    let mine: Vec<&Value> = vals.iter().filter(|x| kind_of_value(x) == kind).collect();
                    if mine.is_empty() {
                        out.push(json!({ "type": kind }));
                        continue;
                    }
                    match kind {
                        "null" => {}
                        "boolean" => {
                            for b in [true, false] {
                                if !mine.iter().any(|x| **x == Value::Bool(b)) {
                                    out.push(json!({ "const": b }));
                                }
                            }
                        }
                        "string" => out.push(json!({ "type": "string", NOT_STRINGS: mine })),
                        "number" => {
                            let mut ds: Vec<(Dec, Value)> = mine.iter().filter_map(|x| num(x).map(|d| (d, (*x).clone()))).collect();
                            ds.sort_by(|a, b| a.0.cmp_value(&b.0));
                            ds.dedup_by(|a, b| a.0 == b.0);
                            if ds.len() > 16 {
                                return bad("more than 16 excluded numbers");
                            }
                            let mut lo: Option<Value> = None;
                            for (_, x) in ds {
                                let mut alt = json!({ "type": "number", "exclusiveMaximum": x });
                                if let Some(l) = lo {
                                    alt["exclusiveMinimum"] = l;
                                }
                                out.push(alt);
                                lo = Some(x);
                            }
                            out.push(json!({ "type": "number", "exclusiveMinimum": lo }));
                        }
                        _ => return bad("objects or arrays as excluded values"),
                    }
                }
            }
            "required" => {
                for r in v.as_array().ok_or("required must be an array")? {
                    let r = r.as_str().ok_or("required must hold strings")?;
                    out.push(json!({ "type": "object", "properties": { r: false } }));
                }
            }
            "properties" => {
                for (p, ps) in v.as_object().ok_or("properties must be an object")? {
                    match ps {
                        Value::Bool(true) => {}
                        Value::Bool(false) => out.push(json!({ "type": "object", "required": [p] })),
                        _ => out.push(json!({ "type": "object", "required": [p], "properties": { p: { "not": ps } } })),
                    }
                }
            }
            "additionalProperties" if *v == Value::Bool(false) => {
                // Some key outside the declared names and patterns.
                let keys = |k: &str| nm.get(k).and_then(Value::as_object).map_or(Vec::new(), |o| o.keys().cloned().collect::<Vec<_>>());
                out.push(json!({ "type": "object", SOME_KEY: [{ "names": keys("properties"), "patterns": keys("patternProperties") }] }));
            }
            SOME_KEY => {
                // Every key among the names and patterns of a requirement.
                for req in v.as_array().into_iter().flatten() {
                    let trues = |k: &str| -> Map<String, Value> {
                        req.get(k).and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).map(|n| (n.to_string(), Value::Bool(true))).collect()
                    };
                    out.push(json!({ "type": "object", "properties": trues("names"), "patternProperties": trues("patterns"), "additionalProperties": false }));
                }
            }
            "additionalProperties" | "propertyNames" | "additionalItems" if *v != Value::Bool(true) => {
                return bad("keyword with no exact negation");
            }
            "patternProperties" if v.as_object().is_some_and(|o| o.values().any(|x| *x != Value::Bool(true) && *x != json!({}))) => {
                return bad("keyword with no exact negation");
            }
            "minProperties" | "minItems" | "minLength" => {
                let n = count(v).ok_or("must be a non-negative integer")?;
                if n > 0 {
                    let (t, kw) = match k {
                        "minProperties" => ("object", "maxProperties"),
                        "minItems" => ("array", "maxItems"),
                        _ => ("string", "maxLength"),
                    };
                    out.push(json!({ "type": t, kw: n - 1 }));
                }
            }
            "maxProperties" | "maxItems" | "maxLength" => {
                let n = count(v).ok_or("must be a non-negative integer")?;
                let (t, kw) = match k {
                    "maxProperties" => ("object", "minProperties"),
                    "maxItems" => ("array", "minItems"),
                    _ => ("string", "minLength"),
                };
                out.push(json!({ "type": t, kw: n + 1 }));
            }
            "items" if v.is_array() => {
                for (i, s) in v.as_array().into_iter().flatten().enumerate() {
                    if *s == Value::Bool(true) {
                        continue;
                    }
                    let mut pre = vec![Value::Bool(true); i];
                    pre.push(json!({ "not": s }));
                    let key = if legacy { "items" } else { "prefixItems" };
                    out.push(json!({ "type": "array", "minItems": i + 1, key: pre }));
                }
                if nm.get("additionalItems").is_some_and(|x| *x != Value::Bool(true)) {
                    return bad("additionalItems with no exact negation");
                }
            }
            "prefixItems" => {
                for (i, s) in v.as_array().ok_or("prefixItems must be an array")?.iter().enumerate() {
                    if *s == Value::Bool(true) {
                        continue;
                    }
                    let mut pre = vec![Value::Bool(true); i];
                    pre.push(json!({ "not": s }));
                    out.push(json!({ "type": "array", "minItems": i + 1, "prefixItems": pre }));
                }
            }
            "items" => {
                if *v == Value::Bool(true) {
                    continue;
                }
                if nm.contains_key("prefixItems") {
                    return bad("items after prefixItems");
                }
                out.push(json!({ "type": "array", "contains": { "not": v } }));
            }
            "contains" => {
                let min = nm.get("minContains").map_or(Some(1), count);
                if nm.contains_key("maxContains") || min.is_none_or(|n| n > 1) {
                    return bad("minContains or maxContains");
                }
                if min == Some(1) {
                    out.push(json!({ "type": "array", "items": { "not": v } }));
                }
            }
            CONTAINS => {
                for c in v.as_array().into_iter().flatten() {
                    out.push(json!({ "type": "array", "items": { "not": c } }));
                }
            }
            "minContains" | "maxContains" => {}
            "uniqueItems" if *v == Value::Bool(true) => return bad("arrays with duplicates"),
            "pattern" => out.push(json!({ "type": "string", NOT_PATTERNS: [v] })),
            "format" => {
                let f = v.as_str().unwrap_or("");
                if let Some(p) = format::pattern(f) {
                    out.push(json!({ "type": "string", NOT_PATTERNS: [p] }));
                } else if format::UNSUPPORTED.contains(&f) {
                    return bad("a format that is not a regular language here");
                }
            }
            FRACTION if *v == Value::Bool(true) => out.push(json!({ "type": "integer" })),
            NOT_STRINGS => {
                let strings = v.as_array().cloned().unwrap_or_default();
                if !strings.is_empty() {
                    out.push(json!({ "enum": strings }));
                }
            }
            NOT_PATTERNS => {
                for p in v.as_array().into_iter().flatten() {
                    out.push(json!({ "type": "string", "pattern": p }));
                }
            }
            PATTERNS => {
                for p in v.as_array().into_iter().flatten() {
                    out.push(json!({ "type": "string", NOT_PATTERNS: [p] }));
                }
            }
            "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" => {
                if v.is_boolean() {
                    continue;
                }
                num(v).ok_or("bound must be a number")?;
                let excl = |f: &str| nm.get(f).and_then(Value::as_bool).unwrap_or(false);
                let (kw, inclusive) = match k {
                    "minimum" => ("maximum", excl("exclusiveMinimum")),
                    "maximum" => ("minimum", excl("exclusiveMaximum")),
                    "exclusiveMinimum" => ("maximum", true),
                    _ => ("minimum", true),
                };
                let kw = if inclusive { kw.to_string() } else { format!("exclusive{}{}", kw[..1].to_uppercase(), &kw[1..]) };
                out.push(json!({ "type": "number", kw: v }));
            }
            "not" => out.push(v.clone()),
            "anyOf" => {
                let branches = v.as_array().ok_or("anyOf must be an array")?;
                let all: Vec<Value> = branches.iter().map(|b| json!({ "not": b })).collect();
                out.push(json!({ "allOf": all }));
            }
            "if" | "then" | "else" => {}
            "multipleOf" if count(v).is_some_and(|k| k > 1) => {
                // Numbers that are not integers, and integers that are not multiples.
                out.push(json!({ "type": "number", FRACTION: true }));
                out.push(json!({ "type": "integer", NOT_MULTIPLE: [v] }));
            }
            "multipleOf" if count(v) == Some(1) => out.push(json!({ "type": "number", FRACTION: true })),
            NOT_MULTIPLE => {
                for k in v.as_array().into_iter().flatten() {
                    out.push(json!({ "type": "integer", "multipleOf": k }));
                }
            }
            "oneOf" => {
                // Not exactly one branch: none, or two at once.
                let branches = v.as_array().ok_or("oneOf must be an array")?;
                let none: Vec<Value> = branches.iter().map(|b| json!({ "not": b })).collect();
                out.push(json!({ "allOf": none }));
                for (i, a) in branches.iter().enumerate() {
                    for b in &branches[i + 1..] {
                        out.push(json!({ "allOf": [a, b] }));
                    }
                }
            }
            "multipleOf" | "unevaluatedProperties" | "unevaluatedItems" | "dependentRequired"
            | "dependentSchemas" | "dependencies" | "$dynamicRef" | "$recursiveRef" => {
                return bad("keyword with no exact negation");
            }
            "$ref" => return bad("reference"),
            _ => {}
        }
    }
    Ok(out)
}
