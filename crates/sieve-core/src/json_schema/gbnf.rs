//! Building the grammar: a rule table with shared bodies, literals,
//! character classes, and regular expressions over characters either raw
//! (numbers) or inside a JSON string (each character in its literal or
//! escaped JSON form). Expressions are built as trees
//! ([`crate::gbnf::Rules`]), never as text: the grammar compiler takes them
//! as they are, and [`Writer::finish`] can write them as GBNF.

use super::regex::{CharSet, Re};
use crate::gbnf::{Expr, Rules, UNDEFINED};
use crate::hash::{FastMap, TextMap};
use std::fmt::Write;
use std::sync::LazyLock;

/// An expression of the grammar being built (an index into its [`Rules`]).
pub type Ex = u32;

/// The JSON-string forms a character may take here. Only the escapes JSON
/// requires (and `\/`) are generated, so every accepted spelling decodes to a
/// character of the set and every character keeps one spelling.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Encoding {
    /// Characters as themselves (numbers, literal syntax).
    Raw,
    /// Characters as they appear between the quotes of a JSON string.
    JsonString,
}

/// Rules under construction, and the expressions they are built from.
/// Identical bodies share one rule.
#[derive(Default)]
pub struct Writer {
    g: Rules,
    /// A rule for every escape JSON requires (and `\/`), once defined
    /// (see [`Writer::set_escape`]).
    escape: Option<Ex>,
    /// References to rules added with [`Writer::add`], by their body.
    by_body: FastMap<Ex, Ex>,
    /// [`json_char`] of each set met (with `escape`), by its ranges:
    /// automata built for keys and patterns meet the same sets state after
    /// state.
    chars: TextMap<Box<[(u32, u32)]>, Option<Ex>>,
}

impl Writer {
    /// Add (or reuse) a rule with this body; returns a reference to it.
    pub fn add(&mut self, hint: &str, body: Ex) -> Ex {
        if let Some(&r) = self.by_body.get(&body) {
            return r;
        }
        let r = self.reserve(hint);
        self.define(r, body);
        self.by_body.insert(body, r);
        r
    }

    /// A reference to a new rule, defined later with [`Writer::define`]
    /// (recursion).
    pub fn reserve(&mut self, hint: &str) -> Ex {
        let name = fresh(hint, self.g.rules.len());
        let rule = self.g.add_rule(name);
        self.g.reference(rule)
    }

    /// Gives the reserved rule `r` (a reference) its body.
    pub fn define(&mut self, r: Ex, body: Ex) {
        if let Expr::Ref { rule } = self.g.expr(r)
            && let Some(rule) = self.g.rules.get_mut(rule as usize)
        {
            rule.body = body;
        }
    }

    /// Names the rule for every escape JSON requires (and `\/`).
    pub fn set_escape(&mut self, rule: Ex) {
        self.escape = Some(rule);
        self.chars.clear();
    }

    /// [`json_char`] of the set of `ranges` (sorted, apart) with this
    /// grammar's `escape` rule, memoized.
    pub fn json_char(&mut self, ranges: &[(u32, u32)]) -> Option<Ex> {
        if let Some(c) = self.chars.get(ranges) {
            return *c;
        }
        let c = json_char(self, &CharSet(ranges.to_vec()));
        self.chars.insert(ranges.into(), c);
        c
    }

    /// The grammar's size so far, in bytes of its expressions (a size
    /// limit's measure).
    pub fn size(&self) -> usize {
        self.g.size()
    }

    /// The literal string `s`.
    pub fn lit(&mut self, s: &str) -> Ex {
        self.g.literal(s.as_bytes())
    }

    /// The empty string.
    pub fn empty(&mut self) -> Ex {
        self.g.empty()
    }

    /// Whether `e` is the empty string.
    pub fn is_empty(&self, e: Ex) -> bool {
        matches!(self.g.expr(e), Expr::Literal { first, end } | Expr::Seq { first, end } if first == end)
    }

    /// An expression that matches nothing.
    pub fn never(&mut self) -> Ex {
        self.g.class(&[])
    }

    /// One character of `set` as itself (see [`class`]).
    pub fn class(&mut self, set: &CharSet) -> Ex {
        class(&mut self.g, set)
    }

    /// One character of the scalar ranges `ranges` (sorted and apart).
    pub fn ranges(&mut self, ranges: &[(u32, u32)]) -> Ex {
        self.g.class(ranges)
    }

    /// `items` one after another.
    pub fn seq(&mut self, items: &[Ex]) -> Ex {
        self.g.seq(items)
    }

    /// Any one of `items`.
    pub fn alt(&mut self, items: &[Ex]) -> Ex {
        self.g.alt(items)
    }

    /// `e` from `min` to `max` times.
    pub fn repeat(&mut self, e: Ex, min: u32, max: Option<u32>) -> Ex {
        self.g.repeat(e, min, max)
    }

    /// An automaton whose edges are expressions: `states[i]` is whether
    /// state `i` accepts and where its edges `(expression, state)` are in
    /// `edges`; state 0 is the first.
    /// `twins` (empty, or one per state) as [`crate::gbnf::State::twin`].
    pub fn automaton(&mut self, states: &[(bool, u32, u32)], edges: &[(Ex, u32)], twins: &[Option<(u32, u32)>]) -> Ex {
        self.g.automaton(states, edges, twins)
    }

    /// `e` or nothing.
    pub fn opt(&mut self, e: Ex) -> Ex {
        self.g.repeat(e, 0, Some(1))
    }

    /// Whether `e` is a reference, a literal or a class (no rule of its
    /// own would make it shorter).
    pub fn is_atom(&self, e: Ex) -> bool {
        matches!(self.g.expr(e), Expr::Ref { .. } | Expr::Literal { .. } | Expr::Class { .. })
    }

    /// The rules, with a rule named `root` of body `root` added: its index
    /// is returned with them. Rules left undefined match nothing.
    pub fn finish(mut self, root: Ex) -> (Rules, u32) {
        let never = self.g.class(&[]);
        for r in &mut self.g.rules {
            if r.body == UNDEFINED {
                r.body = never;
            }
        }
        let r = self.g.add_rule("root".to_string());
        self.g.rules[r as usize].body = root;
        (self.g, r)
    }
}

/// `hint` cleaned (at most 24 letters, digits and inner dashes), then `-`
/// and the index the new rule will have.
fn fresh(hint: &str, index: usize) -> String {
    let mut name = String::with_capacity(32);
    for c in hint.chars().take(24) {
        let c = if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '-' };
        if c != '-' || !name.is_empty() {
            name.push(c);
        }
    }
    name.truncate(name.trim_end_matches('-').len());
    if name.is_empty() {
        name.push('r');
    }
    let _ = write!(name, "-{index}");
    name
}

/// One character of a non-empty `set`: a literal for a single character,
/// else a class (as GBNF text would read it: a class written negated when
/// that is shorter covers the surrogates between its ranges).
fn class(g: &mut Rules, set: &CharSet) -> Ex {
    let neg = set.negate();
    if neg.0.len() < set.0.len() && !neg.is_empty() {
        return g.class(&crate::gbnf::complement(&neg.0));
    }
    if let [(lo, hi)] = set.0[..]
        && lo == hi
        && let Some(c) = char::from_u32(lo)
    {
        return g.literal(c.to_string().as_bytes());
    }
    g.class(&set.0)
}

/// The letter after the backslash of the short escape JSON has for a
/// control or quote character.
fn short_escape(c: u32) -> Option<char> {
    Some(match c {
        0x22 => '"',
        0x5C => '\\',
        0x2F => '/',
        0x08 => 'b',
        0x0C => 'f',
        0x0A => 'n',
        0x0D => 'r',
        0x09 => 't',
        _ => return None,
    })
}

/// One character of `set` spelled as inside a JSON string: the character
/// itself where JSON allows it raw, else its escape(s) (the writer's
/// `escape` rule where the set holds every escapable character).
/// Returns `None` for an empty set.
fn json_char(w: &mut Writer, set: &CharSet) -> Option<Ex> {
    if set.is_empty() {
        return None;
    }
    let sets = &*JSON_SETS;
    let raw = set.intersect(&sets.raw);
    let mut alts = Vec::new();
    let narrow = raw.intersect(&sets.ascii);
    if !narrow.is_empty() {
        alts.push(w.class(&narrow));
    }
    // Its characters beyond ASCII as a rule, one per set (see
    // [`Writer::add`]): the states of a key's or a pattern's automaton that
    // move to one state on them share one copy of their UTF-8 sequences
    // (inlined once per continuation) instead of a copy each.
    let wide = raw.intersect(&sets.wide);
    if !wide.is_empty() {
        let class = w.class(&wide);
        alts.push(w.add("wide", class));
    }
    let escaped = set.intersect(&sets.escapable);
    if let Some(esc) = w.escape.filter(|_| escaped == sets.escapable) {
        alts.push(esc);
        return Some(w.alt(&alts));
    }
    // The escapes, after one backslash: the short ones' letters in one
    // class, and the `\u00XY` escapes of controls (all of them, or one
    // alternative per `X` with its `Y`s, both cases, in one class).
    let all_controls = set.intersect(&sets.controls) == sets.controls;
    let mut after = Vec::new();
    if all_controls {
        let parts = [w.lit("u00"), w.ranges(&[(0x30, 0x31)]), w.ranges(HEX)];
        after.push(w.seq(&parts));
    }
    let mut letters = Vec::new();
    let mut digits: [Vec<(u32, u32)>; 2] = [Vec::new(), Vec::new()];
    for &(a, b) in &escaped.0 {
        for c in a..=b {
            if let Some(e) = short_escape(c) {
                letters.push((e as u32, e as u32));
            }
            if c < 0x20 && !all_controls {
                let hi = char::from_digit(c & 0xF, 16).unwrap_or('0');
                for d in [hi.to_ascii_uppercase(), hi] {
                    digits[(c >> 4) as usize].push((d as u32, d as u32));
                }
            }
        }
    }
    if !letters.is_empty() {
        after.push(w.ranges(&CharSet::from_ranges(letters).0));
    }
    for (x, ys) in digits.into_iter().enumerate().filter(|(_, ys)| !ys.is_empty()) {
        let parts = [w.lit(&format!("u00{x}")), w.ranges(&CharSet::from_ranges(ys).0)];
        after.push(w.seq(&parts));
    }
    if !after.is_empty() {
        let parts = [w.lit("\\"), w.alt(&after)];
        alts.push(w.seq(&parts));
    }
    Some(w.alt(&alts))
}

/// The hex digits.
pub const HEX: &[(u32, u32)] = &[(0x30, 0x39), (0x41, 0x46), (0x61, 0x66)];

/// The sets [`json_char`] splits a character set by, built once.
struct JsonSets {
    /// Characters a JSON string holds as themselves.
    raw: CharSet,
    /// Characters with an escape here: those JSON requires escaped
    /// (controls, `"`, `\`) and `/`.
    escapable: CharSet,
    /// The control characters.
    controls: CharSet,
    /// The ASCII characters, and those beyond.
    ascii: CharSet,
    wide: CharSet,
}

static JSON_SETS: LazyLock<JsonSets> = LazyLock::new(|| {
    let must_escape = CharSet::from_ranges(vec![(0, 0x1F), (0x22, 0x22), (0x5C, 0x5C)]);
    JsonSets {
        raw: must_escape.negate(),
        escapable: must_escape.union(&CharSet::single(0x2F)),
        controls: CharSet::from_ranges(vec![(0, 0x1F)]),
        ascii: CharSet::from_ranges(vec![(0, 0x7F)]),
        wide: CharSet::from_ranges(vec![(0x80, 0x10FFFF)]),
    }
});

/// The characters of JSON's short escapes after their backslash.
fn short_escapes(w: &mut Writer) -> Ex {
    w.ranges(&CharSet::from_ranges("\"\\/bfnrt".chars().map(|c| (c as u32, c as u32)).collect()).0)
}

/// Every escape JSON requires (and `\/`).
pub fn json_escape(w: &mut Writer) -> Ex {
    let backslash = w.lit("\\");
    let short = short_escapes(w);
    let control = [w.lit("u00"), w.ranges(&[(0x30, 0x31)]), w.ranges(HEX)];
    let control = w.seq(&control);
    let after = w.alt(&[short, control]);
    w.seq(&[backslash, after])
}

/// Any one JSON string character, all escapes included, given what follows
/// the `\u` of a Unicode escape (see [`json_unicode_escape`]).
pub fn json_char_any(w: &mut Writer, unicode_escape: Ex) -> Ex {
    let raw = w.ranges(&[(0x20, 0x21), (0x23, 0x5B), (0x5D, 0x10FFFF)]);
    let backslash = w.lit("\\");
    let short = short_escapes(w);
    let u = w.lit("u");
    let unicode = w.seq(&[u, unicode_escape]);
    let after = w.alt(&[short, unicode]);
    let escaped = w.seq(&[backslash, after]);
    w.alt(&[raw, escaped])
}

/// The four hex digits of a `\u` escape (`\uD83D\uDE00`-style surrogate
/// pairs count as the one character they encode), given a rule `hex2` for
/// two hex digits: the last two digits are one reference at the end of each
/// branch, so an inlined copy holds them once.
pub fn json_unicode_escape(w: &mut Writer, hex2: Ex) -> Ex {
    let plain = [w.ranges(&[(0x30, 0x39), (0x41, 0x43), (0x45, 0x46), (0x61, 0x63), (0x65, 0x66)]), w.ranges(HEX), hex2];
    let plain = w.seq(&plain);
    let d = w.ranges(&[(0x44, 0x44), (0x64, 0x64)]);
    let low = [w.ranges(&[(0x30, 0x37)]), hex2];
    let low = w.seq(&low);
    let high = [w.ranges(&[(0x38, 0x39), (0x41, 0x42), (0x61, 0x62)]), hex2, w.lit("\\u"), d, w.ranges(&[(0x43, 0x46), (0x63, 0x66)]), hex2];
    let high = w.seq(&high);
    let surrogate = w.alt(&[low, high]);
    let surrogate = w.seq(&[d, surrogate]);
    w.alt(&[plain, surrogate])
}

/// A regular expression as an expression of the grammar (`any_char`: any
/// one character, for sets of every character inside a JSON string).
pub fn emit(re: &Re, enc: Encoding, w: &mut Writer, any_char: Ex) -> Option<Ex> {
    Some(match re {
        Re::Set(s) => {
            if enc == Encoding::JsonString && *s == CharSet::any() {
                any_char
            } else {
                match enc {
                    Encoding::Raw => {
                        if s.is_empty() {
                            return None;
                        }
                        w.class(s)
                    }
                    Encoding::JsonString => w.json_char(&s.0)?,
                }
            }
        }
        Re::Start | Re::End => return None,
        Re::Concat(parts) => {
            if parts.is_empty() {
                return Some(w.empty());
            }
            let mut items = Vec::with_capacity(parts.len());
            // Merge runs of single characters into one literal.
            let mut run = String::new();
            for p in parts {
                if let Re::Set(s) = p
                    && s.0.len() == 1 && s.0[0].0 == s.0[0].1
                    && (enc == Encoding::Raw || (short_escape(s.0[0].0).is_none() && s.0[0].0 >= 0x20))
                    && let Some(c) = char::from_u32(s.0[0].0)
                {
                    run.push(c);
                    continue;
                }
                if !run.is_empty() {
                    items.push(w.lit(&run));
                    run.clear();
                }
                items.push(emit(p, enc, w, any_char)?);
            }
            if !run.is_empty() {
                items.push(w.lit(&run));
            }
            w.seq(&items)
        }
        Re::Alt(branches) => {
            let alts: Vec<Ex> = branches.iter().filter_map(|b| emit(b, enc, w, any_char)).collect();
            if alts.is_empty() {
                return None;
            }
            w.alt(&alts)
        }
        Re::Repeat(inner, min, max) => {
            let e = match emit(inner, enc, w, any_char) {
                Some(e) => e,
                None => return if *min == 0 { Some(w.empty()) } else { None },
            };
            match max {
                Some(0) => w.empty(),
                _ => w.repeat(e, *min, *max),
            }
        }
    })
}

#[cfg(test)]
impl Writer {
    /// The GBNF text of `body` between a JSON string's quotes, as the start
    /// rule (a test's view of what was built).
    pub fn quoted_text(mut self, body: Ex) -> String {
        let quote = self.lit("\"");
        let root = self.seq(&[quote, body, quote]);
        let (rules, root) = self.finish(root);
        rules.write(root)
    }

    /// The GBNF text of `root` as the start rule.
    pub fn text(self, root: Ex) -> String {
        let (rules, root) = self.finish(root);
        rules.write(root)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_char_escapes_what_json_requires() {
        let spelled = |c: char| {
            let mut w = Writer::default();
            let e = json_char(&mut w, &CharSet::single(c as u32)).unwrap();
            crate::Constraint::gbnf(&w.text(e)).unwrap()
        };
        let q = spelled('"');
        assert!(q.matches(b"\\\"").unwrap() && !q.matches(b"\"").unwrap() && !q.matches(b"\\u0022").unwrap());
        let nl = spelled('\n');
        for text in ["\\n", "\\u000a", "\\u000A"] {
            assert!(nl.matches(text.as_bytes()).unwrap(), "{text}");
        }
        assert!(!nl.matches(b"\n").unwrap() && !nl.matches(b"\\r").unwrap());
    }

    proptest::proptest! {
        /// For any set of controls (with a letter, so not all of them), the
        /// `\u00XY` escapes accepted are exactly those of the set's
        /// characters, in either case.
        #[test]
        fn control_escapes_are_exact(bits in proptest::prelude::any::<u32>()) {
            let mut ranges: Vec<(u32, u32)> = (0..32u32).filter(|c| bits >> c & 1 == 1).map(|c| (c, c)).collect();
            ranges.push(('a' as u32, 'a' as u32));
            let set = CharSet::from_ranges(ranges);
            let mut w = Writer::default();
            let c = json_char(&mut w, &set).unwrap();
            let c = crate::Constraint::gbnf(&w.text(c)).unwrap();
            for ch in 0..32u32 {
                for text in [format!("\\u{ch:04X}"), format!("\\u{ch:04x}")] {
                    proptest::prop_assert_eq!(c.matches(text.as_bytes()).unwrap(), bits >> ch & 1 == 1, "{}", text);
                }
            }
        }
    }

    #[test]
    fn json_char_escapes_are_exact() {
        // The `\u` escapes inline, and in a rule of their own.
        for called in [false, true] {
            let mut w = Writer::default();
            let hex = w.ranges(HEX);
            let hex2 = w.repeat(hex, 2, Some(2));
            let hex2 = w.add("hex2", hex2);
            let mut unicode = json_unicode_escape(&mut w, hex2);
            if called {
                unicode = w.add("unicode", unicode);
            }
            let c = json_char_any(&mut w, unicode);
            json_char_is_exact(&w.text(c));
        }
    }

    fn json_char_is_exact(g: &str) {
        let c = crate::Constraint::gbnf(g).unwrap();
        let re = regex_automata::meta::Regex::new(
            r#"^(?:[^"\\\x00-\x1F]|\\(?:["\\/bfnrt]|u(?:[0-9a-cA-Ce-fE-F][0-9a-fA-F]{3}|[dD][0-7][0-9a-fA-F]{2}|[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2})))$"#,
        )
        .unwrap();
        let hex = ["0", "7", "8", "b", "B", "c", "D", "e", "F", "g", "\\"];
        let mut texts = vec!["a".to_string(), "\"".into(), "\\n".into(), "\\x".into(), "é".into()];
        for a in hex {
            for b in hex {
                for d in hex {
                    texts.push(format!("\\u{a}{b}{d}f"));
                    texts.push(format!("\\u{a}{b}{d}"));
                    texts.push(format!("\\u{a}{b}0f\\u{d}c0f"));
                    texts.push(format!("\\ud{a}0f\\u{b}{d}0f"));
                }
            }
        }
        for t in &texts {
            assert_eq!(c.matches(t.as_bytes()).unwrap(), re.is_match(t), "{t}");
        }
    }

    #[test]
    fn rules_share_bodies() {
        let mut w = Writer::default();
        let a = w.lit("a");
        let (x, y) = (w.add("x", a), w.add("y", a));
        assert_eq!(x, y);
    }
}
