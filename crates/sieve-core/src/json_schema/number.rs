//! Numeric ranges as regular expressions over JSON number text, exact for
//! decimal bounds of any size (digits are compared as strings, never floats).
//!
//! A bounded number is written without an exponent (every value in range stays
//! reachable in plain decimal form); an unbounded one takes the full JSON syntax.
//! Integers also accept a zero fraction (`1.0` is the integer 1).

use super::regex::{CharSet, Re};

/// A decimal value: sign, integer digits (no leading zeros, `"0"` for zero),
/// fraction digits (no trailing zeros).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dec {
    /// True for values below zero.
    pub neg: bool,
    /// Integer part digits.
    pub int: String,
    /// Fraction digits.
    pub frac: String,
}

/// Most digits a bound may expand to (bounds like `1e308` stay fine).
const MAX_DIGITS: i64 = 400;

impl Dec {
    /// Parse JSON number text (exponents included).
    pub fn parse(text: &str) -> Option<Dec> {
        let (neg, rest) = match text.strip_prefix('-') {
            Some(r) => (true, r),
            None => (false, text),
        };
        let (mant, exp) = match rest.find(['e', 'E']) {
            Some(i) => (&rest[..i], rest[i + 1..].parse::<i64>().ok()?),
            None => (rest, 0),
        };
        let (ip, fp) = match mant.find('.') {
            Some(i) => (&mant[..i], &mant[i + 1..]),
            None => (mant, ""),
        };
        if ip.is_empty() || !ip.bytes().chain(fp.bytes()).all(|b| b.is_ascii_digit()) {
            return None;
        }
        let digits: String = format!("{ip}{fp}");
        let point = ip.len() as i64 + exp;
        if !(-MAX_DIGITS..=MAX_DIGITS).contains(&point) {
            return None;
        }
        let (int, frac) = if point <= 0 {
            ("0".to_string(), format!("{}{}", "0".repeat((-point) as usize), digits))
        } else if point as usize >= digits.len() {
            (format!("{}{}", digits, "0".repeat(point as usize - digits.len())), String::new())
        } else {
            (digits[..point as usize].to_string(), digits[point as usize..].to_string())
        };
        let int = int.trim_start_matches('0');
        let int = if int.is_empty() { "0".to_string() } else { int.to_string() };
        let frac = frac.trim_end_matches('0').to_string();
        let neg = neg && !(int == "0" && frac.is_empty());
        Some(Dec { neg, int, frac })
    }

    fn zero() -> Dec {
        Dec { neg: false, int: "0".into(), frac: String::new() }
    }

    /// Whether the value is an integer.
    pub fn is_integer(&self) -> bool {
        self.frac.is_empty()
    }

    fn mag_cmp(&self, other: &Dec) -> std::cmp::Ordering {
        self.int
            .len()
            .cmp(&other.int.len())
            .then_with(|| self.int.cmp(&other.int))
            .then_with(|| self.frac.cmp(&other.frac))
    }

    /// Total order on values.
    pub fn cmp_value(&self, other: &Dec) -> std::cmp::Ordering {
        match (self.neg, other.neg) {
            (false, true) => std::cmp::Ordering::Greater,
            (true, false) => std::cmp::Ordering::Less,
            (false, false) => self.mag_cmp(other),
            (true, true) => other.mag_cmp(self),
        }
    }
}

/// A bound: value and whether it is exclusive.
pub type Bound = (Dec, bool);

fn digits(lo: u8, hi: u8) -> Re {
    Re::Set(CharSet::from_ranges(vec![(u32::from(b'0' + lo), u32::from(b'0' + hi))]))
}
fn any_digits(min: u32) -> Re {
    Re::Repeat(Box::new(digits(0, 9)), min, None)
}
fn ch(c: u8) -> Re {
    Re::Set(CharSet::single(u32::from(c)))
}
fn alt(mut v: Vec<Re>) -> Re {
    if v.len() == 1 { v.remove(0) } else { Re::Alt(v) }
}
fn cat(v: Vec<Re>) -> Re {
    Re::Concat(v)
}

fn inc(s: &str) -> String {
    let mut d: Vec<u8> = s.bytes().collect();
    let mut i = d.len();
    loop {
        if i == 0 {
            d.insert(0, b'1');
            break;
        }
        i -= 1;
        if d[i] == b'9' {
            d[i] = b'0';
        } else {
            d[i] += 1;
            break;
        }
    }
    String::from_utf8(d).unwrap_or_default()
}

fn dec(s: &str) -> Option<String> {
    if s == "0" {
        return None;
    }
    let mut d: Vec<u8> = s.bytes().collect();
    let mut i = d.len();
    while i > 0 {
        i -= 1;
        if d[i] == b'0' {
            d[i] = b'9';
        } else {
            d[i] -= 1;
            break;
        }
    }
    let out = String::from_utf8(d).unwrap_or_default();
    let t = out.trim_start_matches('0');
    Some(if t.is_empty() { "0".into() } else { t.into() })
}

fn nat_le(a: &str, b: &str) -> bool {
    a.len() < b.len() || (a.len() == b.len() && a <= b)
}

/// Same-length digit strings between `a` and `b` inclusive (`a <= b`):
/// by first digit, at most one alternative continuing above `a`'s rest and
/// one below `b`'s, so the expression grows linearly with the length.
fn same_len(a: &[u8], b: &[u8]) -> Re {
    let (Some((&a0, a_rest)), Some((&b0, b_rest))) = (a.split_first(), b.split_first()) else { return Re::empty() };
    if a0 == b0 {
        return cat(vec![ch(a0), same_len(a_rest, b_rest)]);
    }
    let n = a_rest.len();
    let (mut lo, mut hi) = (a0 - b'0', b0 - b'0');
    let mut v = Vec::new();
    if a_rest.iter().any(|&d| d != b'0') {
        v.push(cat(vec![ch(a0), same_len(a_rest, &vec![b'9'; n])]));
        lo += 1;
    }
    let below_b = b_rest.iter().any(|&d| d != b'9').then(|| cat(vec![ch(b0), same_len(&vec![b'0'; n], b_rest)]));
    if below_b.is_some() {
        hi -= 1;
    }
    if lo <= hi {
        v.push(cat(vec![digits(lo, hi), Re::Repeat(Box::new(digits(0, 9)), n as u32, Some(n as u32))]));
    }
    v.extend(below_b);
    alt(v)
}

/// Canonical natural numbers in `[lo, hi]` (`hi` unbounded when `None`).
fn nat_range(lo: &str, hi: Option<&str>) -> Option<Re> {
    if let Some(h) = hi
        && !nat_le(lo, h) {
            return None;
        }
    let mut v = Vec::new();
    let max_len = hi.map_or(lo.len(), str::len);
    for len in lo.len()..=max_len {
        let a = if len == lo.len() {
            lo.to_string()
        } else {
            format!("1{}", "0".repeat(len - 1))
        };
        let b = match hi {
            Some(h) if len == h.len() => h.to_string(),
            _ => "9".repeat(len),
        };
        v.push(same_len(a.as_bytes(), b.as_bytes()));
    }
    if hi.is_none() {
        v.push(cat(vec![digits(1, 9), any_digits(lo.len() as u32)]));
    }
    Some(alt(v))
}

/// Fraction digit strings `D` (possibly empty) as (accepts empty, non-empty forms).
type Frac = (bool, Option<Re>);

fn frac_any() -> Frac {
    (true, Some(any_digits(1)))
}

fn digit_of(s: &[u8]) -> (u8, &[u8]) {
    match s.split_first() {
        Some((d, rest)) => (d - b'0', rest),
        None => (0, s),
    }
}

fn with_first(d: u8, rest: Frac) -> Option<Re> {
    let mut v = Vec::new();
    if rest.0 {
        v.push(Re::empty());
    }
    if let Some(r) = rest.1 {
        v.push(r);
    }
    if v.is_empty() {
        return None;
    }
    Some(cat(vec![ch(b'0' + d), alt(v)]))
}

fn is_zero(s: &[u8]) -> bool {
    s.iter().all(|&b| b == b'0')
}

/// `0.D` between `0.a` and `0.b` (each side exclusive or not, `None`: open).
fn frac_between(a: Option<(&[u8], bool)>, b: Option<(&[u8], bool)>) -> Frac {
    let a_zero = a.is_none_or(|(s, _)| is_zero(s));
    let a_strict = a.is_some_and(|(_, st)| st);
    match (a, b) {
        (None, None) => return frac_any(),
        (Some((sa, false)), None) if is_zero(sa) => return frac_any(),
        (Some((sa, true)), None) if is_zero(sa) => {
            // Any fraction above zero: some non-zero digit.
            let nonzero = cat(vec![Re::Repeat(Box::new(ch(b'0')), 0, None), digits(1, 9), any_digits(0)]);
            return (false, Some(nonzero));
        }
        (_, Some((sb, st))) if is_zero(sb) => {
            // D <= 0 (or < 0): only zero digits.
            let ok = !st && !a_strict && a_zero;
            return if ok { (true, Some(Re::Repeat(Box::new(ch(b'0')), 1, None))) } else { (false, None) };
        }
        _ => {}
    }
    let empty = a_zero && !a_strict;
    let (a0, arest) = match a {
        Some((s, _)) => digit_of(s),
        None => (0, &[][..]),
    };
    let (b0, brest) = match b {
        Some((s, _)) => digit_of(s),
        None => (10, &[][..]),
    };
    let mut v = Vec::new();
    for d in 0..=9u8 {
        if d < a0 || d > b0 {
            continue;
        }
        let lower = if d == a0 { a.map(|(_, st)| (arest, st)) } else { None };
        let upper = if d == b0 { b.map(|(_, st)| (brest, st)) } else { None };
        let rest = match (lower, upper) {
            (None, None) => frac_any(),
            (l, u) => frac_between(l, u),
        };
        if let Some(r) = with_first(d, rest) {
            v.push(r);
        }
    }
    (empty, if v.is_empty() { None } else { Some(alt(v)) })
}

fn fraction(f: Frac) -> Option<Re> {
    let dot = |r: Re| cat(vec![ch(b'.'), r]);
    match f {
        (true, Some(r)) => Some(Re::Repeat(Box::new(dot(r)), 0, Some(1))),
        (true, None) => Some(Re::empty()),
        (false, Some(r)) => Some(dot(r)),
        (false, None) => None,
    }
}

/// Magnitudes `I(.F)?` between two non-negative bounds.
fn magnitude(lo: Option<&Bound>, hi: Option<&Bound>) -> Option<Re> {
    let zero = (Dec::zero(), false);
    let lo = lo.unwrap_or(&zero);
    if let Some(h) = hi {
        match lo.0.mag_cmp(&h.0) {
            std::cmp::Ordering::Greater => return None,
            std::cmp::Ordering::Equal if lo.1 || h.1 => return None,
            _ => {}
        }
    }
    let (a, b) = (&lo.0.int, hi.map(|h| h.0.int.as_str()));
    let lo_f = Some((lo.0.frac.as_bytes(), lo.1));
    let mut v = Vec::new();
    let mut push = |int: Option<Re>, f: Frac| {
        if let (Some(i), Some(fr)) = (int, fraction(f)) {
            v.push(cat(vec![i, fr]));
        }
    };
    match hi {
        Some(h) if h.0.int == *a => {
            push(nat_range(a, Some(a)), frac_between(lo_f, Some((h.0.frac.as_bytes(), h.1))));
        }
        _ => {
            push(nat_range(a, Some(a)), frac_between(lo_f, None));
            let next = inc(a);
            match (hi, b) {
                (Some(h), Some(b)) => {
                    if let Some(below) = dec(b)
                        && nat_le(&next, &below) {
                            push(nat_range(&next, Some(&below)), frac_any());
                        }
                    push(nat_range(b, Some(b)), frac_between(None, Some((h.0.frac.as_bytes(), h.1))));
                }
                _ => push(nat_range(&next, None), frac_any()),
            }
        }
    }
    if v.is_empty() { None } else { Some(alt(v)) }
}

/// Integer bounds from real ones: the least integer allowed and the greatest.
fn int_bounds(lo: Option<&Bound>, hi: Option<&Bound>) -> (Option<Dec>, Option<Dec>) {
    let lo = lo.map(|(d, excl)| {
        // ceil, plus one when exclusive and already an integer
        let up = !d.neg && (!d.frac.is_empty() || *excl) || d.neg && d.frac.is_empty() && *excl;
        let int = if d.neg {
            if up { dec(&d.int).unwrap_or_else(|| "0".into()) } else { d.int.clone() }
        } else if up {
            inc(&d.int)
        } else {
            d.int.clone()
        };
        let neg = d.neg && int != "0";
        Dec { neg, int, frac: String::new() }
    });
    let hi = hi.map(|(d, excl)| {
        let down = if d.neg { !d.frac.is_empty() || *excl } else { d.frac.is_empty() && *excl };
        let (neg, int) = if d.neg {
            (true, if down { inc(&d.int) } else { d.int.clone() })
        } else if down {
            match dec(&d.int) {
                Some(i) => (false, i),
                None => (true, "1".into()),
            }
        } else {
            (false, d.int.clone())
        };
        let neg = neg && int != "0";
        Dec { neg, int, frac: String::new() }
    });
    (lo, hi)
}

/// Which numbers a range holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Numbers {
    /// Any number.
    Real,
    /// Integers, also written with a zero fraction (`1.0`: drafts 6 on).
    Integer,
    /// Integers written without a fraction (draft 4's `integer` type).
    Whole,
}

/// JSON number text for values in the range, of the kind `numbers` says.
/// Returns `None` when no value is in range.
pub fn range(lo: Option<&Bound>, hi: Option<&Bound>, numbers: Numbers) -> Option<Re> {
    if numbers != Numbers::Real {
        let (lo, hi) = int_bounds(lo, hi);
        let lo = lo.map(|d| (d, false));
        let hi = hi.map(|d| (d, false));
        let body = real_range(lo.as_ref(), hi.as_ref(), true)?;
        if numbers == Numbers::Whole {
            return Some(body);
        }
        let zero_frac = Re::Repeat(Box::new(cat(vec![ch(b'.'), Re::Repeat(Box::new(ch(b'0')), 1, None)])), 0, Some(1));
        return Some(cat(vec![body, zero_frac]));
    }
    if lo.is_none() && hi.is_none() {
        let exp = cat(vec![
            Re::Set(CharSet::from_ranges(vec![(u32::from(b'e'), u32::from(b'e')), (u32::from(b'E'), u32::from(b'E'))])),
            Re::Repeat(Box::new(Re::Set(CharSet::from_ranges(vec![(0x2B, 0x2B), (0x2D, 0x2D)]))), 0, Some(1)),
            any_digits(1),
        ]);
        return Some(cat(vec![
            Re::Repeat(Box::new(ch(b'-')), 0, Some(1)),
            alt(vec![ch(b'0'), cat(vec![digits(1, 9), any_digits(0)])]),
            Re::Repeat(Box::new(cat(vec![ch(b'.'), any_digits(1)])), 0, Some(1)),
            Re::Repeat(Box::new(exp), 0, Some(1)),
        ]));
    }
    real_range(lo, hi, false)
}

fn real_range(lo: Option<&Bound>, hi: Option<&Bound>, integer: bool) -> Option<Re> {
    let mag = |lo: Option<&Bound>, hi: Option<&Bound>| -> Option<Re> {
        if integer {
            let a = lo.map_or("0", |b| b.0.int.as_str());
            let a = if lo.is_some_and(|b| b.1) { inc(a) } else { a.to_string() };
            let b = hi.map(|b| if b.1 { dec(&b.0.int) } else { Some(b.0.int.clone()) });
            match b {
                Some(None) => None,
                Some(Some(b)) => nat_range(&a, Some(&b)),
                None => nat_range(&a, None),
            }
        } else {
            magnitude(lo, hi)
        }
    };
    let zero = (Dec::zero(), false);
    let mut v = Vec::new();
    // Non-negative values: [max(lo, 0), hi].
    let hi_nonneg = hi.is_none_or(|h| !h.0.neg);
    if hi_nonneg {
        let plo = match lo {
            Some(l) if !l.0.neg => l.clone(),
            _ => zero.clone(),
        };
        if let Some(r) = mag(Some(&plo), hi) {
            v.push(r);
        }
    }
    // Negative values: magnitudes in (max(-hi, 0), -lo].
    let lo_neg = lo.is_none_or(|l| l.0.neg);
    if lo_neg {
        let mlo = match hi {
            Some(h) if h.0.neg => (Dec { neg: false, ..h.0.clone() }, h.1),
            _ => (Dec::zero(), true),
        };
        let mhi = lo.map(|l| (Dec { neg: false, ..l.0.clone() }, l.1));
        if let Some(r) = mag(Some(&mlo), mhi.as_ref()) {
            v.push(cat(vec![ch(b'-'), r]));
        }
    }
    if v.is_empty() { None } else { Some(alt(v)) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_canonicalizes() {
        assert_eq!(Dec::parse("1.50e1"), Some(Dec { neg: false, int: "15".into(), frac: String::new() }));
        assert_eq!(Dec::parse("-0.0"), Some(Dec::zero()));
        assert_eq!(Dec::parse("2.5e-3").map(|d| d.frac), Some("0025".into()));
    }

    #[test]
    fn increments() {
        assert_eq!(inc("199"), "200");
        assert_eq!(inc("9"), "10");
        assert_eq!(dec("100").as_deref(), Some("99"));
        assert_eq!(dec("1").as_deref(), Some("0"));
    }

    /// Natural-number ranges agree with comparing every number up to
    /// 12,000, and stay small for long bounds.
    #[test]
    fn natural_ranges_match_a_brute_force_oracle() {
        let bounds = ["0", "7", "10", "99", "100", "109", "990", "1000", "1234", "2000", "9099", "9999", "10000", "10999"];
        for (i, lo) in bounds.iter().enumerate() {
            for hi in bounds[i..].iter().map(Some).chain([None]) {
                let re = nat_range(lo, hi.copied()).unwrap();
                let (l, h): (u32, u32) = (lo.parse().unwrap(), hi.map_or(u32::MAX, |h| h.parse().unwrap()));
                for x in 0..12_000u32 {
                    assert_eq!(re.matches(&x.to_string()), (l..=h).contains(&x), "{lo}..={hi:?} on {x}");
                }
                assert!(!re.matches("01") && !re.matches(""), "{lo}..={hi:?}");
            }
        }
        let long = nat_range("1", Some("9223372036854775807")).unwrap();
        assert!(format!("{long:?}").len() < 20_000);
    }
}
