//! Numbers and integers: bounds, `multipleOf`, and numbers that must not
//! be integers.

use super::keywords::gcd;
use super::{err, invalid, Compiler, Expr, Res, FRACTION, NOT_MULTIPLE};
use super::super::SchemaErrorKind;
use super::super::dfa::{Dfa, TooLarge};
use super::super::gbnf::{self, Encoding, Ex};
use super::super::number::{self, Bound, Dec, Numbers};
use super::super::regex::{self, Re};
use serde_json::{Map, Value};

impl<'a> Compiler<'a> {
    pub(super) fn number_re(&mut self, re: &Option<Re>) -> Res<Option<Ex>> {
        let any = self.chr;
        match re.as_ref().and_then(|r| gbnf::emit(r, Encoding::Raw, &mut self.rules, any)) {
            Some(e) => Ok(Some(self.add("number", e)?)),
            None => Ok(None),
        }
    }

    pub(super) fn number(&mut self, m: &Map<String, Value>, integer: bool, ptr: &str) -> Res<Expr> {
        let dec = |k: &str| -> Res<Option<Dec>> {
            match m.get(k) {
                Some(Value::Number(n)) => {
                    Dec::parse(&n.to_string()).map(Some).ok_or_else(|| invalid(k, ptr, "number out of range"))
                }
                Some(Value::Bool(_)) | None => Ok(None),
                Some(_) => Err(invalid(k, ptr, "must be a number")),
            }
        };
        let excl_flag = |k: &str| m.get(k).and_then(Value::as_bool).unwrap_or(false);
        let mut lo: Option<Bound> = dec("minimum")?.map(|d| (d, excl_flag("exclusiveMinimum")));
        let mut hi: Option<Bound> = dec("maximum")?.map(|d| (d, excl_flag("exclusiveMaximum")));
        if let Some(d) = dec("exclusiveMinimum")?
            && lo.as_ref().is_none_or(|l| d.cmp_value(&l.0).is_ge()) {
                lo = Some((d, true));
            }
        if let Some(d) = dec("exclusiveMaximum")?
            && hi.as_ref().is_none_or(|h| d.cmp_value(&h.0).is_le()) {
                hi = Some((d, true));
            }
        // Draft 4's `integer` type excludes `1.0`; `multipleOf: 1` does not.
        let written = if integer && self.draft04 { Numbers::Whole } else { Numbers::Integer };
        let mut integer = integer;
        if m.get(FRACTION) == Some(&Value::Bool(true)) {
            // Numbers that are not integers, in range, written without an exponent.
            if integer || dec("multipleOf")?.is_some_and(|d| d.is_integer()) {
                return Ok(None);
            }
            if m.contains_key("multipleOf") {
                self.unsupported("multipleOf", ptr, "a fractional multipleOf on numbers that are not integers")?;
            }
            let Some(range) = number::range(lo.as_ref(), hi.as_ref(), Numbers::Real) else { return Ok(None) };
            let frac = regex::parse_pattern("^-?(0|[1-9][0-9]*)\\.[0-9]*[1-9][0-9]*$").map_err(|e| invalid("type", ptr, &e.to_string()))?;
            let max_states = self.limits.max_dfa_states;
            let built = Dfa::tagged(&[range, frac], 3, max_states)
                .and_then(|d| d.emit(&|t| t & 3 == 3, 0, None, &mut self.rules, max_states));
            return match built {
                Ok(Some(body)) => Ok(Some(self.add("number", body)?)),
                Ok(None) => Ok(None),
                Err(TooLarge) => Err(err("not", ptr, SchemaErrorKind::Limit("max_dfa_states"))),
            };
        }
        // Integers whose multiples a `not` excluded.
        let not_multiples: Vec<u64> = m.get(NOT_MULTIPLE).and_then(Value::as_array).map_or(Vec::new(), |ks| ks.iter().filter_map(Value::as_u64).collect());
        if let Some(mo) = dec("multipleOf")? {
            if mo.neg || (mo.int == "0" && mo.frac.is_empty()) {
                return Err(invalid("multipleOf", ptr, "must be positive"));
            }
            if mo.is_integer() {
                let k: u64 = mo.int.parse().unwrap_or(u64::MAX);
                if k == 1 {
                    integer = true;
                } else if lo.is_none() && hi.is_none() && not_multiples.is_empty() {
                    if k <= 10_000 {
                        return Ok(Some(self.multiple_of(k)?));
                    }
                    self.unsupported("multipleOf", ptr, "multipleOf above 10000")?;
                    integer = true;
                } else {
                    if let Some(e) = self.remainders(lo.as_ref(), hi.as_ref(), written, k, &not_multiples, ptr)? {
                        return Ok(e);
                    }
                    integer = true;
                }
            } else if !integer && mo.int == "0" && mo.frac.trim_end_matches('1').chars().all(|c| c == '0') && mo.frac.ends_with('1') && lo.is_none() && hi.is_none() {
                let places = u32::try_from(mo.frac.len()).unwrap_or(u32::MAX);
                let r = &mut self.rules;
                let (digit, zero, point) = (r.ranges(&[(0x30, 0x39)]), r.lit("0"), r.lit("."));
                let places = r.repeat(digit, 1, Some(places));
                let zeros = r.repeat(zero, 0, None);
                let frac = r.seq(&[point, places, zeros]);
                let frac = r.opt(frac);
                let body = [self.sign(), self.natural(), frac];
                let body = self.rules.seq(&body);
                return Ok(Some(self.add("number", body)?));
            } else if !integer {
                self.unsupported("multipleOf", ptr, "a fractional multipleOf other than a power of ten without bounds")?;
            }
        }
        if !not_multiples.is_empty() {
            if integer {
                if let Some(e) = self.remainders(lo.as_ref(), hi.as_ref(), written, 1, &not_multiples, ptr)? {
                    return Ok(e);
                }
            } else {
                self.unsupported("not", ptr, "multiples excluded from numbers that need not be integers")?;
            }
        }
        // Many maps share bounds (none, most often): build each range once.
        let numbers = if integer { written } else { Numbers::Real };
        let key = format!("{lo:?} {hi:?} {numbers:?}");
        if let Some(e) = self.ranges.get(&key) {
            return Ok(*e);
        }
        let e = match number::range(lo.as_ref(), hi.as_ref(), numbers) {
            None => None,
            Some(r) => self.number_re(&Some(r))?,
        };
        self.ranges.insert(key, e);
        Ok(e)
    }

    /// The integers in range (written as `written` says) that are multiples
    /// of `k` and of none of `not`: the range's automaton times the
    /// remainder modulo their least common multiple. `None` when that is
    /// over `max_dfa_states` (an error, or a warning in lenient mode).
    fn remainders(&mut self, lo: Option<&Bound>, hi: Option<&Bound>, written: Numbers, k: u64, not: &[u64], ptr: &str) -> Res<Option<Expr>> {
        let Some(range) = number::range(lo, hi, written) else { return Ok(Some(None)) };
        let modulus = not.iter().try_fold(k, |l, &j| (j > 0).then(|| l / gcd(l, j)).and_then(|x| x.checked_mul(j)));
        let accept = |r: u64| r.is_multiple_of(k) && not.iter().all(|&j| !r.is_multiple_of(j));
        let max_states = self.limits.max_dfa_states;
        let built = modulus
            .ok_or(TooLarge)
            .and_then(|l| Dfa::tagged(&[range], 1, max_states).and_then(|d| d.emit_remainders(l, &accept, &mut self.rules, max_states)));
        match built {
            Ok(Some(body)) => Ok(Some(Some(self.add("multiple", body)?))),
            Ok(None) => Ok(Some(None)),
            Err(TooLarge) => {
                self.unsupported("multipleOf", ptr, "multipleOf with bounds or excluded multiples exceeds max_dfa_states")?;
                Ok(None)
            }
        }
    }

    fn multiple_of(&mut self, k: u64) -> Res<Ex> {
        let names: Vec<Ex> = (0..k).map(|_| self.rules.reserve("mod")).collect();
        for r in 0..k {
            let mut alts = Vec::new();
            if r == 0 {
                alts.push(self.rules.empty());
            }
            let mut by_target: Vec<(u64, Vec<(u32, u32)>)> = Vec::new();
            for d in 0..10u32 {
                let t = (r * 10 + u64::from(d)) % k;
                let c = 0x30 + d;
                match by_target.iter_mut().find(|x| x.0 == t) {
                    Some(x) => x.1.push((c, c)),
                    None => by_target.push((t, vec![(c, c)])),
                }
            }
            for (t, ds) in by_target {
                let digits = self.rules.ranges(&regex::CharSet::from_ranges(ds).0);
                alts.push(self.rules.seq(&[digits, names[t as usize]]));
            }
            let body = self.rules.alt(&alts);
            self.rules.define(names[r as usize], body);
        }
        let mut firsts = vec![self.rules.lit("0")];
        for d in 1..10u8 {
            let digit = self.rules.lit(&d.to_string());
            firsts.push(self.rules.seq(&[digit, names[(u64::from(d) % k) as usize]]));
        }
        let r = &mut self.rules;
        let int = r.alt(&firsts);
        let (point, zero) = (r.lit("."), r.lit("0"));
        let zeros = r.repeat(zero, 1, None);
        let frac = r.seq(&[point, zeros]);
        let frac = r.opt(frac);
        let body = [self.sign(), int, frac];
        let body = self.rules.seq(&body);
        self.add("multiple", body)
    }

    /// An optional minus sign.
    fn sign(&mut self) -> Ex {
        let minus = self.rules.lit("-");
        self.rules.opt(minus)
    }

    /// The digits of a natural number: `0`, or no leading zero.
    fn natural(&mut self) -> Ex {
        let r = &mut self.rules;
        let (zero, lead, digit) = (r.lit("0"), r.ranges(&[(0x31, 0x39)]), r.ranges(&[(0x30, 0x39)]));
        let digits = r.repeat(digit, 0, None);
        let more = r.seq(&[lead, digits]);
        r.alt(&[zero, more])
    }
}
