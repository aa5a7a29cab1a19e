//! ECMA-262 patterns to a small regular-expression tree over Unicode scalar values.
//!
//! The pattern is parsed with `regex-syntax`'s AST (which rejects lookaround and
//! backreferences with a precise error) and translated with ECMA-262 meanings:
//! `\d` is `[0-9]`, `\w` is `[A-Za-z0-9_]`, `\s` is ECMA white space and line
//! terminators, `.` excludes the four line terminators. Patterns match anywhere
//! in the string unless anchored, so an unanchored side gets an "any string"
//! prefix or suffix. Anchors anywhere but at the ends of a branch are an error.

use regex_syntax::ast::{self, Ast};

/// Largest Unicode scalar value.
pub const MAX_CHAR: u32 = 0x10_FFFF;

/// A set of Unicode scalar values as sorted, disjoint, non-adjacent inclusive ranges.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CharSet(pub Vec<(u32, u32)>);

impl CharSet {
    /// The empty set.
    pub fn empty() -> Self {
        CharSet(Vec::new())
    }
    /// Every scalar value.
    pub fn any() -> Self {
        CharSet(vec![(0, 0xD7FF), (0xE000, MAX_CHAR)])
    }
    /// One character.
    pub fn single(c: u32) -> Self {
        CharSet::from_ranges(vec![(c, c)])
    }
    /// A set from arbitrary ranges (normalized; surrogates removed).
    pub fn from_ranges(mut ranges: Vec<(u32, u32)>) -> Self {
        ranges.retain(|&(a, b)| a <= b);
        ranges.sort_unstable();
        let mut out: Vec<(u32, u32)> = Vec::with_capacity(ranges.len());
        for (a, b) in ranges {
            match out.last_mut() {
                Some(last) if a <= last.1.saturating_add(1) => last.1 = last.1.max(b),
                _ => out.push((a, b)),
            }
        }
        let set = CharSet(out);
        if set.0.iter().any(|&(a, b)| a <= 0xDFFF && b >= 0xD800) {
            return set.intersect(&CharSet(vec![(0, 0xD7FF), (0xE000, MAX_CHAR)]));
        }
        set
    }
    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    /// Whether `c` is in the set.
    pub fn contains(&self, c: u32) -> bool {
        self.0.iter().any(|&(a, b)| a <= c && c <= b)
    }
    /// Union of two sets.
    pub fn union(&self, other: &CharSet) -> CharSet {
        let mut v = self.0.clone();
        v.extend_from_slice(&other.0);
        CharSet::from_ranges(v)
    }
    /// Complement within the scalar values.
    pub fn negate(&self) -> CharSet {
        let mut set = CharSet(Vec::new());
        complement(&self.0, &mut set.0);
        set
    }
    /// Intersection of two sets.
    pub fn intersect(&self, other: &CharSet) -> CharSet {
        let mut out = Vec::new();
        let (mut i, mut j) = (0, 0);
        while i < self.0.len() && j < other.0.len() {
            let (a1, b1) = self.0[i];
            let (a2, b2) = other.0[j];
            let lo = a1.max(a2);
            let hi = b1.min(b2);
            if lo <= hi {
                out.push((lo, hi));
            }
            if b1 < b2 {
                i += 1;
            } else {
                j += 1;
            }
        }
        CharSet(out)
    }
}

/// A regular expression over Unicode scalar values.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Re {
    /// One character from the set (an empty set matches nothing).
    Set(CharSet),
    /// Each part in order (empty: the empty string).
    Concat(Vec<Re>),
    /// Any one branch (empty: nothing).
    Alt(Vec<Re>),
    /// `min` to `max` (unbounded when `None`) copies.
    Repeat(Box<Re>, u32, Option<u32>),
    /// Start of input; removed by [`anchor`] before use.
    Start,
    /// End of input; removed by [`anchor`] before use.
    End,
}

/// The scalar values outside `ranges` (sorted, apart) written to `out`
/// (cleared first), surrogates left out.
pub fn complement(ranges: &[(u32, u32)], out: &mut Vec<(u32, u32)>) {
    out.clear();
    let mut push = |a: u32, b: u32| {
        if b < 0xD800 || a > 0xDFFF {
            out.push((a, b));
        } else {
            if a < 0xD800 {
                out.push((a, 0xD7FF));
            }
            if b > 0xDFFF {
                out.push((0xE000, b));
            }
        }
    };
    let mut next = 0u32;
    for &(a, b) in ranges {
        if a > next {
            push(next, a - 1);
        }
        next = b + 1;
    }
    if next <= MAX_CHAR {
        push(next, MAX_CHAR);
    }
}

impl Re {
    /// The empty string.
    pub fn empty() -> Re {
        Re::Concat(Vec::new())
    }
    /// Any string.
    pub fn any_string() -> Re {
        Re::Repeat(Box::new(Re::Set(CharSet::any())), 0, None)
    }
    /// Whether a branch searches: any string, then more. Its Thompson
    /// automaton keeps every partial match alive at once, before a match
    /// and after it, in sets that multiply with the branches; the minimal
    /// DFA holds one state for what has matched so far.
    pub fn is_search(&self) -> bool {
        match self {
            Re::Alt(branches) => branches.iter().any(Re::is_search),
            Re::Concat(parts) => parts.len() > 1 && parts[0] == Re::any_string(),
            _ => false,
        }
    }
    /// Shortest and longest match length in characters (`None`: unbounded).
    /// Returns `None` overall when the expression matches nothing.
    pub fn length_range(&self) -> Option<(u64, Option<u64>)> {
        match self {
            Re::Set(s) => (!s.is_empty()).then_some((1, Some(1))),
            Re::Start | Re::End => Some((0, Some(0))),
            Re::Concat(parts) => {
                let (mut lo, mut hi) = (0u64, Some(0u64));
                for p in parts {
                    let (a, b) = p.length_range()?;
                    lo = lo.saturating_add(a);
                    hi = match (hi, b) {
                        (Some(x), Some(y)) => Some(x.saturating_add(y)),
                        _ => None,
                    };
                }
                Some((lo, hi))
            }
            Re::Alt(branches) => {
                let mut acc: Option<(u64, Option<u64>)> = None;
                for b in branches {
                    if let Some((a, h)) = b.length_range() {
                        acc = Some(match acc {
                            None => (a, h),
                            Some((a0, h0)) => (
                                a0.min(a),
                                match (h0, h) {
                                    (Some(x), Some(y)) => Some(x.max(y)),
                                    _ => None,
                                },
                            ),
                        });
                    }
                }
                acc
            }
            Re::Repeat(inner, min, max) => match inner.length_range() {
                None => (*min == 0).then_some((0, Some(0))),
                Some((a, h)) => Some((
                    a.saturating_mul(u64::from(*min)),
                    match (h, max) {
                        (Some(0), _) => Some(0),
                        (Some(x), Some(m)) => Some(x.saturating_mul(u64::from(*m))),
                        _ => None,
                    },
                )),
            },
        }
    }
}

impl Re {
    /// Whether the whole of `s` is in the language (position-set simulation;
    /// work is bounded by the expression size times the string length).
    pub fn matches(&self, s: &str) -> bool {
        let chars: Vec<u32> = s.chars().map(|c| c as u32).collect();
        let ends = self.step(&chars, &[0]);
        ends.contains(&chars.len())
    }

    fn step(&self, s: &[u32], starts: &[usize]) -> Vec<usize> {
        let mut out: Vec<usize> = match self {
            Re::Set(set) => starts.iter().filter(|&&i| i < s.len() && set.contains(s[i])).map(|i| i + 1).collect(),
            Re::Start | Re::End => Vec::new(),
            Re::Concat(parts) => {
                let mut cur = starts.to_vec();
                for p in parts {
                    if cur.is_empty() {
                        break;
                    }
                    cur = p.step(s, &cur);
                }
                cur
            }
            Re::Alt(branches) => branches.iter().flat_map(|b| b.step(s, starts)).collect(),
            Re::Repeat(inner, min, max) => {
                let mut cur = starts.to_vec();
                let mut acc = if *min == 0 { cur.clone() } else { Vec::new() };
                let mut n = 0u32;
                while !cur.is_empty() && max.is_none_or(|m| n < m) {
                    n += 1;
                    let mut next = inner.step(s, &cur);
                    next.sort_unstable();
                    next.dedup();
                    if n >= *min {
                        // Positions reached before were already expanded further.
                        next.retain(|x| !acc.contains(x) || n == *min);
                        let fresh: Vec<usize> = next.iter().copied().filter(|x| !acc.contains(x)).collect();
                        acc.extend_from_slice(&fresh);
                        if n > *min && fresh.is_empty() {
                            break;
                        }
                    }
                    cur = next;
                }
                acc
            }
        };
        out.sort_unstable();
        out.dedup();
        out
    }
}

/// Why a pattern cannot be translated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PatternError {
    /// The pattern does not parse (or uses a construct the parser rejects:
    /// lookaround, backreferences).
    Syntax(String),
    /// A construct that parses but has no exact translation here.
    Unsupported(&'static str),
}

impl std::fmt::Display for PatternError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PatternError::Syntax(m) => write!(f, "invalid or unsupported pattern: {m}"),
            PatternError::Unsupported(what) => write!(f, "unsupported pattern construct: {what}"),
        }
    }
}

/// Parse an ECMA-262 pattern into the language of strings it matches
/// somewhere (search semantics, as JSON Schema's `pattern` uses it).
pub fn parse_pattern(pattern: &str) -> Result<Re, PatternError> {
    let ast = ast::parse::ParserBuilder::new()
        .nest_limit(100)
        .build()
        .parse(pattern)
        .map_err(|e| match e.kind() {
            ast::ErrorKind::UnsupportedLookAround => PatternError::Unsupported("lookaround"),
            ast::ErrorKind::UnsupportedBackreference => PatternError::Unsupported("backreference"),
            _ => PatternError::Syntax(e.kind().to_string()),
        })?;
    let re = translate(&ast, pattern)?;
    anchor(re)
}

/// Remove anchors, adding "any string" on each unanchored side. Branches
/// unanchored on the same sides share those: `(a|b)` searches as
/// `.*(a|b).*`, not `.*a.*|.*b.*`, whose automaton keeps looking for each
/// branch on its own after another has matched (its sets multiply).
pub fn anchor(re: Re) -> Result<Re, PatternError> {
    let mut found = Vec::new();
    branches(re, &mut found)?;
    // Per pair of anchored sides, in order of first appearance: the cores.
    let mut groups: Vec<((bool, bool), Vec<Re>)> = Vec::new();
    for (sides, core) in found {
        match groups.iter_mut().find(|g| g.0 == sides) {
            Some(g) => g.1.push(core),
            None => groups.push((sides, vec![core])),
        }
    }
    let mut alts: Vec<Re> = groups
        .into_iter()
        .map(|((start, end), mut cores)| {
            let mut parts = Vec::new();
            if !start {
                parts.push(Re::any_string());
            }
            match if cores.len() == 1 { cores.remove(0) } else { Re::Alt(cores) } {
                Re::Concat(core) => parts.extend(core),
                core => parts.push(core),
            }
            if !end {
                parts.push(Re::any_string());
            }
            Re::Concat(parts)
        })
        .collect();
    Ok(if alts.len() == 1 { alts.remove(0) } else { Re::Alt(alts) })
}

/// The top-level branches of a pattern, each as whether it is anchored at
/// its start and at its end, and what lies between.
fn branches(re: Re, out: &mut Vec<((bool, bool), Re)>) -> Result<(), PatternError> {
    match re {
        Re::Alt(branches) => branches.into_iter().try_for_each(|b| self::branches(b, out)),
        Re::Concat(mut parts) if parts.len() == 1 && matches!(parts[0], Re::Alt(_)) => branches(parts.remove(0), out),
        other => {
            let mut parts = match other {
                Re::Concat(p) => p,
                single => vec![single],
            };
            let mut start = false;
            while matches!(parts.first(), Some(Re::Start)) {
                parts.remove(0);
                start = true;
            }
            let mut end = false;
            while matches!(parts.last(), Some(Re::End)) {
                parts.pop();
                end = true;
            }
            if parts.iter().any(contains_anchor) {
                return Err(PatternError::Unsupported("anchor inside the pattern"));
            }
            out.push(((start, end), Re::Concat(parts)));
            Ok(())
        }
    }
}

fn contains_anchor(re: &Re) -> bool {
    match re {
        Re::Start | Re::End => true,
        Re::Set(_) => false,
        Re::Concat(p) | Re::Alt(p) => p.iter().any(contains_anchor),
        Re::Repeat(inner, ..) => contains_anchor(inner),
    }
}

fn digit() -> CharSet {
    CharSet::from_ranges(vec![(0x30, 0x39)])
}
fn word() -> CharSet {
    CharSet::from_ranges(vec![(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)])
}
/// ECMA-262 `\s`: WhiteSpace and LineTerminator.
fn space() -> CharSet {
    CharSet::from_ranges(vec![
        (0x09, 0x0D),
        (0x20, 0x20),
        (0xA0, 0xA0),
        (0x1680, 0x1680),
        (0x2000, 0x200A),
        (0x2028, 0x2029),
        (0x202F, 0x202F),
        (0x205F, 0x205F),
        (0x3000, 0x3000),
        (0xFEFF, 0xFEFF),
    ])
}
/// ECMA-262 `.`: anything but a line terminator.
fn dot() -> CharSet {
    CharSet::from_ranges(vec![(0x0A, 0x0A), (0x0D, 0x0D), (0x2028, 0x2029)]).negate()
}

fn perl(kind: &ast::ClassPerlKind, negated: bool) -> CharSet {
    let set = match kind {
        ast::ClassPerlKind::Digit => digit(),
        ast::ClassPerlKind::Word => word(),
        ast::ClassPerlKind::Space => space(),
    };
    if negated { set.negate() } else { set }
}

fn literal_char(lit: &ast::Literal) -> Result<u32, PatternError> {
    match &lit.kind {
        ast::LiteralKind::Octal => Err(PatternError::Unsupported("octal escape")),
        ast::LiteralKind::Special(ast::SpecialLiteralKind::Bell) => {
            Err(PatternError::Unsupported("\\a escape"))
        }
        _ => Ok(lit.c as u32),
    }
}

fn unicode_class(cls: &ast::ClassUnicode, pattern: &str) -> Result<CharSet, PatternError> {
    let text = pattern
        .get(cls.span.start.offset..cls.span.end.offset)
        .ok_or(PatternError::Unsupported("unicode class"))?;
    let hir = regex_syntax::ParserBuilder::new()
        .build()
        .parse(text)
        .map_err(|e| PatternError::Syntax(e.to_string()))?;
    match hir.kind() {
        regex_syntax::hir::HirKind::Class(regex_syntax::hir::Class::Unicode(c)) => Ok(CharSet::from_ranges(
            c.ranges().iter().map(|r| (r.start() as u32, r.end() as u32)).collect(),
        )),
        _ => Err(PatternError::Unsupported("unicode class")),
    }
}

fn class_item(item: &ast::ClassSetItem, pattern: &str) -> Result<CharSet, PatternError> {
    use ast::ClassSetItem as I;
    Ok(match item {
        I::Empty(_) => CharSet::empty(),
        I::Literal(l) => CharSet::single(literal_char(l)?),
        I::Range(r) => CharSet::from_ranges(vec![(literal_char(&r.start)?, literal_char(&r.end)?)]),
        I::Ascii(_) => return Err(PatternError::Unsupported("POSIX character class")),
        I::Unicode(u) => unicode_class(u, pattern)?,
        I::Perl(p) => perl(&p.kind, p.negated),
        I::Bracketed(b) => bracketed(b, pattern)?,
        I::Union(u) => {
            let mut acc = CharSet::empty();
            for it in &u.items {
                acc = acc.union(&class_item(it, pattern)?);
            }
            acc
        }
    })
}

fn class_set(set: &ast::ClassSet, pattern: &str) -> Result<CharSet, PatternError> {
    match set {
        ast::ClassSet::Item(item) => class_item(item, pattern),
        ast::ClassSet::BinaryOp(_) => Err(PatternError::Unsupported("class set operation")),
    }
}

fn bracketed(b: &ast::ClassBracketed, pattern: &str) -> Result<CharSet, PatternError> {
    let set = class_set(&b.kind, pattern)?;
    Ok(if b.negated { set.negate() } else { set })
}

fn translate(a: &Ast, pattern: &str) -> Result<Re, PatternError> {
    Ok(match a {
        Ast::Empty(_) => Re::empty(),
        Ast::Flags(_) => return Err(PatternError::Unsupported("inline flags")),
        Ast::Literal(l) => Re::Set(CharSet::single(literal_char(l)?)),
        Ast::Dot(_) => Re::Set(dot()),
        Ast::Assertion(asrt) => match asrt.kind {
            ast::AssertionKind::StartLine => Re::Start,
            ast::AssertionKind::EndLine => Re::End,
            ast::AssertionKind::WordBoundary | ast::AssertionKind::NotWordBoundary => {
                return Err(PatternError::Unsupported("word boundary"));
            }
            _ => return Err(PatternError::Unsupported("assertion")),
        },
        Ast::ClassUnicode(u) => Re::Set(unicode_class(u, pattern)?),
        Ast::ClassPerl(p) => Re::Set(perl(&p.kind, p.negated)),
        Ast::ClassBracketed(b) => Re::Set(bracketed(b, pattern)?),
        Ast::Repetition(rep) => {
            let (min, max) = match &rep.op.kind {
                ast::RepetitionKind::ZeroOrOne => (0, Some(1)),
                ast::RepetitionKind::ZeroOrMore => (0, None),
                ast::RepetitionKind::OneOrMore => (1, None),
                ast::RepetitionKind::Range(ast::RepetitionRange::Exactly(n)) => (*n, Some(*n)),
                ast::RepetitionKind::Range(ast::RepetitionRange::AtLeast(n)) => (*n, None),
                ast::RepetitionKind::Range(ast::RepetitionRange::Bounded(m, n)) => (*m, Some(*n)),
            };
            let inner = translate(&rep.ast, pattern)?;
            if contains_anchor(&inner) {
                return Err(PatternError::Unsupported("anchor inside a repetition"));
            }
            Re::Repeat(Box::new(inner), min, max)
        }
        Ast::Group(g) => {
            if let ast::GroupKind::NonCapturing(flags) = &g.kind
                && !flags.items.is_empty() {
                    return Err(PatternError::Unsupported("inline flags"));
                }
            translate(&g.ast, pattern)?
        }
        Ast::Alternation(alt) => {
            Re::Alt(alt.asts.iter().map(|x| translate(x, pattern)).collect::<Result<_, _>>()?)
        }
        Ast::Concat(c) => {
            Re::Concat(c.asts.iter().map(|x| translate(x, pattern)).collect::<Result<_, _>>()?)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ecma_classes_are_ascii() {
        let re = parse_pattern(r"^\d$").unwrap();
        assert_eq!(re, Re::Concat(vec![Re::Set(digit())]));
    }

    #[test]
    fn unanchored_patterns_search() {
        let re = parse_pattern("ab").unwrap();
        assert_eq!(re.length_range(), Some((2, None)));
        let re = parse_pattern("^ab$").unwrap();
        assert_eq!(re.length_range(), Some((2, Some(2))));
    }

    #[test]
    fn branches_unanchored_alike_share_one_search() {
        let lit = |s: &str| Re::Concat(s.chars().map(|c| Re::Set(CharSet::single(c as u32))).collect());
        let re = parse_pattern("(ab|c)|^x|y$|d").unwrap();
        let search = Re::Concat(vec![Re::any_string(), Re::Alt(vec![lit("ab"), lit("c"), lit("d")]), Re::any_string()]);
        let prefix = Re::Concat(vec![Re::Set(CharSet::single('x' as u32)), Re::any_string()]);
        let suffix = Re::Concat(vec![Re::any_string(), Re::Set(CharSet::single('y' as u32))]);
        assert_eq!(re, Re::Alt(vec![search, prefix, suffix]));
    }

    /// Every string of up to four characters of `abc` against each
    /// pattern: the same answers as a regex search.
    #[test]
    fn patterns_match_as_a_search_does() {
        let patterns = ["a", "ab|c", "^a|b$", "(a|bc)+", "^(ab|b)$|ca", "a|^b|c$|^cc$", "(^a|b)", "(ab)|(b|c)a"];
        let mut strings = vec![String::new()];
        for _ in 0..4 {
            let longer: Vec<String> = strings.iter().filter(|s| s.len() == strings.last().map_or(0, String::len)).flat_map(|s| ["a", "b", "c"].map(|c| format!("{s}{c}"))).collect();
            strings.extend(longer);
        }
        for p in patterns {
            let re = parse_pattern(p).unwrap();
            let oracle = regex_automata::meta::Regex::new(p).unwrap();
            for s in &strings {
                assert_eq!(re.matches(s), oracle.is_match(s.as_str()), "{p} on {s:?}");
            }
        }
    }

    #[test]
    fn lookaround_and_backreferences_are_named() {
        assert_eq!(parse_pattern("a(?=b)"), Err(PatternError::Unsupported("lookaround")));
        assert_eq!(parse_pattern(r"(a)\1"), Err(PatternError::Unsupported("backreference")));
        assert_eq!(parse_pattern(r"a\bc"), Err(PatternError::Unsupported("word boundary")));
        assert_eq!(
            parse_pattern("a^b"),
            Err(PatternError::Unsupported("anchor inside the pattern"))
        );
    }

    #[test]
    fn matcher_agrees_with_expectations() {
        let re = parse_pattern(r"^[a-c]{2,3}(x|yz)*$").unwrap();
        for (s, ok) in [("ab", true), ("abcx", true), ("abyzx", true), ("a", false), ("abcd", false), ("abyx", false)] {
            assert_eq!(re.matches(s), ok, "{s}");
        }
        let re = parse_pattern("b+").unwrap();
        assert!(re.matches("abbc") && !re.matches("ac"));
    }

    #[test]
    fn charset_negate_roundtrip() {
        let s = CharSet::from_ranges(vec![(0x41, 0x5A), (0xD000, 0xE100)]);
        assert_eq!(s.negate().negate(), s);
        assert!(!s.contains(0xD900));
        assert!(s.negate().intersect(&s).is_empty());
    }
}
