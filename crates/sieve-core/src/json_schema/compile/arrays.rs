//! Arrays: prefix items and items, counts, `contains`, and `uniqueItems`
//! over schemas with few values.

use super::keywords::{count, is_annotation, json_eq, keyword};
use super::negate::{kinds, values_of};
use super::{child, Compiler, Expr, Res, CONTAINS};
use super::super::gbnf::Ex;
use crate::hash::FastMap;

/// Most `contains` schemas one array may have to match together (2^k sets
/// of them are followed).
const MAX_CONTAINS: usize = 4;
use serde_json::{Map, Value};

impl<'a> Compiler<'a> {
    pub(super) fn array(&mut self, m: &Map<String, Value>, ptr: &str) -> Res<Expr> {
        let min = count(m, "minItems", ptr)?.unwrap_or(0);
        let max = count(m, "maxItems", ptr)?;
        if max.is_some_and(|x| x < min) {
            return Ok(None);
        }
        let (prefix, rest): (Vec<Value>, Value) = match (m.get("prefixItems"), m.get("items")) {
            (Some(Value::Array(p)), items) => (p.clone(), items.cloned().unwrap_or(Value::Bool(true))),
            (None, Some(Value::Array(p))) => (p.clone(), m.get("additionalItems").cloned().unwrap_or(Value::Bool(true))),
            (_, items) => (Vec::new(), items.cloned().unwrap_or(Value::Bool(true))),
        };
        let prefix_kw = if m.contains_key("prefixItems") { "prefixItems" } else { "items" };
        let rest_kw = if m.contains_key("prefixItems") || !m.get("items").is_some_and(Value::is_array) { "items" } else { "additionalItems" };
        if m.get("uniqueItems").and_then(Value::as_bool).unwrap_or(false) && max.is_none_or(|x| x > 1) {
            if prefix.is_empty() && !m.contains_key("contains")
                && let Some(values) = self.finite_values(&rest, &child(ptr, "items"))?
            {
                return self.distinct_items(&values, min, max);
            }
            self.unsupported("uniqueItems", ptr, "uniqueItems on arrays that may hold two or more items of a schema with more than 10 values")?;
        }
        let ws = self.ws;
        let sep = self.sep();
        let mut pre: Vec<Expr> = Vec::new();
        for (i, p) in prefix.iter().enumerate() {
            if max.is_some_and(|x| i as u64 >= x) {
                break;
            }
            pre.push(self.schema(p, &child(&child(ptr, prefix_kw), &i.to_string()))?);
        }
        let rest_e = self.schema(&rest, &child(ptr, rest_kw))?;
        let (open, close) = (self.rules.lit("["), self.rules.lit("]"));
        // Several `contains` (from allOf): each matched by some item.
        if let Some(further) = m.get(CONTAINS).and_then(Value::as_array) {
            let c = m.get("contains").cloned().unwrap_or(Value::Bool(true));
            let n = count(m, "minContains", ptr)?.unwrap_or(1);
            if m.contains_key("maxContains") || !pre.is_empty() || max.is_some() || min > 1 || n != 1 || further.len() + 1 > MAX_CONTAINS {
                self.unsupported("contains", ptr, "several contains with minContains, maxContains, prefix items, maxItems, minItems above 1 or more than 4 of them")?;
            } else {
                let all: Vec<Value> = std::iter::once(c).chain(further.iter().cloned()).collect();
                return self.containing_all(&rest, rest_e, &all, ptr);
            }
        }
        // contains: at least n items matching both the item schema and `contains`.
        if let Some(c) = m.get("contains") {
            let n = count(m, "minContains", ptr)?.unwrap_or(1);
            if m.contains_key("maxContains") || !pre.is_empty() || max.is_some() || min > n {
                self.unsupported("contains", ptr, "contains with maxContains, prefix items, maxItems or minItems above minContains")?;
            } else if n > 0 {
                let both = keyword("allOf", Value::Array(vec![rest.clone(), c.clone()]));
                let Some(ce) = self.schema(&both, &child(ptr, "contains"))? else { return Ok(None) };
                let r = match rest_e {
                    Some(r) => r,
                    None => {
                        if n > 1 {
                            return Ok(None);
                        }
                        let body = self.rules.seq(&[open, ws, ce, ws, close]);
                        return Ok(Some(self.add("array", body)?));
                    }
                };
                let rules = &mut self.rules;
                let (item_sep, sep_item) = (rules.seq(&[r, sep]), rules.seq(&[sep, r]));
                let (before, after) = (rules.repeat(item_sep, 0, None), rules.repeat(sep_item, 0, None));
                let mut body = vec![open, ws, before, ce];
                if n > 1 {
                    let more = rules.seq(&[after, sep, ce]);
                    let times = u32::try_from(n - 1).unwrap_or(u32::MAX);
                    body.push(rules.repeat(more, times, Some(times)));
                }
                body.extend([after, ws, close]);
                let body = rules.seq(&body);
                return Ok(Some(self.add("array", body)?));
            }
        }
        // Elements: prefix positions, then the rest; counts between min and max.
        let k = pre.len() as u64;
        let rest_min = min.saturating_sub(k);
        let rest_max = max.map(|x| x.saturating_sub(k));
        let rest_part = match rest_e {
            Some(r) if rest_max != Some(0) => Some((r, rest_min, rest_max)),
            _ => None,
        };
        if (rest_e.is_none() || rest_max == Some(0))
            && rest_min > 0 {
                return Ok(None);
            }
        // Build from the end: after position i (0-based count emitted so far).
        let count32 = |x: u64| u32::try_from(x).unwrap_or(u32::MAX);
        let mut body: Option<Ex> = None;
        if let Some((r, lo, hi)) = rest_part {
            let rules = &mut self.rules;
            if k == 0 {
                // The first element has no separator.
                let inner_hi = hi.map(|h| h - 1);
                let mut tail = vec![r];
                if inner_hi != Some(0) {
                    let more = rules.seq(&[sep, r]);
                    tail.push(rules.repeat(more, count32(lo.saturating_sub(1)), inner_hi.map(count32)));
                }
                let tail = rules.seq(&tail);
                body = Some(if lo == 0 { rules.opt(tail) } else { tail });
            } else {
                let more = rules.seq(&[sep, r]);
                body = Some(rules.repeat(more, count32(lo), hi.map(count32)));
            }
        }
        for i in (0..pre.len()).rev() {
            let Some(p) = pre[i] else {
                // This position cannot be filled: the array ends before it.
                if (i as u64) < min {
                    return Ok(None);
                }
                body = None;
                continue;
            };
            let rules = &mut self.rules;
            let mut this = if i == 0 { vec![p] } else { vec![sep, p] };
            this.extend(body);
            let this = rules.seq(&this);
            body = Some(if (i as u64) >= min { rules.opt(this) } else { this });
        }
        let body = match body {
            Some(b) => self.rules.seq(&[open, ws, b, ws, close]),
            None => self.rules.seq(&[open, ws, close]),
        };
        Ok(Some(self.add("array", body)?))
    }

    /// Arrays of items of `rest` (`rest_e` translated) in which each of the
    /// schemas `all` is matched by some item. The grammar follows the set of
    /// those matched so far (2^k sets for k schemas): an item either keeps
    /// the set or is one that also matches a set T of the others, compiled
    /// as `rest` and T together, and the array ends once the set is full.
    fn containing_all(&mut self, rest: &Value, rest_e: Expr, all: &[Value], ptr: &str) -> Res<Expr> {
        let k = all.len();
        let full = (1usize << k) - 1;
        // The item matching each non-empty set T of the schemas (and `rest`).
        let mut items: Vec<Expr> = vec![None; full + 1];
        for (t, item) in items.iter_mut().enumerate().skip(1) {
            let mut parts = vec![rest.clone()];
            parts.extend((0..k).filter(|i| t >> i & 1 == 1).map(|i| all[i].clone()));
            *item = self.schema(&keyword("allOf", Value::Array(parts)), &child(ptr, "contains"))?;
        }
        let sep = self.sep();
        // after[s]: the rest of the array once the schemas of s are matched,
        // built from the full set down (a step only adds to s).
        let rules = &mut self.rules;
        // Any items between the steps.
        let plain = rest_e.map(|r| {
            let more = rules.seq(&[sep, r]);
            rules.repeat(more, 0, None)
        });
        let mut after: Vec<Expr> = vec![None; full + 1];
        for s in (0..=full).rev() {
            after[s] = if s == full {
                Some(plain.unwrap_or_else(|| rules.empty()))
            } else {
                let steps: Vec<Ex> = (1..=full)
                    .filter(|t| t & s == 0)
                    .filter_map(|t| Some(rules.seq(&[sep, items[t]?, after[s | t]?])))
                    .collect();
                if steps.is_empty() {
                    None
                } else {
                    let step = rules.alt(&steps);
                    Some(match plain {
                        Some(p) => rules.seq(&[p, step]),
                        None => step,
                    })
                }
            };
        }
        // The first item has no separator before it.
        let mut firsts: Vec<Ex> = (1..=full).filter_map(|t| Some(rules.seq(&[items[t]?, after[t]?]))).collect();
        if let (Some(r), Some(a)) = (rest_e, after[0]) {
            firsts.push(rules.seq(&[r, a]));
        }
        if firsts.is_empty() {
            return Ok(None);
        }
        let (open, close, ws) = (rules.lit("["), rules.lit("]"), self.ws);
        let first = rules.alt(&firsts);
        let body = rules.seq(&[open, ws, first, ws, close]);
        Ok(Some(self.add("array", body)?))
    }

    /// The values of a schema that allows at most 10 (enum, const, booleans,
    /// null), each checked against the rest of the schema; `None` otherwise.
    fn finite_values(&mut self, s: &Value, ptr: &str) -> Res<Option<Vec<Value>>> {
        let m = match s {
            Value::Object(o) if !o.contains_key("$ref") || !self.legacy => self.flatten(o, ptr)?,
            Value::Bool(false) => return Ok(Some(Vec::new())),
            _ => return Ok(None),
        };
        let candidates = match values_of(&m) {
            Some(v) => v.to_vec(),
            None => {
                let only_type = m.keys().all(|k| k == "type" || is_annotation(k));
                match kinds(&m).as_slice() {
                    ["null"] if only_type => vec![Value::Null],
                    ["boolean"] if only_type => vec![Value::Bool(true), Value::Bool(false)],
                    ["null", "boolean"] | ["boolean", "null"] if only_type => {
                        vec![Value::Null, Value::Bool(true), Value::Bool(false)]
                    }
                    _ => return Ok(None),
                }
            }
        };
        let mut out: Vec<Value> = Vec::new();
        for v in candidates {
            match self.check(&Value::Object(m.clone()), &v, 0) {
                Some(true) if !out.iter().any(|x| json_eq(x, &v)) => out.push(v),
                Some(_) => {}
                None => return Ok(None),
            }
        }
        Ok(if out.len() <= 10 { Some(out) } else { None })
    }

    /// Arrays of distinct values from `values` in any order, `min..=max` of
    /// them: one rule per set of values already written.
    fn distinct_items(&mut self, values: &[Value], min: u64, max: Option<u64>) -> Res<Expr> {
        let mut lit_rules = Vec::new();
        for v in values {
            let l = self.literal_value(v);
            lit_rules.push(self.opaque("item", l)?);
        }
        let mut memo: FastMap<u32, Option<Ex>> = FastMap::default();
        let Some(body) = self.distinct_from(&lit_rules, 0, min, max, &mut memo)? else { return Ok(None) };
        let (ws, r) = (self.ws, &mut self.rules);
        let (open, close) = (r.lit("["), r.lit("]"));
        let body = if r.is_empty(body) { r.seq(&[open, ws, close]) } else { r.seq(&[open, ws, body, ws, close]) };
        Ok(Some(self.add("array", body)?))
    }

    fn distinct_from(
        &mut self,
        items: &[Ex],
        seen: u32,
        min: u64,
        max: Option<u64>,
        memo: &mut FastMap<u32, Option<Ex>>,
    ) -> Res<Option<Ex>> {
        if let Some(done) = memo.get(&seen) {
            return Ok(*done);
        }
        let cnt = u64::from(seen.count_ones());
        let sep = self.sep();
        let mut alts = Vec::new();
        if cnt >= min {
            alts.push(self.rules.empty());
        }
        if max.is_none_or(|m| cnt < m) {
            for (i, &it) in items.iter().enumerate() {
                if seen >> i & 1 == 1 {
                    continue;
                }
                if let Some(next) = self.distinct_from(items, seen | 1 << i, min, max, memo)? {
                    let mut parts = if seen == 0 { vec![it] } else { vec![sep, it] };
                    if !self.rules.is_empty(next) {
                        parts.push(next);
                    }
                    alts.push(self.rules.seq(&parts));
                }
            }
        }
        let name = match alts[..] {
            [] => None,
            [one] if self.rules.is_empty(one) => Some(one),
            _ => {
                let body = self.rules.alt(&alts);
                Some(self.opaque("distinct", body)?)
            }
        };
        memo.insert(seen, name);
        Ok(name)
    }
}
