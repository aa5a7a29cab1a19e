//! Flattening: `allOf`, `$ref` beside other keywords, `if`/`then`/`else`
//! and dependencies merged into one keyword map, and the merge of two maps.

use super::keywords::{gcd, is_annotation, is_inert, json_eq, keyword, type_list};
use super::{child, err, invalid, Compiler, Res, CONTAINS, NOT_MULTIPLE, NOT_PATTERNS, NOT_STRINGS, PATTERNS, SOME_KEY};
use super::super::SchemaErrorKind;
use super::super::number::Dec;
use serde_json::{Map, Value};
use std::borrow::Cow;

impl<'a> Compiler<'a> {
    /// Inline `$ref` (with siblings) and `allOf` into one keyword map.
    pub(super) fn flatten(&mut self, m: &Map<String, Value>, ptr: &str) -> Res<Map<String, Value>> {
        self.enter(ptr)?;
        if self.legacy
            && let Some(r) = m.get("$ref") {
                // Before 2019-09 a reference replaces its siblings.
                let r = r.as_str().ok_or_else(|| invalid("$ref", ptr, "must be a string"))?;
                let out = match self.resolve(r, ptr)? {
                    Value::Object(t) => self.flatten(t, r.trim_start_matches('#'))?,
                    Value::Bool(true) => Map::new(),
                    _ => {
                        let mut f = Map::new();
                        f.insert("type".into(), Value::Array(Vec::new()));
                        f
                    }
                };
                self.depth -= 1;
                return Ok(out);
            }
        let mut out = Map::new();
        // Schemas to merge in: borrowed where they are in the schema already.
        let mut parts: Vec<(Cow<'_, Value>, String)> = Vec::new();
        for (k, v) in m {
            match k.as_str() {
                "allOf" => {
                    let items = v.as_array().ok_or_else(|| invalid("allOf", ptr, "must be an array"))?;
                    for (i, it) in items.iter().enumerate() {
                        parts.push((Cow::Borrowed(it), child(&child(ptr, "allOf"), &i.to_string())));
                    }
                }
                "if" if m.contains_key("then") || m.contains_key("else") => {
                    // (if and then) or (not if and else); with one branch
                    // an implication, which names the condition once: (not
                    // if) or then, if or else. (A condition named twice
                    // doubles the work of each `if` nested in it.) The
                    // negation is exact or refused like any `not`.
                    let split = match (m.get("then"), m.get("else")) {
                        (Some(then), None) => serde_json::json!({"anyOf": [negation(v), then]}),
                        (None, Some(other)) => serde_json::json!({"anyOf": [v, other]}),
                        (then, other) => {
                            let (then, other) = (then.unwrap_or(&Value::Bool(true)), other.unwrap_or(&Value::Bool(true)));
                            serde_json::json!({"anyOf": [{"allOf": [v, then]}, {"allOf": [negation(v), other]}]})
                        }
                    };
                    parts.push((Cow::Owned(split), child(ptr, "if")));
                }
                "if" | "then" | "else" => {}
                "dependencies" | "dependentRequired" | "dependentSchemas" => {
                    // "a present => ..." is "a absent, or a present and ...".
                    let deps = v.as_object().ok_or_else(|| invalid(k, ptr, "must be an object"))?;
                    for (name, dep) in deps {
                        let when_present = match dep {
                            Value::Array(names) => {
                                let mut all = vec![Value::String(name.clone())];
                                all.extend(names.iter().cloned());
                                serde_json::json!({ "required": all })
                            }
                            schema => serde_json::json!({"required": [name], "allOf": [schema]}),
                        };
                        let absent = serde_json::json!({"properties": {name: false}});
                        parts.push((Cow::Owned(serde_json::json!({"anyOf": [absent, when_present]})), child(&child(ptr, k), name)));
                    }
                }
                "$ref" if !self.legacy => {
                    let r = v.as_str().ok_or_else(|| invalid("$ref", ptr, "must be a string"))?;
                    parts.push((Cow::Borrowed(self.resolve(r, ptr)?), r.trim_start_matches('#').to_string()));
                }
                // Annotations and unknown keywords constrain nothing (and
                // `definitions` may be most of the schema: every branch
                // would copy it).
                k if is_inert(k) => {}
                _ => {
                    out.insert(k.clone(), lean_keyword(k, v));
                }
            }
        }
        for (part, pptr) in parts {
            let pm = match &*part {
                Value::Bool(true) => continue,
                Value::Bool(false) => {
                    let mut f = Map::new();
                    f.insert("type".into(), Value::Array(Vec::new()));
                    f
                }
                Value::Object(pm) => self.flatten(pm, &pptr)?,
                _ => return Err(invalid("allOf", &pptr, "a schema must be an object or a boolean")),
            };
            out = self.merge(out, pm, ptr)?;
        }
        self.depth -= 1;
        Ok(out)
    }

    /// A branch of a product of branches: `x` and `y` merged where neither
    /// needs flattening (so that equal pairs show as equal), else their
    /// `allOf`; false where either is.
    fn conjoin(&mut self, x: &Value, y: &Value, ptr: &str) -> Res<Value> {
        Ok(match (x, y) {
            (Value::Bool(false), _) | (_, Value::Bool(false)) => Value::Bool(false),
            (Value::Bool(true), other) | (other, Value::Bool(true)) => other.clone(),
            (Value::Object(mx), Value::Object(my)) if is_flat(mx) && is_flat(my) => Value::Object(self.merge(mx.clone(), my.clone(), ptr)?),
            _ => keyword("allOf", Value::Array(vec![x.clone(), y.clone()])),
        })
    }

    /// Both maps' constraints in one map.
    pub(super) fn merge(&mut self, mut a: Map<String, Value>, mut b: Map<String, Value>, ptr: &str) -> Res<Map<String, Value>> {
        let all_of = |x: &Value, y: &Value| keyword("allOf", Value::Array(vec![x.clone(), y.clone()]));
        // A const is an enum of one value, so that the values intersect
        // whichever of the two keywords each side uses.
        let listed = |m: &Map<String, Value>| m.contains_key("const") || m.contains_key("enum");
        if listed(&a) && listed(&b) {
            for m in [&mut a, &mut b] {
                if let Some(c) = m.remove("const") {
                    let values = match m.remove("enum") {
                        Some(Value::Array(vs)) => vs.into_iter().filter(|x| json_eq(x, &c)).collect(),
                        _ => vec![c],
                    };
                    m.insert("enum".into(), Value::Array(values));
                }
            }
        }
        // additionalProperties on one side constrains the other side's extra properties.
        let props_a: Vec<String> = obj_keys(a.get("properties"));
        let props_b: Vec<String> = obj_keys(b.get("properties"));
        let mut cross: Vec<(String, Value)> = Vec::new();
        let mut cross_patterns: Vec<(String, Value)> = Vec::new();
        for (other_props, this_props, this, other) in [(&props_b, &props_a, &a, &b), (&props_a, &props_b, &b, &a)] {
            let Some(ap) = this.get("additionalProperties").filter(|ap| **ap != Value::Bool(true)) else { continue };
            // A key only the other side's patterns match would take them
            // alone once merged, without this side's additionalProperties:
            // those patterns take it too. Exact where this side has no
            // patterns (which would take such a key instead) and no declared
            // name matches them (which this side's additionalProperties
            // must not reach).
            let this_patterns = obj_keys(this.get("patternProperties"));
            for p in obj_keys(other.get("patternProperties")).into_iter().filter(|p| !this_patterns.contains(p)) {
                let matches_a_name = match self.pattern(&p) {
                    Ok(re) => Some(props_a.iter().chain(&props_b).any(|n| re.matches(n))),
                    Err(_) => None,
                };
                if !this_patterns.is_empty() || matches_a_name != Some(false) {
                    return Err(err(
                        "additionalProperties",
                        ptr,
                        SchemaErrorKind::Unsupported("allOf with additionalProperties and another schema's patternProperties".into()),
                    ));
                }
                cross_patterns.push((p, ap.clone()));
            }
            // A name the other side declares takes this side's
            // additionalProperties unless this side declares it too or one
            // of its patterns matches it (the patterns apply once merged).
            let patterns = self.property_patterns(this, ptr)?;
            for p in other_props {
                if !this_props.contains(p) && !patterns.iter().any(|(_, re, _)| re.matches(p)) {
                    cross.push((p.clone(), ap.clone()));
                }
            }
        }
        let prefix = |m: &Map<String, Value>| m.contains_key("prefixItems") || m.get("items").is_some_and(Value::is_array);
        let rest = |m: &Map<String, Value>| {
            m.contains_key("additionalItems") || m.get("items").is_some_and(|i| !i.is_array())
        };
        if (prefix(&a) && rest(&b)) || (prefix(&b) && rest(&a)) {
            return Err(err(
                "items",
                ptr,
                SchemaErrorKind::Unsupported("allOf mixing prefixItems and items from different schemas".into()),
            ));
        }
        // Whether each side counts its `contains` matches.
        let counts = |m: &Map<String, Value>| m.contains_key("minContains") || m.contains_key("maxContains");
        let counted = (counts(&a), counts(&b));
        for (k, vb) in b {
            // Annotations and unknown keywords (`x-...`) constrain nothing
            // (`then` and `else` neither: `if` took them when flattened).
            if is_annotation(&k) || is_inert(&k) {
                if !a.contains_key(&k) {
                    a.insert(k, vb);
                }
                continue;
            }
            let Some(slot) = a.get_mut(&k) else {
                a.insert(k, vb);
                continue;
            };
            if *slot == vb {
                continue;
            }
            // Taken out (not copied); every arm below puts a value back or removes the key.
            let va = std::mem::take(slot);
            let merged = match k.as_str() {
                NOT_STRINGS | NOT_PATTERNS | PATTERNS | CONTAINS | NOT_MULTIPLE | SOME_KEY => {
                    let mut xa = va.as_array().cloned().unwrap_or_default();
                    for x in vb.as_array().cloned().unwrap_or_default() {
                        if !xa.contains(&x) {
                            xa.push(x);
                        }
                    }
                    Value::Array(xa)
                }
                "contains" if !counted.0 || !counted.1 => {
                    // Both apply, each to some item: the one without
                    // minContains/maxContains joins the further ones (and the
                    // other's counts stay with it under `contains`).
                    let (kept, further) = if counted.1 { (vb, va) } else { (va, vb) };
                    a.insert(k, kept);
                    add_further(&mut a, CONTAINS, further);
                    continue;
                }
                "pattern" => {
                    // Both patterns apply: the second joins the further ones.
                    a.insert(k, va);
                    add_further(&mut a, PATTERNS, vb);
                    continue;
                }
                "type" => {
                    let ta = type_list(&va);
                    let tb = type_list(&vb);
                    let mut t: Vec<Value> = Vec::new();
                    for x in &ta {
                        for y in &tb {
                            let r = match (x.as_str().unwrap_or(""), y.as_str().unwrap_or("")) {
                                (p, q) if p == q => Some(p),
                                ("number", "integer") | ("integer", "number") => Some("integer"),
                                _ => None,
                            };
                            if let Some(r) = r
                                && !t.iter().any(|v| v == r) {
                                    t.push(Value::String(r.to_string()));
                                }
                        }
                    }
                    Value::Array(t)
                }
                "properties" | "patternProperties" => {
                    let object = |v: Value| if let Value::Object(o) = v { o } else { Map::new() };
                    let (mut pa, pb) = (object(va), object(vb));
                    for (pk, pv) in pb {
                        match pa.get_mut(&pk) {
                            Some(old) if *old == pv => {}
                            Some(old) => *old = keyword("allOf", Value::Array(vec![std::mem::take(old), pv])),
                            None => {
                                pa.insert(pk, pv);
                            }
                        }
                    }
                    Value::Object(pa)
                }
                "required" => {
                    let mut ra = va.as_array().cloned().unwrap_or_default();
                    for x in vb.as_array().cloned().unwrap_or_default() {
                        if !ra.contains(&x) {
                            ra.push(x);
                        }
                    }
                    Value::Array(ra)
                }
                "enum" | "const" => {
                    let ea = if k == "enum" { va.as_array().cloned().unwrap_or_default() } else { vec![va.clone()] };
                    let eb = if k == "enum" { vb.as_array().cloned().unwrap_or_default() } else { vec![vb.clone()] };
                    let both: Vec<Value> = ea.into_iter().filter(|x| eb.iter().any(|y| json_eq(x, y))).collect();
                    a.remove(&k);
                    a.insert("enum".into(), Value::Array(both));
                    continue;
                }
                "minLength" | "minItems" | "minProperties" | "minContains" => num_pick(&va, &vb, true),
                "maxLength" | "maxItems" | "maxProperties" | "maxContains" => num_pick(&va, &vb, false),
                "minimum" | "exclusiveMinimum" if va.is_number() && vb.is_number() => num_pick(&va, &vb, true),
                "maximum" | "exclusiveMaximum" if va.is_number() && vb.is_number() => num_pick(&va, &vb, false),
                "items" | "additionalProperties" | "propertyNames" | "additionalItems"
                    if !va.is_array() && !vb.is_array() =>
                {
                    all_of(&va, &vb)
                }
                "multipleOf" if va.is_u64() && vb.is_u64() => {
                    // Multiples of both integers: of their least common multiple.
                    let (x, y) = (va.as_u64().unwrap_or(1), vb.as_u64().unwrap_or(1));
                    match (x / gcd(x, y.max(1))).checked_mul(y) {
                        Some(l) => Value::from(l),
                        None => return Err(err(&k, ptr, SchemaErrorKind::Unsupported("allOf with two multipleOf whose common multiple is too large".into()))),
                    }
                }
                "uniqueItems" => Value::Bool(va.as_bool().unwrap_or(false) || vb.as_bool().unwrap_or(false)),
                "not" => keyword("anyOf", Value::Array(vec![va, vb])),
                // The pairs of branches: some pair matches where some branch of each side does,
                // and exactly one pair where exactly one branch of each side does (a value
                // matching `m` branches of one side and `n` of the other matches `m * n` pairs).
                "anyOf" | "oneOf" => {
                    let xa = va.as_array().cloned().unwrap_or_default();
                    let xb = vb.as_array().cloned().unwrap_or_default();
                    if xa.len() * xb.len() > 64 {
                        return Err(err(&k, ptr, SchemaErrorKind::Unsupported(format!("two {k} in one allOf"))));
                    }
                    let mut out = Vec::new();
                    for x in &xa {
                        for y in &xb {
                            let pair = self.conjoin(x, y, ptr)?;
                            // The same pair twice adds nothing to anyOf (but
                            // would match twice under oneOf).
                            if pair != Value::Bool(false) && (k == "oneOf" || !out.contains(&pair)) {
                                out.push(pair);
                            }
                        }
                    }
                    Value::Array(out)
                }
                _ => {
                    return Err(err(&k, ptr, SchemaErrorKind::Unsupported(format!("allOf with two different {k}"))));
                }
            };
            a.insert(k, merged);
        }
        for (key, cross) in [("properties", cross), ("patternProperties", cross_patterns)] {
            if cross.is_empty() {
                continue;
            }
            let mut props = a.get(key).and_then(Value::as_object).cloned().unwrap_or_default();
            for (p, ap) in cross {
                let nv = match props.get(&p) {
                    Some(old) => all_of(old, &ap),
                    None => ap,
                };
                props.insert(p, nv);
            }
            a.insert(key.into(), Value::Object(props));
        }
        Ok(a)
    }
}

/// `not s`, without a double negation (`not not x` is `x`), so that
/// conditions written as negations merge with the schemas they name.
fn negation(s: &Value) -> Value {
    match s {
        Value::Object(m) if m.keys().all(|k| k == "not" || is_annotation(k)) && m.contains_key("not") => m["not"].clone(),
        _ => keyword("not", s.clone()),
    }
}

/// Whether `m` has no keyword that [`Compiler::flatten`] rewrites, so that
/// merging it is all that flattening it would do.
fn is_flat(m: &Map<String, Value>) -> bool {
    !m.keys().any(|k| {
        matches!(k.as_str(), "$ref" | "allOf" | "if" | "then" | "else" | "dependencies" | "dependentRequired" | "dependentSchemas")
    })
}

/// Adds `value` to the internal list keyword `key` of `m` (the further
/// patterns or contains schemas a merge keeps), once.
fn add_further(m: &mut Map<String, Value>, key: &str, value: Value) {
    let mut more = m.get(key).and_then(Value::as_array).cloned().unwrap_or_default();
    if !more.contains(&value) {
        more.push(value);
    }
    m.insert(key.into(), Value::Array(more));
}

/// A copy of schema `s` without its inert keywords ([`is_inert`]) at any
/// depth: `allOf` merging and branches copy subschemas many times, and
/// references are resolved in the original schema, never in a copy.
fn lean(s: &Value) -> Value {
    match s {
        Value::Object(m) => Value::Object(m.iter().filter(|(k, _)| !is_inert(k)).map(|(k, v)| (k.clone(), lean_keyword(k, v))).collect()),
        other => other.clone(),
    }
}

/// A copy of keyword `k`'s value `v`, with the subschemas in it [`lean`].
fn lean_keyword(k: &str, v: &Value) -> Value {
    match (k, v) {
        ("properties" | "patternProperties" | "dependentSchemas" | "dependencies", Value::Object(m)) => {
            Value::Object(m.iter().map(|(name, s)| (name.clone(), lean(s))).collect())
        }
        ("allOf" | "anyOf" | "oneOf" | "prefixItems" | "items", Value::Array(a)) => Value::Array(a.iter().map(lean).collect()),
        (
            "items" | "additionalItems" | "additionalProperties" | "not" | "if" | "then" | "else" | "contains" | "propertyNames"
            | "unevaluatedItems" | "unevaluatedProperties",
            s,
        ) => lean(s),
        _ => v.clone(),
    }
}

fn num_pick(a: &Value, b: &Value, larger: bool) -> Value {
    let (Some(x), Some(y)) = (
        a.as_number().and_then(|n| Dec::parse(&n.to_string())),
        b.as_number().and_then(|n| Dec::parse(&n.to_string())),
    ) else {
        return a.clone();
    };
    let a_wins = if larger { x.cmp_value(&y).is_ge() } else { x.cmp_value(&y).is_le() };
    if a_wins { a.clone() } else { b.clone() }
}

fn obj_keys(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_object).map(|o| o.keys().cloned().collect()).unwrap_or_default()
}
