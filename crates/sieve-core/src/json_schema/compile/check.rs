//! Deciding whether a value satisfies a schema, for the keywords cheap to
//! check, without translating it (enum values, declared names, literals).

use super::keywords::{has_type, is_annotation, is_constraint_keyword, json_eq, type_list};
use super::{Compiler, CONTAINS, FRACTION, NOT_MULTIPLE, NOT_PATTERNS, NOT_STRINGS, PATTERNS, SOME_KEY};
use super::super::format;
use super::super::number::Dec;
use serde_json::{Map, Value};

/// The keywords an array's items are checked against together ([`Compiler::check_items`]).
const ITEMS: [&str; 3] = ["items", "prefixItems", "additionalItems"];

impl<'a> Compiler<'a> {
    /// Decide whether `v` satisfies `s` for the keywords that are cheap to
    /// check; `None` when some keyword cannot be decided here.
    pub(super) fn check(&self, s: &Value, v: &Value, depth: usize) -> Option<bool> {
        match s {
            Value::Bool(b) => Some(*b),
            Value::Object(m) => self.check_map(m, v, depth),
            _ => None,
        }
    }

    /// [`Compiler::check`] of array items against `prefixItems`, `items` and
    /// `additionalItems` (with `items` an array and no `prefixItems`): each item
    /// against its position's schema, the rest against the rest's.
    fn check_items(&self, m: &Map<String, Value>, a: &[Value], depth: usize) -> Option<bool> {
        let (prefix, rest): (&[Value], Option<&Value>) = match (m.get("prefixItems"), m.get("items")) {
            (Some(Value::Array(p)), items) => (p, items),
            (None, Some(Value::Array(p))) => (p, m.get("additionalItems")),
            (_, items) => (&[], items),
        };
        let mut all = Some(true);
        for (i, x) in a.iter().enumerate() {
            let Some(s) = prefix.get(i).or(rest) else { break };
            all = match (all, self.check(s, x, depth + 1)) {
                (Some(true), r) => r,
                (other, _) => other,
            };
        }
        all
    }

    /// [`Compiler::check`] of a keyword map.
    pub(super) fn check_map(&self, m: &Map<String, Value>, v: &Value, depth: usize) -> Option<bool> {
        if depth > 32 {
            return None;
        }
        let mut ok = true;
        for (k, kv) in m {
            let r = match k.as_str() {
                k if is_annotation(k) => Some(true),
                NOT_STRINGS => Some(!kv.as_array()?.iter().any(|x| x == v)),
                FRACTION => Some(!v.is_number() || !has_type(v, "integer") || *kv != Value::Bool(true)),
                NOT_PATTERNS | PATTERNS => match v.as_str() {
                    None => Some(true),
                    Some(sv) => {
                        let mut hit = Vec::new();
                        for p in kv.as_array()? {
                            hit.push(self.pattern(p.as_str()?).ok()?.matches(sv));
                        }
                        Some(if k == NOT_PATTERNS { !hit.contains(&true) } else { !hit.contains(&false) })
                    }
                },
                "patternProperties" => match v.as_object() {
                    None => Some(true),
                    Some(o) => {
                        let mut all = Some(true);
                        for (p, ps) in kv.as_object()? {
                            let re = self.pattern(p).ok()?;
                            for (pk, pv) in o {
                                if re.matches(pk) {
                                    all = match (all, self.check(ps, pv, depth + 1)) {
                                        (Some(true), r) => r,
                                        (other, _) => other,
                                    };
                                }
                            }
                        }
                        all
                    }
                },
                "$ref" => {
                    let t = self.resolve(kv.as_str()?, "").ok()?;
                    self.check(t, v, depth + 1)
                }
                "type" => Some(type_list(kv).iter().any(|t| has_type(v, t.as_str().unwrap_or("")))),
                "enum" => Some(kv.as_array()?.iter().any(|x| json_eq(x, v))),
                "const" => Some(json_eq(kv, v)),
                "allOf" => {
                    let mut all = Some(true);
                    for x in kv.as_array()? {
                        match self.check(x, v, depth + 1) {
                            Some(true) => {}
                            other => all = all.and(other),
                        }
                        if all == Some(false) {
                            break;
                        }
                    }
                    all
                }
                "anyOf" | "oneOf" => {
                    let mut n = 0;
                    for x in kv.as_array()? {
                        if self.check(x, v, depth + 1)? {
                            n += 1;
                        }
                    }
                    Some(if k == "anyOf" { n >= 1 } else { n == 1 })
                }
                "not" => self.check(kv, v, depth + 1).map(|b| !b),
                "minLength" | "maxLength" | "pattern" | "format" => match v.as_str() {
                    None => Some(true),
                    Some(sv) => {
                        let len = sv.chars().count() as u64;
                        match k.as_str() {
                            "minLength" => Some(len >= kv.as_u64()?),
                            "maxLength" => Some(len <= kv.as_u64()?),
                            "pattern" => Some(self.pattern(kv.as_str()?).ok()?.matches(sv)),
                            _ => match format::pattern(kv.as_str()?) {
                                Some(p) => Some(self.pattern(p).ok()?.matches(sv)),
                                None if format::UNSUPPORTED.contains(&kv.as_str()?) => None,
                                None => Some(true),
                            },
                        }
                    }
                },
                "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" => match v {
                    Value::Number(n) => {
                        if kv.is_boolean() {
                            Some(true)
                        } else {
                            let x = Dec::parse(&n.to_string())?;
                            let b = Dec::parse(&kv.as_number()?.to_string())?;
                            let c = x.cmp_value(&b);
                            let excl = |f: &str| m.get(f).and_then(Value::as_bool).unwrap_or(false);
                            Some(match k.as_str() {
                                "minimum" => if excl("exclusiveMinimum") { c.is_gt() } else { c.is_ge() },
                                "maximum" => if excl("exclusiveMaximum") { c.is_lt() } else { c.is_le() },
                                "exclusiveMinimum" => c.is_gt(),
                                _ => c.is_lt(),
                            })
                        }
                    }
                    _ => Some(true),
                },
                NOT_MULTIPLE => match v {
                    Value::Number(n) => match n.as_i64() {
                        Some(x) => Some(kv.as_array()?.iter().all(|k| k.as_i64().is_some_and(|k| k > 0 && x % k != 0))),
                        None => None,
                    },
                    _ => Some(true),
                },
                "multipleOf" => match v {
                    Value::Number(n) => match (n.as_i64(), kv.as_i64()) {
                        (Some(x), Some(d)) if d > 0 => Some(x % d == 0),
                        _ => None,
                    },
                    _ => Some(true),
                },
                "minItems" | "maxItems" => match v.as_array() {
                    None => Some(true),
                    Some(a) => Some(if k == "minItems" { a.len() as u64 >= kv.as_u64()? } else { a.len() as u64 <= kv.as_u64()? }),
                },
                // Read together, as the array translation reads them: checked once, at the
                // first of them the map has.
                "items" | "prefixItems" | "additionalItems" => match v.as_array() {
                    Some(a) if ITEMS.iter().find(|x| m.contains_key(**x)) == Some(&k.as_str()) => self.check_items(m, a, depth),
                    _ => Some(true),
                },
                "contains" | CONTAINS => match v.as_array() {
                    None => Some(true),
                    Some(a) => {
                        let schemas = if k == CONTAINS { kv.as_array()?.as_slice() } else { std::slice::from_ref(kv) };
                        let (min, max) = if k == CONTAINS {
                            (1, None)
                        } else {
                            let max = match m.get("maxContains") {
                                None => None,
                                Some(x) => Some(x.as_u64()?),
                            };
                            (m.get("minContains").map_or(Some(1), Value::as_u64)?, max)
                        };
                        let mut all = true;
                        for c in schemas {
                            let mut n = 0u64;
                            for x in a {
                                n += u64::from(self.check(c, x, depth + 1)?);
                            }
                            all &= n >= min && max.is_none_or(|m| n <= m);
                        }
                        Some(all)
                    }
                },
                "minContains" | "maxContains" => Some(true),
                SOME_KEY => match v.as_object() {
                    None => Some(true),
                    Some(o) => {
                        let mut all = true;
                        for req in kv.as_array()? {
                            let names: Vec<&str> = req.get("names")?.as_array()?.iter().filter_map(Value::as_str).collect();
                            let mut patterns = Vec::new();
                            for p in req.get("patterns")?.as_array()? {
                                patterns.push(self.pattern(p.as_str()?).ok()?);
                            }
                            all &= o.keys().any(|key| !names.contains(&key.as_str()) && !patterns.iter().any(|re| re.matches(key)));
                        }
                        Some(all)
                    }
                },
                "uniqueItems" => match (v.as_array(), kv.as_bool()) {
                    (Some(a), Some(true)) => Some((0..a.len()).all(|i| (i + 1..a.len()).all(|j| !json_eq(&a[i], &a[j])))),
                    _ => Some(true),
                },
                "required" | "minProperties" | "maxProperties" | "properties" | "additionalProperties" => match v.as_object() {
                    None => Some(true),
                    Some(o) => match k.as_str() {
                        "required" => Some(kv.as_array()?.iter().all(|r| r.as_str().is_some_and(|r| o.contains_key(r)))),
                        "minProperties" => Some(o.len() as u64 >= kv.as_u64()?),
                        "maxProperties" => Some(o.len() as u64 <= kv.as_u64()?),
                        "properties" => {
                            let mut all = Some(true);
                            for (pk, pv) in o {
                                if let Some(ps) = kv.get(pk) {
                                    all = match (all, self.check(ps, pv, depth + 1)) {
                                        (Some(true), r) => r,
                                        (other, _) => other,
                                    };
                                }
                            }
                            all
                        }
                        _ => {
                            // Keys neither declared nor matched by a pattern take additionalProperties.
                            let declared = m.get("properties").and_then(Value::as_object);
                            let mut patterns = Vec::new();
                            for p in m.get("patternProperties").and_then(Value::as_object).into_iter().flat_map(|o| o.keys()) {
                                patterns.push(self.pattern(p).ok()?);
                            }
                            let mut all = Some(true);
                            for (pk, pv) in o {
                                if declared.is_some_and(|d| d.contains_key(pk)) || patterns.iter().any(|re| re.matches(pk)) {
                                    continue;
                                }
                                all = match (all, self.check(kv, pv, depth + 1)) {
                                    (Some(true), r) => r,
                                    (other, _) => other,
                                };
                            }
                            all
                        }
                    },
                },
                k if is_constraint_keyword(k) => None,
                _ => Some(true),
            };
            match r {
                Some(true) => {}
                Some(false) => return Some(false),
                None => ok = false,
            }
        }
        if ok { Some(true) } else { None }
    }
}
