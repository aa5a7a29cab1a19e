//! A grammar's rules as expression trees, stored flat (nodes, children,
//! literal bytes and class ranges each in one array), and GBNF (llama.cpp's
//! grammar format) read into them and written from them. The JSON Schema
//! translator builds the trees directly; the grammar compiler takes them
//! either way.
//!
//! Supported GBNF: `name ::= body` rules (names of letters, digits, `-`,
//! `_`), `|`, `( )`, `*` `+` `?` `{m}` `{m,}` `{m,n}`, string literals and
//! character classes with the escapes `\n \r \t \\ \" \' \[ \] \- \xHH \uHHHH
//! \UHHHHHHHH`, negated classes `[^...]`, `.` (any character), `#` comments,
//! and newlines anywhere inside parentheses or after `|`. Characters are
//! Unicode scalar values; the engine matches them as UTF-8 bytes.

use crate::error::{CompileError, CompileErrorKind};
use crate::hash::{FastMap, TextMap};
use std::fmt::Write;
use std::hash::{BuildHasher, Hash, Hasher};

/// A grammar expression; what it holds lives in the [`Rules`] arrays its
/// ranges index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Expr {
    /// Concatenation of the expressions `kids[first..end]` (none: the empty string).
    Seq { first: u32, end: u32 },
    /// Alternation of the expressions `kids[first..end]`.
    Alt { first: u32, end: u32 },
    /// Expression `expr` `{min,max}` times; `max = None` is unbounded.
    Repeat { expr: u32, min: u32, max: Option<u32> },
    /// A literal string, the UTF-8 bytes `text[first..end]`.
    Literal { first: u32, end: u32 },
    /// The Unicode scalar ranges `ranges[first..end]`, sorted and apart
    /// (already negated if written `[^...]`).
    Class { first: u32, end: u32 },
    /// A reference to the `rule`-th rule.
    Ref { rule: u32 },
    /// The strings along the paths of an automaton whose edges are
    /// expressions, from its first state to one that accepts: its states
    /// are `states[first..end]`. What a right-linear cycle of rules, one
    /// per state, would say, without a rule per state.
    Automaton { first: u32, end: u32 },
}

/// A state of an [`Expr::Automaton`]: whether a path may end there, and its
/// edges `edges[first..end]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct State {
    pub accept: bool,
    pub first: u32,
    pub end: u32,
    /// Another state of the automaton that takes every string of at most
    /// `.1` characters as this one does (both accept after it, or both
    /// live, or both die): a length-bounded string's state whose count is
    /// far from its bound stands in for the same state at another count.
    pub twin: Option<(u32, u32)>,
}

/// An edge of an [`Expr::Automaton`]: an expression, then a state (its
/// index in its automaton).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Edge {
    pub expr: u32,
    pub to: u32,
}

/// One `name ::= body` rule; `body` is an expression index.
#[derive(Debug, Clone)]
pub(crate) struct Rule {
    pub name: String,
    pub body: u32,
}

/// The body of a rule named but not defined yet.
pub(crate) const UNDEFINED: u32 = u32::MAX;

/// Rules with their expressions in flat arrays (an allocation per array, not
/// per node). Expressions are hash-consed: building one equal to an
/// existing one gives the existing one's index, so equal expressions (and
/// rule bodies) compare equal by index.
#[derive(Debug, Default)]
pub(crate) struct Rules {
    pub rules: Vec<Rule>,
    exprs: Vec<Expr>,
    kids: Vec<u32>,
    text: Vec<u8>,
    ranges: Vec<(u32, u32)>,
    states: Vec<State>,
    edges: Vec<Edge>,
    /// Expressions by a keyed hash of what they hold.
    interned: FastMap<u64, u32>,
    hasher: foldhash::fast::RandomState,
}

impl Rules {
    /// Expression `e`.
    pub fn expr(&self, e: u32) -> Expr {
        self.exprs[e as usize]
    }

    /// The expressions of a `Seq` or `Alt`.
    pub fn kids(&self, first: u32, end: u32) -> &[u32] {
        &self.kids[first as usize..end as usize]
    }

    /// The bytes of a `Literal`.
    pub fn text(&self, first: u32, end: u32) -> &[u8] {
        &self.text[first as usize..end as usize]
    }

    /// The ranges of a `Class`.
    pub fn ranges(&self, first: u32, end: u32) -> &[(u32, u32)] {
        &self.ranges[first as usize..end as usize]
    }

    /// The states of an `Automaton`.
    pub fn states(&self, first: u32, end: u32) -> &[State] {
        &self.states[first as usize..end as usize]
    }

    /// The edges of a state.
    pub fn edges(&self, s: &State) -> &[Edge] {
        &self.edges[s.first as usize..s.end as usize]
    }

    /// An automaton: `states[i]` is whether state `i` accepts and where
    /// its edges `(expression, state)` are in `edges`; state 0 is the first.
    /// `twins` is empty or has each state's [`State::twin`].
    pub fn automaton(&mut self, states: &[(bool, u32, u32)], edges: &[(u32, u32)], twins: &[Option<(u32, u32)>]) -> u32 {
        let first = self.states.len() as u32;
        self.states.reserve(states.len());
        self.edges.reserve(edges.len());
        for (i, &(accept, a, b)) in states.iter().enumerate() {
            let at = self.edges.len() as u32;
            self.edges.extend(edges[a as usize..b as usize].iter().map(|&(expr, to)| Edge { expr, to }));
            let twin = twins.get(i).copied().flatten();
            self.states.push(State { accept, first: at, end: self.edges.len() as u32, twin });
        }
        self.intern(Expr::Automaton { first, end: self.states.len() as u32 })
    }

    /// The number of expressions.
    pub fn expr_count(&self) -> usize {
        self.exprs.len()
    }

    /// The number of automaton states, over all automata.
    pub fn state_count(&self) -> usize {
        self.states.len()
    }

    /// The largest repetition bound of any expression (0 when none).
    pub fn max_repeat(&self) -> u32 {
        self.exprs
            .iter()
            .map(|e| match *e {
                Expr::Repeat { min, max, .. } => min.max(max.unwrap_or(0)),
                _ => 0,
            })
            .max()
            .unwrap_or(0)
    }

    /// Roughly the bytes of GBNF text the expressions built so far take,
    /// each written once (a measure of the grammar's size).
    pub fn size(&self) -> usize {
        2 * self.exprs.len() + 3 * self.kids.len() + self.text.len() + 8 * self.ranges.len() + 8 * self.rules.len()
            + 16 * self.states.len()
            + 12 * self.edges.len()
    }

    /// The index of expression `e`: an existing equal one's, or `e`'s once
    /// pushed. What `e` holds was just added at the ends of the arrays, and
    /// is taken back off when an equal expression exists.
    fn intern(&mut self, e: Expr) -> u32 {
        let mut h = self.hasher.build_hasher();
        std::mem::discriminant(&e).hash(&mut h);
        match e {
            Expr::Seq { first, end } | Expr::Alt { first, end } => self.kids(first, end).hash(&mut h),
            Expr::Literal { first, end } => self.text(first, end).hash(&mut h),
            Expr::Class { first, end } => self.ranges(first, end).hash(&mut h),
            Expr::Repeat { expr, min, max } => (expr, min, max).hash(&mut h),
            Expr::Ref { rule } => rule.hash(&mut h),
            Expr::Automaton { first, end } => {
                for s in self.states(first, end) {
                    (s.accept, s.end - s.first).hash(&mut h);
                    self.edges(s).iter().for_each(|e| (e.expr, e.to).hash(&mut h));
                }
            }
        }
        let key = h.finish();
        if let Some(&old) = self.interned.get(&key)
            && self.same(self.exprs[old as usize], e)
        {
            // Take back what `e` added (it was added last).
            match e {
                Expr::Seq { first, .. } | Expr::Alt { first, .. } => self.kids.truncate(first as usize),
                Expr::Literal { first, .. } => self.text.truncate(first as usize),
                Expr::Class { first, .. } => self.ranges.truncate(first as usize),
                Expr::Automaton { first, .. } => {
                    self.edges.truncate(self.states[first as usize].first as usize);
                    self.states.truncate(first as usize);
                }
                Expr::Repeat { .. } | Expr::Ref { .. } => {}
            }
            return old;
        }
        self.exprs.push(e);
        let id = self.exprs.len() as u32 - 1;
        // On a hash collision with a different expression, the first keeps the key.
        self.interned.entry(key).or_insert(id);
        id
    }

    /// Whether two expressions hold the same.
    fn same(&self, a: Expr, b: Expr) -> bool {
        match (a, b) {
            (Expr::Seq { first: f1, end: e1 }, Expr::Seq { first: f2, end: e2 })
            | (Expr::Alt { first: f1, end: e1 }, Expr::Alt { first: f2, end: e2 }) => self.kids(f1, e1) == self.kids(f2, e2),
            (Expr::Literal { first: f1, end: e1 }, Expr::Literal { first: f2, end: e2 }) => self.text(f1, e1) == self.text(f2, e2),
            (Expr::Class { first: f1, end: e1 }, Expr::Class { first: f2, end: e2 }) => self.ranges(f1, e1) == self.ranges(f2, e2),
            (Expr::Automaton { first: f1, end: e1 }, Expr::Automaton { first: f2, end: e2 }) => {
                let (a, b) = (self.states(f1, e1), self.states(f2, e2));
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.accept == y.accept && self.edges(x) == self.edges(y))
            }
            (a, b) => a == b,
        }
    }

    /// The literal string `bytes` (empty: the empty string).
    pub fn literal(&mut self, bytes: &[u8]) -> u32 {
        let first = self.text.len() as u32;
        self.text.extend_from_slice(bytes);
        self.intern(Expr::Literal { first, end: self.text.len() as u32 })
    }

    /// The empty string.
    pub fn empty(&mut self) -> u32 {
        self.literal(b"")
    }

    /// One character of the scalar ranges `ranges`, sorted and apart.
    pub fn class(&mut self, ranges: &[(u32, u32)]) -> u32 {
        let first = self.ranges.len() as u32;
        self.ranges.extend_from_slice(ranges);
        self.intern(Expr::Class { first, end: self.ranges.len() as u32 })
    }

    /// `items` one after another: an item that is itself a sequence adds
    /// its own items, and a single item stands for itself.
    pub fn seq(&mut self, items: &[u32]) -> u32 {
        self.group(items, true)
    }

    /// Any one of `items`: an item that is itself an alternation adds its
    /// own, and a single item stands for itself.
    pub fn alt(&mut self, items: &[u32]) -> u32 {
        self.group(items, false)
    }

    fn group(&mut self, items: &[u32], seq: bool) -> u32 {
        if let [one] = items {
            return *one;
        }
        let first = self.kids.len() as u32;
        for &it in items {
            match self.exprs[it as usize] {
                Expr::Seq { first: a, end: b } if seq => self.kids.extend_from_within(a as usize..b as usize),
                Expr::Alt { first: a, end: b } if !seq => self.kids.extend_from_within(a as usize..b as usize),
                _ => self.kids.push(it),
            }
        }
        let end = self.kids.len() as u32;
        if end - first == 1 {
            let one = self.kids[first as usize];
            self.kids.truncate(first as usize);
            return one;
        }
        self.intern(if seq { Expr::Seq { first, end } } else { Expr::Alt { first, end } })
    }

    /// `e` from `min` to `max` times (`None`: unbounded).
    pub fn repeat(&mut self, e: u32, min: u32, max: Option<u32>) -> u32 {
        self.intern(Expr::Repeat { expr: e, min, max })
    }

    /// A reference to rule `rule`.
    pub fn reference(&mut self, rule: u32) -> u32 {
        self.intern(Expr::Ref { rule })
    }

    /// A new rule named `name` whose body comes later ([`UNDEFINED`] until then).
    pub fn add_rule(&mut self, name: String) -> u32 {
        self.rules.push(Rule { name, body: UNDEFINED });
        self.rules.len() as u32 - 1
    }

    /// Copies every rule of `from` in, each name prefixed with `prefix`, and
    /// returns the index here of `from`'s rule `root`: how one grammar is
    /// made of others (see [`crate::StructuralTag`]).
    pub fn import(&mut self, from: &Rules, root: u32, prefix: &str) -> u32 {
        let base = self.rules.len() as u32;
        for r in &from.rules {
            self.add_rule(format!("{prefix}{}", r.name));
        }
        let mut copied = vec![u32::MAX; from.exprs.len()];
        for (i, r) in from.rules.iter().enumerate() {
            self.rules[base as usize + i].body = self.copy(from, r.body, base, &mut copied);
        }
        base + root
    }

    /// Expression `e` of `from` built here, its rule references moved by
    /// `base`; `copied` holds those built already.
    fn copy(&mut self, from: &Rules, e: u32, base: u32, copied: &mut [u32]) -> u32 {
        if copied[e as usize] != u32::MAX {
            return copied[e as usize];
        }
        let kids = |me: &mut Rules, first, end, copied: &mut [u32]| -> Vec<u32> {
            from.kids(first, end).iter().map(|&k| me.copy(from, k, base, copied)).collect()
        };
        let made = match from.expr(e) {
            Expr::Seq { first, end } => {
                let k = kids(self, first, end, copied);
                self.seq(&k)
            }
            Expr::Alt { first, end } => {
                let k = kids(self, first, end, copied);
                self.alt(&k)
            }
            Expr::Repeat { expr, min, max } => {
                let x = self.copy(from, expr, base, copied);
                self.repeat(x, min, max)
            }
            Expr::Literal { first, end } => self.literal(from.text(first, end)),
            Expr::Class { first, end } => self.class(from.ranges(first, end)),
            Expr::Ref { rule } => self.reference(base + rule),
            Expr::Automaton { first, end } => {
                let (mut states, mut edges, mut twins) = (Vec::new(), Vec::new(), Vec::new());
                for s in from.states(first, end) {
                    let at = edges.len() as u32;
                    for edge in from.edges(s) {
                        edges.push((self.copy(from, edge.expr, base, copied), edge.to));
                    }
                    states.push((s.accept, at, edges.len() as u32));
                    twins.push(s.twin);
                }
                self.automaton(&states, &edges, &twins)
            }
        };
        copied[e as usize] = made;
        made
    }

    /// The rules as GBNF text, rule `first` first and then the others in order.
    /// An automaton's states are written as rules of their own, `auto-`
    /// then the automaton's index and the state's.
    pub fn write(&self, first: u32) -> String {
        let mut out = String::new();
        let mut automata = Vec::new();
        let order = std::iter::once(first as usize).chain((0..self.rules.len()).filter(|&r| r != first as usize));
        for r in order {
            let rule = &self.rules[r];
            out.push_str(&rule.name);
            out.push_str(" ::= ");
            if rule.body == UNDEFINED {
                out.push_str(NEVER_TEXT);
            } else {
                self.write_expr(&mut out, rule.body, 0, &mut automata);
            }
            out.push('\n');
        }
        let mut written = FastMap::default();
        while let Some(a) = automata.pop() {
            let Expr::Automaton { first, end } = self.expr(a) else { continue };
            if written.insert(a, ()).is_some() {
                continue;
            }
            for (i, state) in self.states(first, end).iter().enumerate() {
                let _ = write!(out, "auto-{a}-{i} ::= ");
                let mut alts = 0;
                if state.accept {
                    out.push_str("\"\"");
                    alts += 1;
                }
                for edge in self.edges(state) {
                    if alts > 0 {
                        out.push_str(" | ");
                    }
                    alts += 1;
                    self.write_expr(&mut out, edge.expr, 1, &mut automata);
                    let _ = write!(out, " auto-{a}-{}", edge.to);
                }
                if alts == 0 {
                    out.push_str(NEVER_TEXT);
                }
                out.push('\n');
            }
        }
        out
    }

    /// Writes `e` where an expression binding at least as tightly as
    /// `level` is needed (0: an alternation, 1: a sequence, 2: an atom);
    /// the automata met are pushed on `automata` (their rules are written
    /// after).
    fn write_expr(&self, out: &mut String, e: u32, level: u8, automata: &mut Vec<u32>) {
        let own = match self.expr(e) {
            Expr::Alt { .. } => 0,
            Expr::Seq { first, end } if end - first > 1 => 1,
            _ => 2,
        };
        if own < level {
            out.push('(');
            self.write_expr(out, e, 0, automata);
            out.push(')');
            return;
        }
        match self.expr(e) {
            Expr::Seq { first, end } if first == end => out.push_str("\"\""),
            Expr::Alt { first, end } if first == end => out.push_str(NEVER_TEXT),
            Expr::Seq { first, end } | Expr::Alt { first, end } => {
                let sep = if matches!(self.expr(e), Expr::Seq { .. }) { " " } else { " | " };
                for (i, &k) in self.kids(first, end).iter().enumerate() {
                    if i > 0 {
                        out.push_str(sep);
                    }
                    self.write_expr(out, k, own + 1, automata);
                }
            }
            Expr::Repeat { expr, min, max } => {
                // A repetition of a repetition is grouped.
                if matches!(self.expr(expr), Expr::Repeat { .. }) {
                    out.push('(');
                    self.write_expr(out, expr, 0, automata);
                    out.push(')');
                } else {
                    self.write_expr(out, expr, 2, automata);
                }
                let _ = match (min, max) {
                    (0, None) => write!(out, "*"),
                    (1, None) => write!(out, "+"),
                    (0, Some(1)) => write!(out, "?"),
                    (m, None) => write!(out, "{{{m},}}"),
                    (m, Some(n)) if m == n => write!(out, "{{{m}}}"),
                    (m, Some(n)) => write!(out, "{{{m},{n}}}"),
                };
            }
            Expr::Literal { first, end } => write_literal(out, self.text(first, end)),
            Expr::Class { first, end } => write_class(out, self.ranges(first, end)),
            Expr::Ref { rule } => out.push_str(&self.rules[rule as usize].name),
            Expr::Automaton { .. } => {
                let _ = write!(out, "auto-{e}-0");
                automata.push(e);
            }
        }
    }
}

/// A class that matches no character, as text.
const NEVER_TEXT: &str = "[^\\u0000-\\U0010FFFF]";

/// Writes a GBNF string literal for the UTF-8 `bytes`.
fn write_literal(out: &mut String, bytes: &[u8]) {
    out.push('"');
    for c in String::from_utf8_lossy(bytes).chars() {
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
}

/// Writes one character of a class: as itself where that reads plainly,
/// else escaped.
fn write_class_char(out: &mut String, c: u32) {
    match char::from_u32(c) {
        Some('\\' | ']' | '[' | '-' | '^' | '"') => {
            let _ = write!(out, "\\u{c:04X}");
        }
        Some(ch) if c >= 0x20 && c != 0x7F && !(0x80..0xA0).contains(&c) && c < 0xFFF0 => out.push(ch),
        Some(ch) if c > 0xFFFF => out.push(ch),
        _ if c > 0xFFFF => {
            let _ = write!(out, "\\U{c:08X}");
        }
        _ => {
            let _ = write!(out, "\\u{c:04X}");
        }
    }
}

/// Writes a GBNF character class for the scalar ranges `ranges`, negated
/// when that is shorter. Surrogates (never a character) are left out of
/// the written ends.
fn write_class(out: &mut String, ranges: &[(u32, u32)]) {
    // Ends moved off the surrogates; a range of nothing else dropped.
    let scalar_ends = |ranges: &[(u32, u32)]| -> Vec<(u32, u32)> {
        let off = |c: u32, to: u32| if (0xD800..0xE000).contains(&c) { to } else { c };
        ranges.iter().map(|&(a, b)| (off(a, 0xE000), off(b, 0xD7FF))).filter(|&(a, b)| a <= b).collect()
    };
    let scalar = scalar_ends(ranges);
    if scalar.is_empty() {
        out.push_str(NEVER_TEXT);
        return;
    }
    let others = scalar_ends(&complement(&scalar));
    let (list, negated) = if !others.is_empty() && others.len() < scalar.len() { (&others, true) } else { (&scalar, false) };
    out.push_str(if negated { "[^" } else { "[" });
    for &(a, b) in list {
        write_class_char(out, a);
        if b > a {
            if b > a + 1 {
                out.push('-');
            }
            write_class_char(out, b);
        }
    }
    out.push(']');
}

/// Largest `{m,n}` bound accepted (repetition is expanded).
pub(crate) const MAX_REPEAT: u32 = 1000;

/// Parses GBNF text into rules, numbered in order of their name's first
/// mention (a reference or a definition), so a reference holds its rule's
/// index as soon as it is read.
pub(crate) fn parse(src: &str) -> Result<Rules, CompileError> {
    let mut p = Parser {
        src,
        pos: 0,
        depth: 0,
        ids: TextMap::default(),
        first: Vec::new(),
        out: Rules::default(),
        stack: Vec::new(),
        bytes: Vec::new(),
    };
    p.space(true);
    while p.pos < src.len() {
        let (id, body) = p.rule()?;
        p.out.rules[id].body = body;
        p.space(true);
    }
    // In order of first mention, so the first undefined name is the first written.
    if let Some((rule, &at)) = p.out.rules.iter().zip(&p.first).find(|(r, _)| r.body == UNDEFINED) {
        return Err(CompileError::at(CompileErrorKind::UndefinedRule, format!("rule {:?} is not defined", rule.name), src, at));
    }
    Ok(p.out)
}

struct Parser<'a> {
    src: &'a str,
    pos: usize,
    depth: usize,
    /// Id of each rule name met so far, defined or referenced.
    ids: TextMap<&'a str, u32>,
    /// Per name id: the offset where it is first written.
    first: Vec<usize>,
    out: Rules,
    /// Expressions of the sequences and alternations being read, innermost
    /// last (each takes its own off when it ends).
    stack: Vec<u32>,
    /// The bytes of the literal being read.
    bytes: Vec<u8>,
}

const MAX_NESTING: usize = 200;

impl<'a> Parser<'a> {
    fn err<T>(&self, msg: impl Into<String>) -> Result<T, CompileError> {
        Err(CompileError::at(CompileErrorKind::Syntax, msg, self.src, self.pos))
    }

    fn peek(&self) -> Option<char> {
        let b = *self.src.as_bytes().get(self.pos)?;
        if b.is_ascii() {
            return Some(b as char);
        }
        self.src[self.pos..].chars().next()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    /// Skips blanks and comments; newlines too when `newlines`.
    fn space(&mut self, newlines: bool) {
        let src = self.src.as_bytes();
        while let Some(&c) = src.get(self.pos) {
            match c {
                b' ' | b'\t' => self.pos += 1,
                b'\r' | b'\n' if newlines => self.pos += 1,
                b'#' => {
                    // To the line's end (a line break is one byte, never inside a character).
                    let rest = &src[self.pos..];
                    self.pos += rest.iter().position(|&b| b == b'\n' || b == b'\r').unwrap_or(rest.len());
                }
                _ => break,
            }
        }
    }

    fn name(&mut self) -> Result<&'a str, CompileError> {
        let start = self.pos;
        let src = self.src;
        let len = src.as_bytes()[start..].iter().take_while(|&&c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_').count();
        if len == 0 {
            return self.err("expected a rule name");
        }
        self.pos += len;
        Ok(&src[start..self.pos])
    }

    /// The id of rule name `name`, first written at `offset`.
    fn id(&mut self, name: &'a str, offset: usize) -> u32 {
        let next = self.out.rules.len() as u32;
        let id = *self.ids.entry(name).or_insert(next);
        if id == next {
            self.out.add_rule(name.to_string());
            self.first.push(offset);
        }
        id
    }

    /// Parses one rule: its name's id and its body.
    fn rule(&mut self) -> Result<(usize, u32), CompileError> {
        let offset = self.pos;
        let name = self.name()?;
        let id = self.id(name, offset) as usize;
        if self.out.rules[id].body != UNDEFINED {
            return Err(CompileError::at(
                CompileErrorKind::DuplicateRule,
                format!("rule {name:?} is defined twice"),
                self.src,
                offset,
            ));
        }
        self.space(false);
        if !self.src[self.pos..].starts_with("::=") {
            return self.err(format!("expected '::=' after rule name {name:?}"));
        }
        self.pos += 3;
        self.space(true);
        let body = self.alternates(false)?;
        match self.peek() {
            None | Some('\n' | '\r') => Ok((id, body)),
            Some(c) => self.err(format!("unexpected {c:?}")),
        }
    }

    /// `seq ('|' seq)*`; inside parentheses newlines are blanks.
    /// The expressions on the stack from `base` as one: itself when alone,
    /// else `make(first, end)` over them.
    fn group(&mut self, base: usize, seq: bool) -> u32 {
        let items = &self.stack[base..];
        let e = if seq { self.out.seq(items) } else { self.out.alt(items) };
        self.stack.truncate(base);
        e
    }

    fn alternates(&mut self, nested: bool) -> Result<u32, CompileError> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return self.err("grammar nested too deeply");
        }
        let base = self.stack.len();
        let first = self.sequence(nested)?;
        self.stack.push(first);
        loop {
            // A '|' may also start the next line of a top-level rule.
            let save = self.pos;
            self.space(true);
            if self.peek() == Some('|') {
                self.pos += 1;
                self.space(true);
                let alt = self.sequence(nested)?;
                self.stack.push(alt);
            } else {
                self.pos = save;
                break;
            }
        }
        self.depth -= 1;
        Ok(self.group(base, false))
    }

    fn sequence(&mut self, nested: bool) -> Result<u32, CompileError> {
        let base = self.stack.len();
        loop {
            let start = self.pos;
            let item = match self.peek() {
                Some('"') => {
                    self.pos += 1;
                    self.bytes.clear();
                    loop {
                        // Plain characters up to the next quote, escape or line end at once.
                        let rest = &self.src.as_bytes()[self.pos..];
                        let plain = rest.iter().position(|b| matches!(b, b'"' | b'\\' | b'\n' | b'\r')).unwrap_or(rest.len());
                        self.bytes.extend_from_slice(&rest[..plain]);
                        self.pos += plain;
                        match self.peek() {
                            None | Some('\n' | '\r') => return self.err("unterminated string literal"),
                            Some('"') => {
                                self.pos += 1;
                                break;
                            }
                            _ => {
                                let c = self.char_in_literal()?;
                                self.bytes.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
                            }
                        }
                    }
                    let bytes = std::mem::take(&mut self.bytes);
                    let e = self.out.literal(&bytes);
                    self.bytes = bytes;
                    e
                }
                Some('[') => self.class()?,
                Some('.') => {
                    self.pos += 1;
                    self.out.class(&[(0, 0x10FFFF)])
                }
                Some('(') => {
                    self.pos += 1;
                    self.space(true);
                    let e = self.alternates(true)?;
                    self.space(true);
                    if self.peek() != Some(')') {
                        return self.err("expected ')'");
                    }
                    self.pos += 1;
                    e
                }
                Some('<') => return self.err("token references (<...>) are not supported"),
                Some('!') => return self.err("token negation (!) is not supported"),
                Some(c) if c.is_ascii_alphanumeric() || c == '-' || c == '_' => {
                    let name = self.name()?;
                    if self.src[self.pos..].trim_start_matches([' ', '\t']).starts_with("::=") {
                        // The next rule starts here; this sequence ended at the newline.
                        self.pos = start;
                        break;
                    }
                    let rule = self.id(name, start);
                    self.out.reference(rule)
                }
                _ => break,
            };
            self.space(nested);
            let item = self.postfix(item, nested)?;
            self.stack.push(item);
        }
        if self.stack.len() == base {
            // Nothing: the empty string.
            return Ok(self.out.seq(&[]));
        }
        Ok(self.group(base, true))
    }

    fn postfix(&mut self, mut item: u32, nested: bool) -> Result<u32, CompileError> {
        loop {
            let (min, max) = match self.peek() {
                Some('*') => (0, None),
                Some('+') => (1, None),
                Some('?') => (0, Some(1)),
                Some('{') => {
                    self.pos += 1;
                    self.space(nested);
                    let min = self.number()?;
                    self.space(nested);
                    let max = if self.peek() == Some(',') {
                        self.pos += 1;
                        self.space(nested);
                        if self.peek() == Some('}') { None } else { Some(self.number()?) }
                    } else {
                        Some(min)
                    };
                    self.space(nested);
                    if self.peek() != Some('}') {
                        return self.err("expected '}'");
                    }
                    if max.is_some_and(|m| m < min) {
                        return self.err("repetition {m,n} with n < m");
                    }
                    if min.max(max.unwrap_or(0)) > MAX_REPEAT {
                        return Err(CompileError::at(
                            CompileErrorKind::Limit,
                            format!("repetition bound over {MAX_REPEAT}"),
                            self.src,
                            self.pos,
                        ));
                    }
                    (min, max)
                }
                _ => return Ok(item),
            };
            self.pos += 1;
            self.space(nested);
            item = self.out.repeat(item, min, max);
        }
    }

    fn number(&mut self) -> Result<u32, CompileError> {
        let start = self.pos;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.pos += 1;
        }
        self.src[start..self.pos].parse().or_else(|_| self.err("expected a number"))
    }

    fn class(&mut self) -> Result<u32, CompileError> {
        self.pos += 1;
        let negated = self.peek() == Some('^');
        if negated {
            self.pos += 1;
        }
        let mut ranges = Vec::new();
        loop {
            match self.peek() {
                None => return self.err("unterminated character class"),
                Some(']') => {
                    self.pos += 1;
                    break;
                }
                _ => {}
            }
            let lo = self.char_in_class()? as u32;
            let hi = if self.peek() == Some('-') && !self.src[self.pos + 1..].starts_with(']') {
                self.pos += 1;
                self.char_in_class()? as u32
            } else {
                lo
            };
            if hi < lo {
                return self.err("character range out of order");
            }
            ranges.push((lo, hi));
        }
        let ranges = normalize(ranges);
        Ok(self.out.class(&if negated { complement(&ranges) } else { ranges }))
    }

    fn char_in_class(&mut self) -> Result<char, CompileError> {
        match self.peek() {
            Some('\\') => self.escape(),
            Some(_) => self.bump().ok_or(()).or_else(|_| self.err("unexpected end")),
            None => self.err("unterminated character class"),
        }
    }

    fn char_in_literal(&mut self) -> Result<char, CompileError> {
        self.char_in_class()
    }

    fn escape(&mut self) -> Result<char, CompileError> {
        let at = self.pos;
        self.pos += 1;
        let c = match self.bump() {
            Some('n') => '\n',
            Some('r') => '\r',
            Some('t') => '\t',
            Some(c @ ('\\' | '"' | '\'' | '[' | ']' | '-' | '^' | '.' | '/')) => c,
            Some(k @ ('x' | 'u' | 'U')) => {
                let n = match k {
                    'x' => 2,
                    'u' => 4,
                    _ => 8,
                };
                let digits = self.src.get(self.pos..self.pos + n).unwrap_or("");
                let v = (digits.len() == n && digits.bytes().all(|b| b.is_ascii_hexdigit()))
                    .then(|| u32::from_str_radix(digits, 16).ok())
                    .flatten();
                let Some(v) = v else {
                    self.pos = at;
                    return self.err(format!("\\{k} needs {n} hex digits"));
                };
                self.pos += n;
                match char::from_u32(v) {
                    Some(c) => c,
                    None => {
                        self.pos = at;
                        return self.err(format!("\\{k}{digits} is not a Unicode scalar value"));
                    }
                }
            }
            _ => {
                self.pos = at;
                return self.err("unknown escape");
            }
        };
        Ok(c)
    }
}

/// Sorts and merges scalar ranges.
pub(crate) fn normalize(mut r: Vec<(u32, u32)>) -> Vec<(u32, u32)> {
    r.sort_unstable();
    let mut out: Vec<(u32, u32)> = Vec::with_capacity(r.len());
    for (lo, hi) in r {
        match out.last_mut() {
            Some(last) if lo <= last.1.saturating_add(1) => last.1 = last.1.max(hi),
            _ => out.push((lo, hi)),
        }
    }
    out
}

/// All scalar values (0..=0x10FFFF) not in the normalized `ranges`.
pub(crate) fn complement(ranges: &[(u32, u32)]) -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    let mut next = 0u32;
    for &(lo, hi) in ranges {
        if lo > next {
            out.push((next, lo - 1));
        }
        next = hi + 1;
    }
    if next <= 0x10FFFF {
        out.push((next, 0x10FFFF));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_llama_cpp_shapes() {
        let g = "root ::= (\"a\" | b)* # c\nb ::= [^x-z\\n] .\n  | \"\\u00e9\"{2,3}\n";
        let p = parse(g).expect("parses");
        assert_eq!(p.rules.len(), 2);
        assert_eq!(p.rules[1].name, "b");
        assert!(matches!(p.expr(p.rules[1].body), Expr::Alt { first, end } if end - first == 2));
    }

    /// Equal expressions are one expression, built or read.
    #[test]
    fn expressions_are_shared() {
        let mut r = Rules::default();
        let (a, b) = (r.literal(b"ab"), r.literal(b"ab"));
        assert_eq!(a, b);
        let x = r.class(&[(0x61, 0x7A)]);
        let s1 = r.seq(&[a, x]);
        let s2 = r.seq(&[a, x]);
        assert_eq!(s1, s2);
        assert_ne!(r.alt(&[a, x]), s1);
        // A sequence of sequences is one sequence.
        let nested = r.seq(&[s1, a]);
        let flat = r.seq(&[a, x, a]);
        assert_eq!(nested, flat);
        let p = parse("root ::= \"ab\" [a-z] | (\"ab\" [a-z])").unwrap();
        assert!(matches!(p.expr(p.rules[0].body), Expr::Alt { first, end } if p.kids(first, end)[0] == p.kids(first, end)[1]));
    }

    proptest::proptest! {
        /// Rules written as GBNF read back as the same rules, written the
        /// same again: literals and classes with any characters (escapes,
        /// controls, surrogate ends), nested groups and every repetition.
        #[test]
        fn written_rules_read_back(
            items in proptest::collection::vec((0u8..6, proptest::collection::vec(proptest::char::any(), 0..4), 0u32..4, proptest::option::of(0u32..4)), 1..24),
        ) {
            let mut r = Rules::default();
            let rules = [r.add_rule("root".into()), r.add_rule("x-1".into())];
            let mut built: Vec<u32> = Vec::new();
            for (kind, chars, a, b) in items {
                let bytes = chars.iter().collect::<String>().into_bytes();
                let pick = |i: u32| built.get(i as usize % built.len().max(1)).copied();
                let e = match (kind, pick(a), pick(b.unwrap_or(0))) {
                    (0, _, _) => r.literal(&bytes),
                    (1, _, _) => {
                        let mut ranges: Vec<(u32, u32)> = chars.iter().map(|&c| (c as u32, (c as u32).saturating_add(a).min(0x10FFFF))).collect();
                        ranges.sort_unstable();
                        let mut apart: Vec<(u32, u32)> = Vec::new();
                        for (lo, hi) in ranges {
                            match apart.last_mut() {
                                Some(l) if lo <= l.1 + 1 => l.1 = l.1.max(hi),
                                _ => apart.push((lo, hi)),
                            }
                        }
                        r.class(&apart)
                    }
                    (2, Some(x), Some(y)) => r.seq(&[x, y]),
                    (3, Some(x), Some(y)) => r.alt(&[x, y]),
                    (4, Some(x), _) => r.repeat(x, a, b.map(|b| a + b)),
                    _ => r.reference(rules[a as usize % 2]),
                };
                built.push(e);
            }
            let root = *built.last().unwrap();
            r.rules[0].body = root;
            r.rules[1].body = built[0];
            let text = r.write(0);
            let back = parse(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
            proptest::prop_assert_eq!(back.write(0), text);
        }
    }

    #[test]
    fn errors_have_positions() {
        let e = parse("root ::= \"abc").unwrap_err();
        assert_eq!(e.kind, CompileErrorKind::Syntax);
        assert_eq!(e.line_col, Some((1, 14)));
        let e = parse("root ::= [b-a]").unwrap_err();
        assert_eq!(e.line_col.map(|p| p.0), Some(1));
    }
}
