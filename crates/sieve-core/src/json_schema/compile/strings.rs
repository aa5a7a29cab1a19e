//! Strings: length bounds, patterns, formats and excluded strings, and
//! long repetitions split into blocks.

use super::keywords::{count, is_inert, type_list};
use super::{invalid, Compiler, Expr, Res, NOT_PATTERNS, NOT_STRINGS, PATTERNS};
use super::super::dfa::{Dfa, TooLarge};
use super::super::format;
use super::super::gbnf::{self, Encoding, Ex, Writer};
use super::super::regex::{self, Re};
use serde_json::{Map, Value};
use std::rc::Rc;

impl<'a> Compiler<'a> {
    pub(super) fn string(&mut self, m: &Map<String, Value>, ptr: &str) -> Res<Expr> {
        let min_len = count(m, "minLength", ptr)?.unwrap_or(0);
        let max_len = count(m, "maxLength", ptr)?;
        if max_len.is_some_and(|x| x < min_len) {
            return Ok(None);
        }
        let Lang { res, banned, .. } = self.string_language(m, ptr)?;
        if res.is_empty() && banned.is_empty() {
            let body = self.repeat(self.chr, min_len, max_len)?;
            let body = self.quoted(body);
            return Ok(Some(self.add("string", body)?));
        }
        // One pattern within its bounds is an expression of the grammar as
        // it is, unless it searches: then the minimal DFA where it fits
        // (see `Dfa::search`).
        let single = match &res[..] {
            [(re, _)] if banned.is_empty() && re.length_range().is_some_and(|r| within(r, min_len, max_len)) => Some(Rc::clone(re)),
            [(re, _)] if banned.is_empty() => with_length(Re::clone(re), min_len, max_len).map(Rc::new),
            _ => None,
        };
        if let Some(re) = single.as_ref().filter(|re| !re.is_search()) {
            // A parsed pattern as it is lives as long as the compiler: its
            // address names its translation.
            let (shared, key) = (Rc::ptr_eq(re, &res[0].0), Rc::as_ptr(re) as usize);
            if let Some(&e) = self.strings_of.get(&key).filter(|_| shared) {
                return Ok(e);
            }
            let e = self.string_re(re)?;
            if shared {
                self.strings_of.insert(key, e);
            }
            return Ok(e);
        }
        // Intersections: every pattern/format and the length bounds at once,
        // minus the strings a `not` excluded.
        let mut exprs: Vec<Re> = res.iter().map(|r| Re::clone(&r.0)).collect();
        if exprs.is_empty() {
            exprs.push(Re::any_string());
        }
        let all = (1u64 << exprs.len()) - 1;
        let mut forbid = 0u64;
        for b in banned {
            if exprs.len() >= 63 {
                self.unsupported("pattern", ptr, "more than 63 patterns on one string")?;
                break;
            }
            exprs.push(b);
            forbid |= 1 << (exprs.len() - 1);
        }
        // The patterns' automaton is bounded as one automaton; its product
        // with the length counts is written into the grammar, and bounded
        // as the grammar's states are. Each error names the limit it met.
        let max_states = self.limits.max_dfa_states;
        let dfa = if single.is_some() { Dfa::search(&exprs[0], max_states) } else { Dfa::tagged(&exprs, all, max_states) };
        let accept = |t: u64| t & all == all && t & forbid == 0;
        let built = match dfa {
            Ok(d) => d.emit(&accept, min_len, max_len, &mut self.rules, self.limits.max_grammar_states).map_err(|_| "max_grammar_states"),
            Err(TooLarge) => Err("max_dfa_states"),
        };
        match built {
            Ok(Some(body)) => {
                let body = self.quoted(body);
                Ok(Some(self.add("string", body)?))
            }
            Ok(None) => Ok(None),
            // The search as it is: exact, only slower to mask.
            Err(_) if let Some(re) = single => self.string_re(&re),
            Err(limit) => {
                let kw = res.first().map_or("not", |r| r.1);
                self.unsupported(kw, ptr, &format!("pattern, format, length bounds and excluded strings together exceed {limit}"))?;
                match res.first() {
                    Some(r) => self.string_re(&r.0),
                    None => Ok(None),
                }
            }
        }
    }

    /// The string language of keyword map `m`: its patterns and format, the
    /// patterns and strings a `not` excluded, and its length bounds.
    fn string_language(&mut self, m: &Map<String, Value>, ptr: &str) -> Res<Lang> {
        let min = count(m, "minLength", ptr)?.unwrap_or(0);
        let max = count(m, "maxLength", ptr)?;
        let mut res: Vec<(Rc<Re>, &'static str)> = Vec::new();
        if let Some(f) = m.get("format").and_then(Value::as_str) {
            if let Some(p) = format::pattern(f) {
                let re = self.pattern(p).map_err(|e| invalid("format", ptr, &e.to_string()))?;
                res.push((re, "format"));
            } else if format::UNSUPPORTED.contains(&f) {
                self.unsupported("format", ptr, &format!("format {f:?} is not a regular language here"))?;
            }
        }
        let more = m.get(PATTERNS).and_then(Value::as_array).cloned().unwrap_or_default();
        for p in m.get("pattern").into_iter().chain(more.iter()) {
            let p = p.as_str().ok_or_else(|| invalid("pattern", ptr, "must be a string"))?;
            match self.pattern(p) {
                Ok(re) => res.push((re, "pattern")),
                Err(e @ regex::PatternError::Unsupported(_)) => self.unsupported("pattern", ptr, &e.to_string())?,
                Err(e) => return Err(invalid("pattern", ptr, &e.to_string())),
            }
        }
        // Languages a `not` excluded: strings, and patterns.
        let mut banned: Vec<Re> = Vec::new();
        for p in m.get(NOT_PATTERNS).and_then(Value::as_array).into_iter().flatten() {
            let p = p.as_str().ok_or_else(|| invalid("not", ptr, "pattern must be a string"))?;
            match self.pattern(p) {
                Ok(re) => banned.push(Re::clone(&re)),
                Err(e @ regex::PatternError::Unsupported(_)) => {
                    self.unsupported("not", ptr, &format!("negated pattern: {e}"))?
                }
                Err(e) => return Err(invalid("pattern", ptr, &e.to_string())),
            }
        }
        let excluded: Vec<&str> = m.get(NOT_STRINGS).and_then(Value::as_array).map(|v| v.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
        if !excluded.is_empty() {
            banned.push(Re::Alt(excluded.iter().map(|x| literal_re(x)).collect()));
        }
        Ok(Lang { res, banned, min, max })
    }

    /// `oneOf` branches that are all strings of one length bounds, as one
    /// automaton of their patterns at once, which accepts where exactly one
    /// branch's language does: overlapping branches need no negation each
    /// (which would make an automaton of every branch's patterns per
    /// branch). `None` where the branches are not such strings or the
    /// automaton is over the limits (they are translated one by one then).
    pub(super) fn one_of_strings(&mut self, maps: &[(&Map<String, Value>, &str)]) -> Res<Option<Expr>> {
        if maps.len() < 2 || !maps.iter().all(|(m, _)| is_string_only(m)) {
            return Ok(None);
        }
        let mut langs = Vec::with_capacity(maps.len());
        for &(m, ptr) in maps {
            langs.push(self.string_language(m, ptr)?);
        }
        let (min, max) = (langs[0].min, langs[0].max);
        if langs.iter().any(|l| (l.min, l.max) != (min, max)) {
            return Ok(None);
        }
        if max.is_some_and(|x| x < min) {
            return Ok(Some(None));
        }
        // Each distinct expression once; per branch, the bits of those that
        // must match and of those that must not. The first, any string,
        // keeps alive the strings that only a `not` constrains.
        let mut exprs: Vec<Re> = vec![Re::any_string()];
        let mut bit = |re: &Re| -> Option<u64> {
            let i = exprs.iter().position(|e| e == re).unwrap_or_else(|| {
                exprs.push(re.clone());
                exprs.len() - 1
            });
            (i < 64).then(|| 1u64 << i)
        };
        let mut parts: Vec<(u64, u64)> = Vec::with_capacity(langs.len());
        for l in &langs {
            let need = l.res.iter().try_fold(1, |acc, r| bit(&r.0).map(|b| acc | b));
            let ban = l.banned.iter().try_fold(0, |acc, r| bit(r).map(|b| acc | b));
            let (Some(need), Some(ban)) = (need, ban) else { return Ok(None) };
            parts.push((need, ban));
        }
        if exprs.len() == 1 {
            return Ok(None);
        }
        let required = parts.iter().fold(u64::MAX, |acc, p| acc & p.0);
        let accept = |t: u64| {
            parts.iter().filter(|&&(need, ban)| t & need == need && t & ban == 0).count() == 1
        };
        let Ok(dfa) = Dfa::tagged(&exprs, required, self.limits.max_dfa_states) else { return Ok(None) };
        match dfa.emit(&accept, min, max, &mut self.rules, self.limits.max_grammar_states) {
            Ok(Some(body)) => {
                let body = self.quoted(body);
                Ok(Some(Some(self.add("string", body)?)))
            }
            Ok(None) => Ok(Some(None)),
            Err(TooLarge) => Ok(None),
        }
    }

    /// `unit{min,max}`; bounds above the grammar compiler's 1000 are split
    /// into blocks of 1000 (each count has one split).
    pub(super) fn repeat(&mut self, unit: Ex, min: u64, max: Option<u64>) -> Res<Ex> {
        const B: u64 = 1000;
        let blocks = min > B || max.is_some_and(|m| m > B);
        // Blocks copy their unit thousands of times, at every count they may
        // end at: a string character keeps its `\u` escapes (rare, and a
        // dozen states each copy) in one rule called from every copy. Short
        // escapes (`\n`, `\"`) stay inline, where the masks after their
        // backslash are cheap.
        let unit = if blocks && unit == self.chr { self.lean_chr()? } else { unit };
        // Counts below a block fit a u32.
        let small = |r: &mut Writer, lo: u64, hi: Option<u64>| match hi {
            Some(0) => r.empty(),
            _ => r.repeat(unit, lo as u32, hi.map(|h| h as u32)),
        };
        if !blocks {
            return Ok(small(&mut self.rules, min, max));
        }
        let block = self.rules.repeat(unit, B as u32, Some(B as u32));
        let block = self.add("block", block)?;
        let mut parts = Vec::new();
        if min > 0 {
            parts.push(self.repeat(block, min / B, Some(min / B))?);
            parts.push(small(&mut self.rules, min % B, Some(min % B)));
        }
        match max {
            None => parts.push(self.rules.repeat(unit, 0, None)),
            Some(m) => {
                let n = m - min;
                let (q, r) = (n / B, n % B);
                if q == 0 {
                    parts.push(small(&mut self.rules, 0, Some(r)));
                } else {
                    let fewer = self.repeat(block, 0, Some(q - 1))?;
                    let full = self.repeat(block, q, Some(q))?;
                    let fewer = [fewer, small(&mut self.rules, 0, Some(B - 1))];
                    let full = [full, small(&mut self.rules, 0, Some(r))];
                    let (fewer, full) = (self.rules.seq(&fewer), self.rules.seq(&full));
                    parts.push(self.rules.alt(&[fewer, full]));
                }
            }
        }
        Ok(self.rules.seq(&parts))
    }

    /// See [`Compiler::lean_chr`].
    fn lean_chr(&mut self) -> Res<Ex> {
        if let Some(c) = self.lean_chr {
            return Ok(c);
        }
        let unicode_escape = gbnf::json_unicode_escape(&mut self.rules, self.hex2);
        let unicode_escape = self.opaque("unicode", unicode_escape)?;
        let c = gbnf::json_char_any(&mut self.rules, unicode_escape);
        let c = self.add("char", c)?;
        self.lean_chr = Some(c);
        Ok(c)
    }

    fn string_re(&mut self, re: &Re) -> Res<Expr> {
        let chr = self.chr;
        match gbnf::emit(re, Encoding::JsonString, &mut self.rules, chr) {
            Some(e) => {
                let body = self.quoted(e);
                Ok(Some(self.add("string", body)?))
            }
            None => Ok(None),
        }
    }
}

/// Fit a string language to length bounds without intersecting automata: a
/// branch of fixed length is kept or dropped, a branch with one unbounded
/// repetition of single characters has that repetition's bounds narrowed.
fn with_length(re: Re, min: u64, max: Option<u64>) -> Option<Re> {
    if within(re.length_range()?, min, max) {
        return Some(re);
    }
    match re {
        Re::Alt(branches) => {
            let mut out = Vec::new();
            for b in branches {
                let (blo, bhi) = match b.length_range() {
                    Some(x) => x,
                    None => continue,
                };
                if bhi.is_some_and(|h| h < min) || max.is_some_and(|m| blo > m) {
                    continue;
                }
                out.push(with_length(b, min, max)?);
            }
            Some(Re::Alt(out))
        }
        Re::Concat(parts) => {
            let mut var: Option<usize> = None;
            let mut fixed = 0u64;
            for (i, p) in parts.iter().enumerate() {
                match p.length_range() {
                    Some((a, Some(b))) if a == b => fixed += a,
                    _ => {
                        if var.is_some() {
                            return None;
                        }
                        var = Some(i);
                    }
                }
            }
            let i = var?;
            let mut parts = parts;
            let Re::Repeat(inner, rmin, rmax) = &parts[i] else { return None };
            if !matches!(**inner, Re::Set(_)) {
                return None;
            }
            let new_min = u64::from(*rmin).max(min.saturating_sub(fixed));
            let new_max = match (rmax, max) {
                (Some(a), Some(m)) => Some(u64::from(*a).min(m.checked_sub(fixed)?)),
                (Some(a), None) => Some(u64::from(*a)),
                (None, Some(m)) => Some(m.checked_sub(fixed)?),
                (None, None) => None,
            };
            if new_max.is_some_and(|x| x < new_min) {
                return Some(Re::Alt(Vec::new()));
            }
            let new_min = u32::try_from(new_min).ok()?;
            let new_max = new_max.map(u32::try_from).transpose().ok()?;
            parts[i] = Re::Repeat(inner.clone(), new_min, new_max);
            Some(Re::Concat(parts))
        }
        Re::Repeat(inner, rmin, rmax) if matches!(*inner, Re::Set(_)) => {
            with_length(Re::Concat(vec![Re::Repeat(inner, rmin, rmax)]), min, max)
        }
        _ => None,
    }
}

/// Whether lengths from `lo` to `hi` (unbounded: `None`) are within the bounds.
fn within((lo, hi): (u64, Option<u64>), min: u64, max: Option<u64>) -> bool {
    lo >= min && max.is_none_or(|m| hi.is_some_and(|h| h <= m))
}

/// The one-string language of `s`.
pub(super) fn literal_re(s: &str) -> Re {
    Re::Concat(s.chars().map(|c| Re::Set(regex::CharSet::single(c as u32))).collect())
}

/// A string language: every pattern (or format) of `res` matches, none of
/// `banned` does, and the length is within `min..=max`.
struct Lang {
    res: Vec<(Rc<Re>, &'static str)>,
    banned: Vec<Re>,
    min: u64,
    max: Option<u64>,
}

/// Whether `m` allows strings alone and says nothing but what
/// [`Compiler::string_language`] reads.
fn is_string_only(m: &Map<String, Value>) -> bool {
    m.get("type").is_some_and(|t| type_list(t) == [Value::String("string".into())])
        && m.keys().all(|k| {
            matches!(k.as_str(), "type" | "pattern" | "format" | "minLength" | "maxLength" | PATTERNS | NOT_PATTERNS | NOT_STRINGS) || is_inert(k)
        })
}
