//! Writing GBNF: a rule table with shared bodies, literals, character classes,
//! and regular expressions over characters either raw (numbers) or inside a
//! JSON string (each character in its literal or escaped JSON form).

use super::regex::{CharSet, Re};
use crate::hash::{FastMap, TextMap};
use std::hash::BuildHasher;
use std::fmt::Write;
use std::sync::LazyLock;

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

/// Delimits a placeholder in [`Rules::add_cycle`]'s templates (no rule
/// body holds a NUL: characters are written escaped).
const PLACEHOLDER: &str = "\0";

/// Stands for the `i`-th rule's name in [`Rules::add_cycle`]'s templates.
pub fn member(i: usize) -> String {
    format!("{PLACEHOLDER}{i}{PLACEHOLDER}")
}

/// Rules under construction. Identical bodies share one rule.
#[derive(Default)]
pub struct Rules {
    /// A rule for every escape JSON requires (and `\/`), once defined
    /// (see [`Rules::set_escape`]).
    escape: Option<String>,
    rules: Vec<(String, String)>,
    /// Rules added with [`Rules::add`] by a keyed hash of their body (the
    /// bodies themselves stay in `rules`, not copied).
    by_body: FastMap<u64, Vec<u32>>,
    hasher: foldhash::fast::RandomState,
    /// Rules added with [`Rules::add_cycle`], by their templates.
    cycles: TextMap<Vec<String>, Vec<String>>,
    total_len: usize,
    /// [`json_char`] of each set met (with `escape`): automata built for
    /// keys and patterns meet the same sets state after state.
    chars: TextMap<CharSet, Option<String>>,
}

impl Rules {
    /// Add (or reuse) a rule with this body; returns its name.
    pub fn add(&mut self, hint: &str, body: String) -> String {
        let hash = self.hasher.hash_one(&body);
        let same = self.by_body.entry(hash).or_default();
        if let Some(&i) = same.iter().find(|&&i| self.rules[i as usize].1 == body) {
            return self.rules[i as usize].0.clone();
        }
        same.push(self.rules.len() as u32);
        let name = self.fresh(hint);
        self.total_len += body.len();
        self.rules.push((name.clone(), body));
        name
    }

    /// Add (or reuse) rules that refer to each other (or one rule that
    /// refers to itself): `templates[j]` is rule `j`'s body with
    /// [`member`]`(i)` where rule `i`'s name goes.
    pub fn add_cycle(&mut self, hint: &str, templates: Vec<String>) -> Vec<String> {
        if let Some(names) = self.cycles.get(&templates) {
            return names.clone();
        }
        let names: Vec<String> = templates.iter().map(|_| self.reserve(hint)).collect();
        for (name, template) in names.iter().zip(&templates) {
            let mut body = String::with_capacity(template.len() + 8 * names.len());
            let mut parts = template.split(PLACEHOLDER);
            body.push_str(parts.next().unwrap_or_default());
            while let (Some(i), Some(text)) = (parts.next(), parts.next()) {
                if let Some(n) = i.parse::<usize>().ok().and_then(|i| names.get(i)) {
                    body.push_str(n);
                }
                body.push_str(text);
            }
            self.define(name, body);
        }
        self.cycles.insert(templates, names.clone());
        names
    }

    /// Reserve a name for a rule defined later with [`Rules::define`] (recursion).
    pub fn reserve(&mut self, hint: &str) -> String {
        let name = self.fresh(hint);
        self.rules.push((name.clone(), String::new()));
        name
    }

    /// Give a reserved name its body.
    pub fn define(&mut self, name: &str, body: String) {
        // A name ends with its rule's index (see `fresh`).
        let index = name.rsplit('-').next().and_then(|i| i.parse::<usize>().ok());
        if let Some(rule) = index.and_then(|i| self.rules.get_mut(i)).filter(|r| r.0 == name) {
            self.total_len += body.len();
            rule.1 = body;
        }
    }

    /// Names the rule for every escape JSON requires (and `\/`).
    pub fn set_escape(&mut self, rule: String) {
        self.escape = Some(rule);
        self.chars.clear();
    }

    /// [`json_char`] of `set` with this grammar's `escape` rule, memoized.
    pub fn json_char(&mut self, set: &CharSet) -> Option<String> {
        if let Some(c) = self.chars.get(set) {
            return c.clone();
        }
        let c = json_char(set, self.escape.as_deref());
        self.chars.insert(set.clone(), c.clone());
        c
    }

    /// Characters of rule bodies written so far (a size limit's measure).
    pub fn size(&self) -> usize {
        self.total_len
    }

    /// `hint` cleaned (at most 24 letters, digits and inner dashes), then
    /// `-` and the index the new rule will have.
    fn fresh(&mut self, hint: &str) -> String {
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
        let _ = write!(name, "-{}", self.rules.len());
        name
    }

    /// The grammar text with `root ::= <root>` first.
    pub fn finish(self, root: &str) -> String {
        let names: usize = self.rules.iter().map(|r| r.0.len() + 6).sum();
        let mut out = String::with_capacity(root.len() + 10 + names + self.total_len);
        for (name, body) in std::iter::once(("root", root)).chain(self.rules.iter().map(|(n, b)| (n.as_str(), b.as_str()))) {
            out.push_str(name);
            out.push_str(" ::= ");
            out.push_str(body);
            out.push('\n');
        }
        out
    }
}

/// A GBNF string literal for `s`.
pub fn literal(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 || c as u32 == 0x7F => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn class_char(out: &mut String, c: u32) {
    match char::from_u32(c) {
        Some('\\' | ']' | '[' | '-' | '^' | '"') => {
            let _ = write!(out, "\\u{c:04X}");
        }
        Some(ch) if c >= 0x20 && c != 0x7F && !(0x80..0xA0).contains(&c) && !(0xD800..0xE000).contains(&c) && c < 0xFFF0 => {
            out.push(ch)
        }
        Some(ch) if c > 0xFFFF => out.push(ch),
        _ => {
            let _ = write!(out, "\\u{c:04X}");
        }
    }
}

/// A GBNF character class for a non-empty set.
pub fn class(set: &CharSet) -> String {
    // A negated class is shorter when the set covers most of the range.
    let neg = set.negate();
    let (ranges, negated) = if neg.0.len() < set.0.len() && !neg.is_empty() {
        (&neg.0, true)
    } else {
        (&set.0, false)
    };
    if !negated && ranges.len() == 1 && ranges[0].0 == ranges[0].1
        && let Some(c) = char::from_u32(ranges[0].0) {
            return literal(&c.to_string());
        }
    let mut out = String::from(if negated { "[^" } else { "[" });
    for &(a, b) in ranges {
        class_char(&mut out, a);
        if b > a {
            if b > a + 1 {
                out.push('-');
            }
            class_char(&mut out, b);
        }
    }
    out.push(']');
    out
}

/// The short escape JSON has for a control or quote character.
fn short_escape(c: u32) -> Option<&'static str> {
    Some(match c {
        0x22 => "\\\"",
        0x5C => "\\\\",
        0x2F => "\\/",
        0x08 => "\\b",
        0x0C => "\\f",
        0x0A => "\\n",
        0x0D => "\\r",
        0x09 => "\\t",
        _ => return None,
    })
}

/// GBNF for one character of `set` spelled as inside a JSON string: the
/// character itself where JSON allows it raw, else its escape(s).
/// Returns `None` for an empty set.
pub fn json_char(set: &CharSet, escape: Option<&str>) -> Option<String> {
    if set.is_empty() {
        return None;
    }
    let sets = &*JSON_SETS;
    let raw = set.intersect(&sets.raw);
    let mut alts = Vec::new();
    if !raw.is_empty() {
        alts.push(class(&raw));
    }
    let escaped = set.intersect(&sets.escapable);
    if let Some(esc) = escape.filter(|_| escaped == sets.escapable) {
        alts.push(esc.to_string());
        return Some(if alts.len() == 1 { alts.remove(0) } else { format!("({})", alts.join(" | ")) });
    }
    let all_controls = set.intersect(&sets.controls) == sets.controls;
    if all_controls {
        alts.push(format!("{} [01] [0-9a-fA-F]", literal("\\u00")));
    }
    // `\u00XY` escapes of some controls: one alternative per `X`, its
    // `Y`s (both cases) in one class.
    let mut digits = [String::new(), String::new()];
    for &(a, b) in &escaped.0 {
        for c in a..=b {
            if let Some(e) = short_escape(c) {
                alts.push(literal(e));
            }
            if c < 0x20 && !all_controls {
                let hi = format!("{:X}", c & 0xF);
                let lo = hi.to_ascii_lowercase();
                digits[(c >> 4) as usize] += &if hi == lo { hi } else { hi + &lo };
            }
        }
    }
    for (x, ys) in digits.iter().enumerate().filter(|(_, ys)| !ys.is_empty()) {
        alts.push(format!("{} [{ys}]", literal(&format!("\\u00{x}"))));
    }
    Some(if alts.len() == 1 { alts.remove(0) } else { format!("({})", alts.join(" | ")) })
}

/// The sets [`json_char`] splits a character set by, built once.
struct JsonSets {
    /// Characters a JSON string holds as themselves.
    raw: CharSet,
    /// Characters with an escape here: those JSON requires escaped
    /// (controls, `"`, `\`) and `/`.
    escapable: CharSet,
    /// The control characters.
    controls: CharSet,
}

static JSON_SETS: LazyLock<JsonSets> = LazyLock::new(|| {
    let must_escape = CharSet::from_ranges(vec![(0, 0x1F), (0x22, 0x22), (0x5C, 0x5C)]);
    JsonSets {
        raw: must_escape.negate(),
        escapable: must_escape.union(&CharSet::single(0x2F)),
        controls: CharSet::from_ranges(vec![(0, 0x1F)]),
    }
});

/// Any one JSON string character, all escapes included, given what follows
/// the `\u` of a Unicode escape (see [`json_unicode_escape_body`]).
pub fn json_char_body(unicode_escape: &str) -> String {
    format!(r#"[^"\\\u0000-\u001F] | "\\" (["\\/bfnrt] | "u" {unicode_escape})"#)
}

/// The four hex digits of a `\u` escape (`\uD83D\uDE00`-style surrogate
/// pairs count as the one character they encode), given a rule `hex2` for
/// two hex digits: the last two digits are one reference at the end of each
/// branch, so an inlined copy holds them once.
pub fn json_unicode_escape_body(hex2: &str) -> String {
    format!(r#"[0-9a-cA-Ce-fE-F] [0-9a-fA-F] {hex2} | [dD] ([0-7] {hex2} | [89abAB] {hex2} "\\u" [dD] [c-fC-F] {hex2})"#)
}

/// Emit a regular expression as a GBNF expression.
pub fn emit(re: &Re, enc: Encoding, rules: &mut Rules, any_char: &str) -> Option<String> {
    Some(match re {
        Re::Set(s) => {
            if enc == Encoding::JsonString && *s == CharSet::any() {
                any_char.to_string()
            } else {
                match enc {
                    Encoding::Raw => {
                        if s.is_empty() {
                            return None;
                        }
                        class(s)
                    }
                    Encoding::JsonString => rules.json_char(s)?,
                }
            }
        }
        Re::Start | Re::End => return None,
        Re::Concat(parts) => {
            if parts.is_empty() {
                return Some("\"\"".to_string());
            }
            let mut items = Vec::with_capacity(parts.len());
            // Merge runs of single characters into one literal.
            let mut run = String::new();
            for p in parts {
                if let (Re::Set(s), Encoding::Raw) = (p, enc)
                    && s.0.len() == 1 && s.0[0].0 == s.0[0].1
                        && let Some(c) = char::from_u32(s.0[0].0) {
                            run.push(c);
                            continue;
                        }
                if let (Re::Set(s), Encoding::JsonString) = (p, enc)
                    && s.0.len() == 1 && s.0[0].0 == s.0[0].1 && short_escape(s.0[0].0).is_none() && s.0[0].0 >= 0x20
                        && let Some(c) = char::from_u32(s.0[0].0) {
                            run.push(c);
                            continue;
                        }
                if !run.is_empty() {
                    items.push(literal(&run));
                    run.clear();
                }
                let e = emit(p, enc, rules, any_char)?;
                items.push(if matches!(p, Re::Alt(_)) { format!("({e})") } else { e });
            }
            if !run.is_empty() {
                items.push(literal(&run));
            }
            items.join(" ")
        }
        Re::Alt(branches) => {
            let alts: Vec<String> = branches.iter().filter_map(|b| emit(b, enc, rules, any_char)).collect();
            if alts.is_empty() {
                return None;
            }
            if alts.len() == 1 {
                return alts.into_iter().next();
            }
            alts.join(" | ")
        }
        Re::Repeat(inner, min, max) => {
            let e = match emit(inner, enc, rules, any_char) {
                Some(e) => e,
                None => return if *min == 0 { Some("\"\"".to_string()) } else { None },
            };
            let e = if is_atom(&e) { e } else { format!("({e})") };
            match (min, max) {
                (_, Some(0)) => "\"\"".to_string(),
                (0, Some(1)) => format!("{e}?"),
                (0, None) => format!("{e}*"),
                (1, None) => format!("{e}+"),
                (m, None) => format!("{e}{{{m},}}"),
                (m, Some(n)) if m == n => format!("{e}{{{m}}}"),
                (m, Some(n)) => format!("{e}{{{m},{n}}}"),
            }
        }
    })
}

/// Whether a GBNF expression is a single item a postfix operator may follow.
pub fn is_atom(e: &str) -> bool {
    let b = e.as_bytes();
    if e.is_empty() {
        return false;
    }
    let simple_name = e.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-');
    if simple_name {
        return true;
    }
    // A lone literal or class: one opening and its matching close at the very end.
    let (open, close) = match b[0] {
        b'"' => (b'"', b'"'),
        b'[' => (b'[', b']'),
        b'(' => (b'(', b')'),
        _ => return false,
    };
    let mut depth = 0i32;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'\\' && open != b'(' {
            i += 2;
            continue;
        }
        if open == b'(' {
            if c == b'"' || c == b'[' {
                // skip nested literal/class
                let end = if c == b'"' { b'"' } else { b']' };
                i += 1;
                while i < b.len() && b[i] != end {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
                i += 1;
                continue;
            }
            if c == b'(' {
                depth += 1;
            } else if c == b')' {
                depth -= 1;
                if depth == 0 {
                    return i == b.len() - 1;
                }
            }
        } else if i > 0 && c == close {
            return i == b.len() - 1;
        }
        i += 1;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atoms() {
        assert!(is_atom("\"a b\""));
        assert!(is_atom("[a-z]"));
        assert!(is_atom("(a | b)"));
        assert!(!is_atom("(a) (b)"));
        assert!(!is_atom("\"a\" \"b\""));
        assert!(is_atom("\"\\\"\""));
        assert!(is_atom("value-3"));
    }

    #[test]
    fn json_char_escapes_what_json_requires() {
        let q = json_char(&CharSet::single('"' as u32), None).unwrap();
        assert_eq!(q, literal("\\\""));
        let nl = json_char(&CharSet::single('\n' as u32), None).unwrap();
        assert!(nl.contains("\\\\n") && nl.contains("\\\\u00"));
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
            let c = crate::Constraint::gbnf(&format!("root ::= {}", json_char(&set, None).unwrap())).unwrap();
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
        let unicode = json_unicode_escape_body("hex2");
        let inline = format!("root ::= {}\n", json_char_body(&format!("({unicode})")));
        let called = format!("root ::= {}\nunicode ::= {unicode}\n", json_char_body("unicode"));
        for g in [inline, called] {
            json_char_is_exact(&format!("{g}hex2 ::= [0-9a-fA-F]{{2}}\n"));
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
        let mut r = Rules::default();
        let a = r.add("x", "\"a\"".into());
        let b = r.add("y", "\"a\"".into());
        assert_eq!(a, b);
    }
}
