//! Objects: properties and required members, in declared order or any
//! order, counted members, additional and pattern properties, and
//! `propertyNames`.

use super::keywords::{count, is_annotation, json_text, keyword, lists_type};
use super::strings::literal_re;
use super::{child, invalid, Compiler, Expr, Res, PATTERNS};
use super::super::PropertyOrder;
use super::super::dfa::{self, Dfa, TooLarge};
use super::super::format;
use super::super::gbnf::Ex;
use super::super::regex::{self, Re};
use crate::hash::FastMap;
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::rc::Rc;

impl<'a> Compiler<'a> {
    /// The `patternProperties` of `m` that translate: each key, its
    /// expression and its schema. An unsupported pattern is an error
    /// (strict) or left out with a warning (lenient).
    pub(super) fn property_patterns<'m>(&mut self, m: &'m Map<String, Value>, ptr: &str) -> Res<Vec<(&'m str, Rc<Re>, &'m Value)>> {
        let mut out = Vec::new();
        if let Some(Value::Object(pp)) = m.get("patternProperties") {
            for (p, s) in pp {
                match self.pattern(p) {
                    Ok(re) => out.push((p.as_str(), re, s)),
                    Err(e @ regex::PatternError::Unsupported(_)) => self.unsupported("patternProperties", ptr, &e.to_string())?,
                    Err(e) => return Err(invalid("patternProperties", ptr, &e.to_string())),
                }
            }
        }
        Ok(out)
    }

    pub(super) fn object(&mut self, m: &Map<String, Value>, ptr: &str) -> Res<Expr> {
        let empty = Map::new();
        let props = match m.get("properties") {
            Some(Value::Object(p)) => p,
            Some(_) => return Err(invalid("properties", ptr, "must be an object")),
            None => &empty,
        };
        let required: Vec<String> = m
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(|x| x.as_str().map(String::from)).collect())
            .unwrap_or_default();
        let default_ap = Value::Bool(self.opts.additional_properties_default);
        let ap = m.get("additionalProperties").unwrap_or(&default_ap);
        let min_p = count(m, "minProperties", ptr)?.unwrap_or(0);
        let max_p = count(m, "maxProperties", ptr)?;
        let mut patterns: Vec<(Re, Value, String)> = Vec::new();
        for (p, re, s) in self.property_patterns(m, ptr)? {
            patterns.push((Re::clone(&re), s.clone(), child(&child(ptr, "patternProperties"), p)));
        }
        let names_schema = m.get("propertyNames");
        // Declared properties, in schema order, then required names not declared.
        // Subschemas are borrowed: copying them at every level of nesting
        // would take time quadratic in the schema's depth.
        let mut names: Vec<(String, Cow<'_, Value>, String)> = props
            .iter()
            .map(|(k, v)| (k.clone(), Cow::Borrowed(v), child(&child(ptr, "properties"), k)))
            .collect();
        let anything = Value::Bool(true);
        for r in &required {
            if !props.contains_key(r) {
                let s = if patterns.iter().any(|p| p.0.matches(r)) { &anything } else { ap };
                names.push((r.clone(), Cow::Borrowed(s), child(ptr, "required")));
            }
        }
        // Members that may appear, and every declared name (undeclared keys
        // avoid them all, those whose value can never be valid included).
        let mut entries: Vec<(String, Ex, bool)> = Vec::new();
        let mut known: Vec<String> = Vec::new();
        for (name, s, nptr) in names {
            let mut parts = vec![s];
            for (re, ps, _) in &patterns {
                if re.matches(&name) {
                    parts.push(Cow::Borrowed(ps));
                }
            }
            if let Some(ns) = names_schema {
                match self.check(ns, &Value::String(name.clone()), 0) {
                    Some(true) => {}
                    Some(false) => parts.push(Cow::Owned(Value::Bool(false))),
                    None => self.unsupported("propertyNames", ptr, "propertyNames that cannot be checked on declared names")?,
                }
            }
            let s = if parts.len() == 1 {
                parts.remove(0)
            } else {
                Cow::Owned(keyword("allOf", Value::Array(parts.into_iter().map(Cow::into_owned).collect())))
            };
            let e = self.schema(&s, &nptr)?;
            let req = required.contains(&name);
            if e.is_none() && req {
                return Ok(None);
            }
            if let Some(e) = e {
                let key = self.rules.lit(&json_text(&Value::String(name.clone())));
                entries.push((name.clone(), self.member(key, e), req));
            }
            known.push(name);
        }
        // Extra members: keys outside the declared names, split by which
        // patterns they match (none: additionalProperties).
        let extra = self.extra_members(&known, &patterns, ap, names_schema, ptr)?;
        let extra = match extra {
            Some(e) => Some(self.add("member", e)?),
            None => None,
        };
        let Some(body) = self.members(&entries, extra, min_p, max_p)? else { return Ok(None) };
        let (ws, r) = (self.ws, &mut self.rules);
        let (open, close) = (r.lit("{"), r.lit("}"));
        let body = r.seq(&[open, ws, body, ws, close]);
        Ok(Some(self.add("object", body)?))
    }

    /// Members in declared order then extras, counting members for
    /// minProperties/maxProperties. Each reachable state (position, first,
    /// count) is a rule.
    fn members(&mut self, entries: &[(String, Ex, bool)], extra: Option<Ex>, min_p: u64, max_p: Option<u64>) -> Res<Option<Ex>> {
        let lead_extras = match extra {
            Some(x) if min_p == 0 && max_p.is_none() => {
                let sep = self.sep();
                let more = self.rules.seq(&[sep, x]);
                let more = self.rules.repeat(more, 0, None);
                let lead = self.rules.seq(&[x, more, sep]);
                let lead = self.rules.opt(lead);
                Some(self.add("extras", lead)?)
            }
            _ => None,
        };
        let shape = MemberShape {
            entries,
            extra,
            min_p,
            max_p,
            cap: max_p.map_or(min_p, |m| m + 1),
            lead_extras,
            sep: None,
        };
        if let PropertyOrder::AnyUpTo(n) = self.opts.property_order
            && entries.len() <= usize::from(n.min(16)) && entries.len() > 1
            && self.order_states + (1 << entries.len()) <= self.limits.max_order_states {
                // Counted at every object, shared or not, so that the same
                // objects take any order as when each is written out.
                self.order_states += 1 << entries.len();
                let key = (entries.to_vec(), extra, min_p, max_p);
                if let Some(done) = self.member_sets.get(&key) {
                    return Ok(*done);
                }
                // Each member is a rule kept out of line, called from each
                // set of members written: one automaton of 2^n states (the
                // sets of members written) and n * 2^(n-1) calls.
                let mut named: Vec<(String, Ex, bool)> = Vec::new();
                for &(ref k, kv, req) in entries {
                    named.push((k.clone(), self.opaque("key", kv)?, req));
                }
                let lead_extras = match shape.lead_extras {
                    Some(x) => Some(self.opaque("extras", x)?),
                    None => None,
                };
                let sep = self.sep();
                let sep = match lead_extras {
                    Some(x) => self.rules.seq(&[sep, x]),
                    None => sep,
                };
                let sep = Some(self.opaque("sep", sep)?);
                let shape = MemberShape { entries: &named, lead_extras, sep, ..shape };
                let mut memo = vec![None; 1 << named.len()];
                let mut auto = Automaton::default();
                let sets = match self.member_set(&shape, 0, &mut memo, &mut auto, &mut FastMap::default())? {
                    None => None,
                    Some(FINAL) => Some(self.rules.empty()),
                    Some(_) => {
                        // The state every member sequence ends in, last.
                        let end = auto.states.len() as u32;
                        auto.states.push((true, 0, 0));
                        auto.edges.iter_mut().filter(|e| e.1 == FINAL).for_each(|e| e.1 = end);
                        Some(self.rules.automaton(&auto.states, &auto.edges, &[]))
                    }
                };
                self.member_sets.insert(key, sets);
                return Ok(sets);
            }
        let mut memo: FastMap<(usize, bool, u64), Option<Ex>> = FastMap::default();
        self.member_state(&shape, 0, true, 0, &mut memo)
    }

    /// Declared members in any order: a state per set of members already
    /// written. Returns the state of set `seen` (`FINAL` when nothing but
    /// the object's end may follow; `None` when no member sequence
    /// continues from it), memoized in `memo` by the set's bits; states go
    /// in `auto`, the first set's first. `tails` memoizes
    /// [`Compiler::member_state`] past the declared members.
    fn member_set(
        &mut self,
        sh: &MemberShape<'_>,
        seen: u32,
        memo: &mut [Option<Option<u32>>],
        auto: &mut Automaton,
        tails: &mut FastMap<(usize, bool, u64), Option<Ex>>,
    ) -> Res<Option<u32>> {
        if let Some(done) = memo[seen as usize] {
            return Ok(done);
        }
        self.check_size()?;
        let cnt = u64::from(seen.count_ones());
        let first = seen == 0;
        let state = auto.states.len() as u32;
        auto.states.push((false, 0, 0));
        // The next declared member, after the separator and extras they all
        // share (one edge into a state of its own, so the grammar holds one
        // copy of them).
        let mut nexts = Vec::with_capacity(sh.entries.len());
        if sh.max_p.is_none_or(|m| cnt < m) {
            for (i, &(_, kv, _)) in sh.entries.iter().enumerate() {
                if seen >> i & 1 == 1 {
                    continue;
                }
                if let Some(to) = self.member_set(sh, seen | 1 << i, memo, auto, tails)? {
                    nexts.push((kv, to));
                }
            }
        }
        let mut edges = Vec::with_capacity(2);
        if !nexts.is_empty() {
            let prefix = match (first, sh.lead_extras, sh.sep) {
                (true, Some(x), _) => Some(x),
                (true, None, _) => None,
                (false, _, Some(sep)) => Some(sep),
                (false, Some(x), None) => {
                    let sep = self.sep();
                    Some(self.rules.seq(&[sep, x]))
                }
                (false, None, None) => Some(self.sep()),
            };
            match prefix {
                None => edges = nexts,
                Some(prefix) => {
                    edges.push((prefix, auto.states.len() as u32));
                    let at = auto.edges.len() as u32;
                    auto.edges.extend_from_slice(&nexts);
                    auto.states.push((false, at, auto.edges.len() as u32));
                }
            }
        }
        let all_required = sh.entries.iter().enumerate().all(|(i, e)| !e.2 || seen >> i & 1 == 1);
        let mut accept = false;
        if all_required {
            // The tail after the declared members: extras, counted.
            if let Some(t) = self.member_state(sh, sh.entries.len(), first, cnt.min(sh.cap), tails)? {
                if self.rules.is_empty(t) {
                    accept = true;
                } else {
                    edges.push((self.opaque_once(t)?, FINAL));
                }
            }
        }
        let out = match (edges.is_empty(), accept) {
            (true, false) => None,
            (true, true) => Some(FINAL),
            _ => {
                let at = auto.edges.len() as u32;
                auto.edges.extend_from_slice(&edges);
                auto.states[state as usize] = (accept, at, auto.edges.len() as u32);
                Some(state)
            }
        };
        memo[seen as usize] = Some(out);
        Ok(out)
    }

    /// The members from declared member `i` on (`first`: nothing written yet; `cnt`: members
    /// written, capped), memoized in `memo`. Each state needs the states of member `i + 1`:
    /// they are made first, from a stack of our own rather than by recursion, so that an object
    /// of many thousands of declared properties does not run out of the thread's stack.
    fn member_state(
        &mut self,
        sh: &MemberShape<'_>,
        i: usize,
        first: bool,
        cnt: u64,
        memo: &mut FastMap<(usize, bool, u64), Option<Ex>>,
    ) -> Res<Option<Ex>> {
        let mut stack = vec![(i, first, cnt)];
        while let Some(&(i, first, cnt)) = stack.last() {
            if memo.contains_key(&(i, first, cnt)) {
                stack.pop();
                continue;
            }
            if i < sh.entries.len() && sh.max_p.is_none_or(|m| cnt <= m) {
                let take = (i + 1, false, (cnt + 1).min(sh.cap));
                let skip = (i + 1, first, cnt);
                if let Some(next) = [Some(take), (!sh.entries[i].2).then_some(skip)].into_iter().flatten().find(|k| !memo.contains_key(k)) {
                    stack.push(next);
                    continue;
                }
            }
            stack.pop();
            let name = self.member_body(sh, i, first, cnt, memo)?;
            memo.insert((i, first, cnt), name);
        }
        Ok(memo[&(i, first, cnt)])
    }

    /// One state of [`Compiler::member_state`], the states it needs already in `memo`.
    fn member_body(
        &mut self,
        sh: &MemberShape<'_>,
        i: usize,
        first: bool,
        cnt: u64,
        memo: &FastMap<(usize, bool, u64), Option<Ex>>,
    ) -> Res<Option<Ex>> {
        let sep = self.sep();
        let lead: &[Ex] = if first { &[] } else { &[sep] };
        let body: Option<Ex> = if sh.max_p.is_some_and(|m| cnt > m) {
            None
        } else if i == sh.entries.len() {
            let need = sh.min_p.saturating_sub(cnt);
            let room = sh.max_p.map(|m| m - cnt);
            match sh.extra {
                Some(x) if room != Some(0) => {
                    let more_hi = room.map(|r| r - 1);
                    let more_lo = need.saturating_sub(1);
                    let unit = self.rules.seq(&[sep, x]);
                    let unit = self.add("member", unit)?;
                    let mut one = lead.to_vec();
                    one.push(x);
                    if more_hi != Some(0) {
                        one.push(self.repeat(unit, more_lo, more_hi)?);
                    }
                    let one = self.rules.seq(&one);
                    Some(if need == 0 { self.rules.opt(one) } else { one })
                }
                _ => (need == 0).then(|| self.rules.empty()),
            }
        } else {
            let (_, kv, req) = sh.entries[i];
            let next_cnt = (cnt + 1).min(sh.cap);
            let mut alts = Vec::new();
            if let Some(next) = memo[&(i + 1, false, next_cnt)] {
                let mut parts = lead.to_vec();
                parts.extend(sh.lead_extras);
                parts.push(kv);
                if !self.rules.is_empty(next) {
                    parts.push(next);
                }
                alts.push(self.rules.seq(&parts));
            }
            if !req
                && let Some(skip) = memo[&(i + 1, first, cnt)] {
                    alts.push(skip);
                }
            if alts.is_empty() { None } else { Some(self.rules.alt(&alts)) }
        };
        Ok(match body {
            Some(b) if self.rules.is_empty(b) || self.rules.is_atom(b) => Some(b),
            Some(b) => Some(self.add("members", b)?),
            None => None,
        })
    }

    /// One member alternative per region of undeclared keys: keys matching
    /// exactly the patterns in a subset (all of their schemas apply), or none
    /// (`additionalProperties` applies); `propertyNames` narrows every region.
    fn extra_members(
        &mut self,
        known: &[String],
        patterns: &[(Re, Value, String)],
        ap: &Value,
        names_schema: Option<&Value>,
        ptr: &str,
    ) -> Res<Option<Ex>> {
        if patterns.is_empty() && *ap == Value::Bool(false) {
            return Ok(None);
        }
        if patterns.is_empty() && names_schema.is_none() {
            // Undeclared keys take additionalProperties: every string but the declared names.
            let Some(value) = self.schema(ap, &child(ptr, "additionalProperties"))? else { return Ok(None) };
            let key = dfa::emit_other_than(known, &mut self.rules);
            let key = self.quoted(key);
            return Ok(Some(self.member(key, value)));
        }
        if patterns.len() > 60 {
            self.unsupported("patternProperties", ptr, "more than 60 patterns")?;
            return Ok(None);
        }
        let mut exprs: Vec<Re> = patterns.iter().map(|p| p.0.clone()).collect();
        let pattern_mask = (1u64 << exprs.len()) - 1;
        // Each language propertyNames names has a tag; a key must be in all.
        let mut names_mask = 0u64;
        if let Some(ns) = names_schema {
            match self.name_languages(ns, ptr)? {
                Some(res) => {
                    for re in res {
                        names_mask |= 1 << exprs.len();
                        exprs.push(re);
                    }
                }
                None => return Ok(None),
            }
        }
        // Every string, so that keys outside all the languages are not lost.
        exprs.push(Re::any_string());
        let known_from = exprs.len();
        exprs.extend(known.iter().map(|k| literal_re(k)));
        if exprs.len() > 64 {
            // Many declared names: one tag for all of them.
            exprs.truncate(known_from);
            exprs.push(Re::Alt(known.iter().map(|k| literal_re(k)).collect()));
        }
        let known_mask = if exprs.len() > known_from { u64::MAX << known_from } else { 0 };
        // The declared names alone make a trie, as large as their text: the schema pays for
        // those states, and the limit bounds what the patterns add to them.
        let max_states = self.limits.max_dfa_states + known.iter().map(|k| k.len() + 1).sum::<usize>();
        let names_keyword = if patterns.is_empty() { "properties" } else { "patternProperties" };
        let dfa = match Dfa::tagged(&exprs, 0, max_states) {
            Ok(d) => d,
            Err(TooLarge) => {
                self.unsupported(names_keyword, ptr, "property name patterns exceed max_dfa_states")?;
                return Ok(None);
            }
        };
        let mut alts = Vec::new();
        for sig in dfa.signatures() {
            if sig & known_mask != 0 || sig & names_mask != names_mask {
                continue;
            }
            let pats = sig & pattern_mask;
            let value = if pats == 0 {
                if *ap == Value::Bool(false) {
                    continue;
                }
                self.schema(ap, &child(ptr, "additionalProperties"))?
            } else {
                let parts: Vec<Value> =
                    patterns.iter().enumerate().filter(|(i, _)| pats >> i & 1 == 1).map(|(_, p)| p.1.clone()).collect();
                let ptr0 = patterns.iter().enumerate().find(|(i, _)| pats >> i & 1 == 1).map(|(_, p)| p.2.clone()).unwrap_or_default();
                let s = if parts.len() == 1 { parts[0].clone() } else { keyword("allOf", Value::Array(parts)) };
                self.schema(&s, &ptr0)?
            };
            let Some(value) = value else { continue };
            let key = match dfa.emit(&|t| t == sig, 0, None, &mut self.rules, max_states) {
                Ok(Some(k)) => k,
                Ok(None) => continue,
                Err(TooLarge) => {
                    self.unsupported(names_keyword, ptr, "property name patterns exceed max_dfa_states")?;
                    continue;
                }
            };
            let key = self.quoted(key);
            alts.push(self.member(key, value));
        }
        Ok(if alts.is_empty() { None } else { Some(self.rules.alt(&alts)) })
    }

    /// The languages of `propertyNames` (a key is in all of them): its
    /// pattern, regular format, length bounds and enum or const of strings;
    /// `None` when no name is allowed.
    fn name_languages(&mut self, ns: &Value, ptr: &str) -> Res<Option<Vec<Re>>> {
        let nptr = child(ptr, "propertyNames");
        let m = match ns {
            Value::Bool(true) => return Ok(Some(Vec::new())),
            Value::Bool(false) => return Ok(None),
            Value::Object(o) => self.flatten(o, &nptr)?,
            _ => return Err(invalid("propertyNames", ptr, "a schema must be an object or a boolean")),
        };
        let mut res = Vec::new();
        for (k, v) in &m {
            match k.as_str() {
                k if is_annotation(k) => {}
                "type" if lists_type(v, "string") => {}
                "pattern" | PATTERNS => {
                    let patterns = if k == PATTERNS { v.as_array().map_or(&[][..], Vec::as_slice) } else { std::slice::from_ref(v) };
                    for p in patterns {
                        let p = p.as_str().ok_or_else(|| invalid("pattern", &nptr, "must be a string"))?;
                        match self.pattern(p) {
                            Ok(re) => res.push(Re::clone(&re)),
                            Err(e @ regex::PatternError::Unsupported(_)) => self.unsupported("propertyNames", &nptr, &e.to_string())?,
                            Err(e) => return Err(invalid("pattern", &nptr, &e.to_string())),
                        }
                    }
                }
                "format" => {
                    let f = v.as_str().unwrap_or("");
                    if let Some(p) = format::pattern(f) {
                        res.push(Re::clone(&*self.pattern(p).map_err(|e| invalid("format", &nptr, &e.to_string()))?));
                    } else if format::UNSUPPORTED.contains(&f) {
                        self.unsupported("propertyNames", &nptr, "a format in propertyNames that is not a regular language here")?;
                    }
                }
                "maxLength" | "minLength" => {
                    if k == "minLength" && m.contains_key("maxLength") {
                        continue; // (with maxLength, one language for both)
                    }
                    let lo = count(&m, "minLength", &nptr)?.unwrap_or(0);
                    let hi = count(&m, "maxLength", &nptr)?;
                    let to = |x: u64| u32::try_from(x).unwrap_or(u32::MAX);
                    res.push(Re::Repeat(Box::new(Re::Set(regex::CharSet::any())), to(lo), hi.map(to)));
                }
                "enum" | "const" => {
                    let values = if k == "const" { std::slice::from_ref(v) } else { v.as_array().map_or(&[][..], Vec::as_slice) };
                    let names: Vec<Re> = values.iter().filter_map(Value::as_str).map(literal_re).collect();
                    if names.is_empty() {
                        return Ok(None);
                    }
                    res.push(Re::Alt(names));
                }
                _ => {
                    self.unsupported("propertyNames", &nptr, &format!("{k} in propertyNames"))?;
                }
            }
        }
        Ok(Some(res))
    }
}

/// The state of [`Compiler::member_set`] after which only the object's end
/// may come.
const FINAL: u32 = u32::MAX;

/// An automaton being built: states `(accepts, edges' first, end)`, and
/// their edges `(expression, state)`.
#[derive(Default)]
struct Automaton {
    states: Vec<(bool, u32, u32)>,
    edges: Vec<(Ex, u32)>,
}

/// What an object's members in any order depend on: its members (name,
/// expression, required), its extras rule and its member counts.
pub(super) type MemberKey = (Vec<(String, Ex, bool)>, Option<Ex>, u64, Option<u64>);

/// The fixed parts of an object's member sequence.
struct MemberShape<'e> {
    entries: &'e [(String, Ex, bool)],
    extra: Option<Ex>,
    min_p: u64,
    max_p: Option<u64>,
    cap: u64,
    /// `(extra (, extra)* ,)?`: undeclared members that may come before a
    /// declared one (only when members are not counted).
    lead_extras: Option<Ex>,
    /// In any order: the separator before a declared member that is not the
    /// first, with `lead_extras`, as one called rule. Every set of members
    /// shares it, so the token cache analyses what follows a member once
    /// per object rather than once per set.
    sep: Option<Ex>,
}
