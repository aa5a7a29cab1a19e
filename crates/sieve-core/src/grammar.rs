//! Context-free constraints: grammar rules (see [`crate::gbnf`]) compiled to
//! per-rule automata over bytes with rule-call edges, parsed by an Earley
//! parser one byte at a time.
//!
//! Each rule body becomes a Thompson automaton (byte ranges, calls, epsilon
//! moves); epsilon moves are closed at compile time, so an Earley item is a
//! `(state, origin)` pair on a byte, call or accept state. Left recursion,
//! ambiguity and empty rules are all handled (nullable calls use the
//! Aycock–Horspool shortcut). Which rules and expressions derive some finite
//! string is decided before building, and only those are compiled, so every
//! state can reach its rule's end and a non-empty Earley set always has a
//! valid continuation: a token is allowed exactly when its bytes leave a
//! non-empty set.

use crate::error::{CompileError, CompileErrorKind, MatchError};
use crate::gbnf::{self, Expr};
use crate::graph::components;
use crate::trie::Walker;
use regex_syntax::utf8::{Utf8Sequence, Utf8Sequences};
use std::ops::RangeInclusive;
use std::rc::Rc;
use crate::hash::{FastMap, FastSet};

/// What an automaton state does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Consumes one byte in `lo..=hi`.
    Byte { lo: u8, hi: u8 },
    /// Consumes one byte of any of the ranges `ranges[first..end]` (the first
    /// bytes of a character class's UTF-8 sequences), each with its own
    /// successors: one item instead of one per sequence. With `search`, the
    /// ranges are many (more than [`SHORT_RANGES`]), in order, and any two
    /// the same or apart (as a class's sequences are): those holding a byte
    /// are found by a binary search.
    Ranges { first: u32, end: u32, search: bool },
    /// Parses rule `rule`, then continues.
    Call { rule: u32 },
    /// End of rule `rule`.
    Accept { rule: u32 },
}

/// A state with its epsilon-closed successors (`next` indexes `succ`; a
/// `Ranges` state has none of its own: each range has its own).
#[derive(Debug, Clone, Copy)]
struct Core {
    kind: Kind,
    rule: u32,
    next: (u32, u32),
}

/// One alternative of a [`Kind::Ranges`] state.
#[derive(Debug, Clone, Copy)]
struct ByteRange {
    lo: u8,
    hi: u8,
    next: (u32, u32),
}

#[derive(Debug, Clone)]
struct RuleInfo {
    start: (u32, u32),
    nullable: bool,
}

/// A copy compiled once to be replicated (see [`Builder::copies`]): its
/// states `states.0..states.1` and its entry, continuing at `from`, and
/// leading to `keep` in every replica alike.
#[derive(Clone, Copy)]
struct Template {
    states: (u32, u32),
    from: u32,
    keep: Option<u32>,
    entry: u32,
}

/// A compiled grammar.
#[derive(Debug)]
pub(crate) struct Grammar {
    core: Vec<Core>,
    succ: Vec<u32>,
    ranges: Vec<ByteRange>,
    rules: Vec<RuleInfo>,
    names: Vec<String>,
    root: u32,
    /// Byte classes: bytes with the same class are taken by the same
    /// states, and each class is a run of consecutive bytes.
    classes: [u8; 256],
    /// States that another state of their rule stands in for, with the
    /// most bytes for which the two take every string alike (see
    /// [`Grammar::stand_in`]).
    stand_ins: FastMap<u32, (u32, u32)>,
}

/// Thompson automaton state before epsilon closure.
#[derive(Clone, Copy)]
enum N {
    Byte { lo: u8, hi: u8, next: u32 },
    Call { rule: u32, next: u32 },
    /// Epsilon moves to the states `Builder::targets[first..end]`.
    Eps { first: u32, end: u32 },
    Accept { rule: u32 },
    /// `(lo, hi, next)` alternatives on the next byte: `Builder::alts[first..end]`.
    Ranges { first: u32, end: u32 },
}

struct Builder<'a> {
    p: &'a gbnf::Rules,
    /// Which expressions derive anything: only those are compiled.
    facts: Facts,
    /// Per source rule: references to it are compiled inline (see [`plan`]).
    inline: Vec<bool>,
    n: Vec<N>,
    /// The targets of all `Eps` states.
    targets: Vec<u32>,
    /// The alternatives of all `Ranges` states, in state order.
    alts: Vec<(u8, u8, u32)>,
    /// The compiled rule each state belongs to.
    owner: Vec<u32>,
    /// The compiled rule being built.
    rule: u32,
    /// Compiled rule index per source rule (`u32::MAX` when not called).
    called: Vec<u32>,
    /// Source rules to compile as rules, in compiled order (root first).
    order: Vec<u32>,
    /// Entry of source rule `q`'s body continuing at state `next`, inside
    /// the compiled rule being built: one copy per continuation, so tail
    /// references share it and right-linear recursion becomes a loop. This
    /// map and the others keyed by a continuation are kept from rule to
    /// rule: a state belongs to one rule, so a key never meets another's.
    memo: FastMap<(u32, u32), u32>,
    /// Optional copies of a bounded repetition's expression continuing at
    /// `next`, by `(expression, next)`: entry `i` takes up to `i` copies
    /// (entry 0 is `next`). Up to `j` copies are a suffix of up to `k`, so
    /// repetitions of one expression with one continuation share a chain.
    chains: FastMap<(Expr, u32), Vec<u32>>,
    /// Inlined bodies still to build: `(source rule, next, placeholder)`.
    pending: Vec<(u32, u32, u32)>,
    /// State consuming a UTF-8 continuation byte in `lo..=hi` then going
    /// to `next`, by `(lo, hi, next)`: character classes that continue at
    /// the same state share their sequences' tails.
    tails: FastMap<(u8, u8, u32), u32>,
    /// The UTF-8 sequences of each character class met, by its expression:
    /// a class is copied wherever its rule is inlined.
    utf8: FastMap<u32, Rc<[Utf8Sequence]>>,
    /// The entries of the alternatives being compiled, innermost last
    /// (each alternation takes its own off when it ends).
    entries: Vec<u32>,
    /// Automaton states that compile alike with their twin
    /// ([`gbnf::State::twin`]): `(state, twin, characters)`, each state
    /// its epsilon state.
    twins: Vec<(u32, u32, u32)>,
    max_states: usize,
}

impl<'a> Builder<'a> {
    fn add(&mut self, s: N) -> Result<u32, CompileError> {
        if self.n.len() >= self.max_states {
            return Err(CompileError::new(
                CompileErrorKind::Limit,
                format!("grammar has more than {} automaton states (Limits::max_grammar_states)", self.max_states),
            ));
        }
        self.n.push(s);
        self.owner.push(self.rule);
        Ok(self.n.len() as u32 - 1)
    }

    /// A state with epsilon moves to `to`.
    fn eps(&mut self, to: &[u32]) -> Result<u32, CompileError> {
        let s = self.add(N::Eps { first: 0, end: 0 })?;
        self.set_eps(s, to);
        Ok(s)
    }

    /// Gives epsilon state `s` the moves to `to`.
    fn set_eps(&mut self, s: u32, to: &[u32]) {
        let first = self.targets.len() as u32;
        self.targets.extend_from_slice(to);
        self.n[s as usize] = N::Eps { first, end: self.targets.len() as u32 };
    }

    /// Gives epsilon state `s` the moves to the entries pushed since `base`,
    /// and takes them off.
    fn set_eps_from_entries(&mut self, s: u32, base: usize) {
        let first = self.targets.len() as u32;
        self.targets.extend_from_slice(&self.entries[base..]);
        self.entries.truncate(base);
        self.n[s as usize] = N::Eps { first, end: self.targets.len() as u32 };
    }

    /// The entry of source rule `q`'s body continuing at `next`: a
    /// placeholder filled by [`Builder::rule`] (no recursion per reference).
    fn inlined(&mut self, q: u32, next: u32) -> Result<u32, CompileError> {
        if let Some(&p) = self.memo.get(&(q, next)) {
            return Ok(p);
        }
        let p = self.eps(&[])?;
        self.memo.insert((q, next), p);
        self.pending.push((q, next, p));
        Ok(p)
    }

    /// Compiles source rule `q` as compiled rule `k`; returns its entry.
    fn rule(&mut self, k: u32, q: u32) -> Result<u32, CompileError> {
        self.rule = k;
        let accept = self.add(N::Accept { rule: k })?;
        let start = self.inlined(q, accept)?;
        self.build_pending(0)?;
        Ok(start)
    }

    /// Builds the inlined bodies pending above the first `depth`.
    fn build_pending(&mut self, depth: usize) -> Result<(), CompileError> {
        while self.pending.len() > depth
            && let Some((q, next, p)) = self.pending.pop()
        {
            let body = self.p.rules[q as usize].body;
            // The placeholder moves straight to a body's alternatives (no
            // state of their own in between).
            match self.p.expr(body) {
                Expr::Alt { first, end } => self.alternatives(first, end, next, p)?,
                _ => {
                    let start = self.expr(body, next)?;
                    self.set_eps(p, &[start]);
                }
            }
        }
        Ok(())
    }

    /// Gives epsilon state `s` moves to the alternatives `kids[first..end]`
    /// that derive anything, each compiled to continue at `next`.
    fn alternatives(&mut self, first: u32, end: u32, next: u32, s: u32) -> Result<(), CompileError> {
        let base = self.entries.len();
        for i in first..end {
            let a = self.p.kids(i, i + 1)[0];
            if self.facts.productive(self.p, a) {
                let entry = self.expr(a, next)?;
                self.entries.push(entry);
            }
        }
        self.set_eps_from_entries(s, base);
        Ok(())
    }

    /// Compiles `count` copies of `e` in a row before `tail`, each
    /// continuing at the one compiled before it (the first at `tail`);
    /// returns the entry of the last. With `chain`, they are the steps of an
    /// optional chain (see [`Builder::chains`]): each copy is entered through
    /// a state with epsilon moves to it and to `next`, and their entries are
    /// pushed on `chain`.
    ///
    /// Copies are alike but for their continuation, so a copy whose states
    /// lead only among themselves, to its continuation and to `next` is
    /// compiled once and then replicated, renumbered. Replicas share no
    /// state with the rest of the rule, which compiling would sometimes
    /// have shared, but have the same moves.
    fn copies(&mut self, e: u32, count: u32, mut tail: u32, next: u32, mut chain: Option<&mut Vec<u32>>) -> Result<u32, CompileError> {
        let optional = chain.is_some();
        let mut template = None;
        for i in 0..count {
            tail = match template {
                Some(t) => self.replicate(t, tail)?,
                None => {
                    let (a, depth) = (self.n.len() as u32, self.pending.len());
                    let mut entry = self.expr(e, tail)?;
                    if optional {
                        entry = self.eps(&[entry, next])?;
                    }
                    // A template needs its placeholders built, and its
                    // continuation apart from `next` (a copy's moves to
                    // them differ).
                    if count - i > 1 && (!optional || tail != next) {
                        self.build_pending(depth)?;
                        let t = Template { states: (a, self.n.len() as u32), from: tail, keep: optional.then_some(next), entry };
                        template = self.closed(&t).then_some(t);
                    }
                    entry
                }
            };
            if let Some(chain) = chain.as_deref_mut() {
                chain.push(tail);
            }
        }
        Ok(tail)
    }

    /// True when the states of `t` lead only among themselves, to its
    /// continuation and to the state it keeps, and its entry is its own.
    fn closed(&self, t: &Template) -> bool {
        let (a, b) = t.states;
        let ok = |s: u32| (a..b).contains(&s) || s == t.from || Some(s) == t.keep;
        (a..b).contains(&t.entry)
            && self.n[a as usize..b as usize].iter().all(|s| match *s {
                N::Byte { next, .. } | N::Call { next, .. } => ok(next),
                N::Eps { first, end } => self.targets[first as usize..end as usize].iter().all(|&t| ok(t)),
                N::Ranges { first, end } => self.alts[first as usize..end as usize].iter().all(|a| ok(a.2)),
                N::Accept { .. } => false,
            })
    }

    /// A copy of template `t` continuing at `to` instead; returns its entry.
    fn replicate(&mut self, t: Template, to: u32) -> Result<u32, CompileError> {
        let (a, b) = t.states;
        let base = self.n.len() as u32;
        let map = |s: u32| if s == t.from { to } else if Some(s) == t.keep { s } else { s - a + base };
        for i in a..b {
            let s = match self.n[i as usize] {
                N::Byte { lo, hi, next } => N::Byte { lo, hi, next: map(next) },
                N::Call { rule, next } => N::Call { rule, next: map(next) },
                N::Eps { first, end } => {
                    let at = self.targets.len() as u32;
                    for k in first..end {
                        self.targets.push(map(self.targets[k as usize]));
                    }
                    N::Eps { first: at, end: self.targets.len() as u32 }
                }
                N::Ranges { first, end } => {
                    let at = self.alts.len() as u32;
                    for k in first..end {
                        let (lo, hi, next) = self.alts[k as usize];
                        self.alts.push((lo, hi, map(next)));
                    }
                    N::Ranges { first: at, end: self.alts.len() as u32 }
                }
                s @ N::Accept { .. } => s,
            };
            self.add(s)?;
        }
        Ok(map(t.entry))
    }

    /// The entry of up to `count` copies of `e` continuing at `next` (see
    /// [`Builder::chains`]).
    fn optional(&mut self, e: u32, count: u32, next: u32) -> Result<u32, CompileError> {
        if count == 0 {
            return Ok(next);
        }
        let key = (self.p.expr(e), next);
        let mut chain = self.chains.remove(&key).unwrap_or_else(|| vec![next]);
        if chain.len() <= count as usize {
            let (more, last) = (count + 1 - chain.len() as u32, chain[chain.len() - 1]);
            self.copies(e, more, last, next, Some(&mut chain))?;
        }
        let entry = chain[count as usize];
        self.chains.insert(key, chain);
        Ok(entry)
    }

    /// Compiles automaton `e` (`states[first..end]`), which derives some string,
    /// so that it continues at `next`; returns its entry. Each state that
    /// can reach an accepting one is an epsilon state moving to `next` if it
    /// accepts, and into each edge that derives something towards such a
    /// state.
    fn automaton(&mut self, e: u32, first: u32, end: u32, next: u32) -> Result<u32, CompileError> {
        let p = self.p;
        // Worked out with the rules' final facts (and then kept).
        self.facts.productive(p, e);
        let live = self.facts.live[first as usize..end as usize].to_vec();
        let mut at = vec![u32::MAX; live.len()];
        for (i, _) in live.iter().enumerate().filter(|x| *x.1) {
            at[i] = self.add(N::Eps { first: 0, end: 0 })?;
        }
        for (i, state) in p.states(first, end).iter().enumerate() {
            if !live[i] {
                continue;
            }
            let base = self.entries.len();
            if state.accept {
                self.entries.push(next);
            }
            for edge in p.edges(state) {
                if live[edge.to as usize] && self.facts.productive(p, edge.expr) {
                    let entry = self.expr(edge.expr, at[edge.to as usize])?;
                    self.entries.push(entry);
                }
            }
            self.set_eps_from_entries(at[i], base);
        }
        // A state and its twin compile alike (the same expressions on the
        // same edges) where their edges lead to states with one same twin:
        // their closures then hold states that take every string alike, in
        // the same places (see [`Grammar::close`]).
        let states = p.states(first, end);
        let stand_in = |t: u32| states[t as usize].twin.map_or(t, |t| t.0);
        for (i, state) in states.iter().enumerate().filter(|x| live[x.0]) {
            let Some((j, chars)) = state.twin.filter(|t| live[t.0 as usize]) else { continue };
            let twin = &states[j as usize];
            let (mine, theirs) = (p.edges(state), p.edges(twin));
            let alike = state.accept == twin.accept
                && mine.len() == theirs.len()
                && mine.iter().zip(theirs).all(|(a, b)| {
                    a.expr == b.expr && live[a.to as usize] == live[b.to as usize] && (stand_in(a.to) == stand_in(b.to) || stand_in(a.to) == b.to)
                });
            if alike {
                self.twins.push((at[i], at[j as usize], chars));
            }
        }
        Ok(at[0])
    }

    /// Compiles `e`, which derives some string, so that it continues at
    /// `next`; returns its entry state.
    fn expr(&mut self, e: u32, next: u32) -> Result<u32, CompileError> {
        let p = self.p;
        Ok(match p.expr(e) {
            Expr::Seq { first, end } => {
                let mut next = next;
                for &it in p.kids(first, end).iter().rev() {
                    next = self.expr(it, next)?;
                }
                next
            }
            Expr::Alt { first, end } => {
                let s = self.eps(&[])?;
                self.alternatives(first, end, next, s)?;
                s
            }
            Expr::Literal { first, end } => {
                let mut next = next;
                for &b in p.text(first, end).iter().rev() {
                    next = self.add(N::Byte { lo: b, hi: b, next })?;
                }
                next
            }
            Expr::Class { first: class, end: class_end } => {
                let first = self.alts.len();
                let seqs = self.utf8.entry(e).or_insert_with(|| utf8_sequences(p.ranges(class, class_end)).into()).clone();
                for seq in seqs.iter() {
                    let mut s = next;
                    let (head, rest) = seq
                        .as_slice()
                        .split_first()
                        .ok_or_else(|| CompileError::new(CompileErrorKind::Syntax, "empty UTF-8 sequence"))?;
                    for r in rest.iter().rev() {
                        s = match self.tails.get(&(r.start, r.end, s)) {
                            Some(&t) => t,
                            None => {
                                let t = self.add(N::Byte { lo: r.start, hi: r.end, next: s })?;
                                self.tails.insert((r.start, r.end, s), t);
                                t
                            }
                        };
                    }
                    self.alts.push((head.start, head.end, s));
                }
                match self.alts.len() - first {
                    0 => self.eps(&[])?,
                    1 => {
                        let (lo, hi, next) = self.alts[first];
                        self.alts.truncate(first);
                        self.add(N::Byte { lo, hi, next })?
                    }
                    _ => self.add(N::Ranges { first: first as u32, end: self.alts.len() as u32 })?,
                }
            }
            Expr::Ref { rule: q } if self.inline[q as usize] => self.inlined(q, next)?,
            Expr::Ref { rule: q } => {
                if self.called[q as usize] == u32::MAX {
                    self.called[q as usize] = self.order.len() as u32;
                    self.order.push(q);
                }
                self.add(N::Call { rule: self.called[q as usize], next })?
            }
            Expr::Automaton { first, end } => self.automaton(e, first, end, next)?,
            // Nothing but zero copies.
            Expr::Repeat { expr, .. } if !self.facts.productive(p, expr) => next,
            Expr::Repeat { expr, min, max } => {
                let tail = match max {
                    None => {
                        let lp = self.eps(&[])?;
                        let body = self.expr(expr, lp)?;
                        self.set_eps(lp, &[body, next]);
                        lp
                    }
                    Some(max) => self.optional(expr, max.saturating_sub(min), next)?,
                };
                self.copies(expr, min, tail, next, None)?
            }
        })
    }
}

/// The UTF-8 byte sequences of a class's characters (surrogates left out).
fn utf8_sequences(ranges: &[(u32, u32)]) -> Vec<Utf8Sequence> {
    let mut out = Vec::new();
    for &(lo, hi) in ranges {
        let lo = if (0xD800..0xE000).contains(&lo) { 0xE000 } else { lo };
        let hi = if (0xD800..0xE000).contains(&hi) { 0xD7FF } else { hi };
        let (Some(lo), Some(hi)) = (char::from_u32(lo), char::from_u32(hi)) else { continue };
        if lo <= hi {
            out.extend(Utf8Sequences::new(lo, hi));
        }
    }
    out
}

/// Largest estimated automaton size (in states) of a rule compiled inline
/// at each of its references. Inlining keeps lexical structure (strings,
/// numbers, whitespace, pattern automata) inside one rule
/// automaton, which is what lets the token cache decide most tokens without
/// context.
const INLINE_MAX: usize = 1000;

/// The same for a rule that calls no rule once inlined (an automaton, such
/// as a pattern): called, it would take the token cache's walks off its DFA
/// onto Earley steps at every trie node, so copying it is worth more.
const INLINE_MAX_AUTOMATON: usize = 4000;

/// Estimated automaton states of `e` (as [`Builder::expr`] compiles it),
/// with `r(rule, tail)` the cost of a reference; `tail` is true when the
/// reference continues where `e` does (it ends its rule's body).
fn cost(p: &gbnf::Rules, e: u32, tail: bool, r: &mut dyn FnMut(u32, bool) -> usize) -> usize {
    match p.expr(e) {
        Expr::Seq { first, end } => {
            let last = (end - first).saturating_sub(1) as usize;
            p.kids(first, end).iter().enumerate().fold(0, |s, (i, &e)| s.saturating_add(cost(p, e, tail && i == last, r)))
        }
        Expr::Alt { first, end } => p.kids(first, end).iter().fold(1, |s, &e| s.saturating_add(cost(p, e, tail, r))),
        Expr::Repeat { expr, min, max } => match max {
            // A loop state, the loop body and `min` copies before it.
            None => cost(p, expr, false, r).saturating_mul(min as usize + 1).saturating_add(1),
            Some(0) => 0,
            // One copy continues where the repetition does; the others do not.
            Some(max) => {
                // Each estimate is taken once: nested repetitions stay linear.
                let other = cost(p, expr, false, r);
                let last = if tail { cost(p, expr, true, r) } else { other };
                last.saturating_add(other.saturating_mul(max as usize - 1)).saturating_add((max - min.min(max)) as usize)
            }
        },
        Expr::Literal { first, end } => (end - first) as usize,
        Expr::Class { first, end } => 1 + 4 * (end - first) as usize,
        Expr::Ref { rule } => r(rule, tail),
        // A state each, and its edges.
        Expr::Automaton { first, end } => p
            .states(first, end)
            .iter()
            .flat_map(|s| p.edges(s))
            .fold((end - first) as usize, |sum, e| sum.saturating_add(cost(p, e.expr, false, r))),
    }
}

/// Calls `f(rule, n)` for each reference in `e`, compiled `n` times when
/// `e` is compiled `times` times.
fn copies(p: &gbnf::Rules, e: u32, times: usize, f: &mut dyn FnMut(u32, usize)) {
    match p.expr(e) {
        Expr::Seq { first, end } | Expr::Alt { first, end } => p.kids(first, end).iter().for_each(|&e| copies(p, e, times, f)),
        Expr::Repeat { expr, min, max } => {
            let n = max.map_or(min as usize + 1, |m| m as usize);
            copies(p, expr, times.saturating_mul(n), f)
        }
        Expr::Ref { rule } => f(rule, times),
        Expr::Automaton { first, end } => p.states(first, end).iter().flat_map(|s| p.edges(s)).for_each(|e| copies(p, e.expr, times, f)),
        Expr::Literal { .. } | Expr::Class { .. } => {}
    }
}

/// Per source rule, its references: `(rule, n)`, the rule compiled `n`
/// times per copy of the body (see [`copies`]); rule `q`'s are
/// `list[at[q]..at[q + 1]]`.
struct Calls {
    at: Vec<usize>,
    list: Vec<(u32, usize)>,
}

impl Calls {
    fn new(p: &gbnf::Rules) -> Calls {
        let mut c = Calls { at: vec![0], list: Vec::new() };
        for r in &p.rules {
            copies(p, r.body, 1, &mut |t, n| c.list.push((t, n)));
            c.at.push(c.list.len());
        }
        c
    }

    fn of(&self, q: usize) -> &[(u32, usize)] {
        &self.list[self.at[q]..self.at[q + 1]]
    }
}

/// The strongly connected components of the rules' call graph, callees first.
struct Components {
    /// Per rule, its component.
    of: Vec<usize>,
    /// Per component, its rules.
    members: Vec<Vec<u32>>,
}

impl Components {
    fn new(rules: usize, calls: &Calls) -> Components {
        let (of, n) = components(rules, 0..rules, |q, i| calls.of(q).get(i).map(|c| c.0 as usize));
        let mut members: Vec<Vec<u32>> = vec![Vec::new(); n];
        for (q, &c) in of.iter().enumerate() {
            members[c].push(q as u32);
        }
        Components { of, members }
    }
}

/// What each rule and expression derives: some finite string (productive),
/// the empty string (nullable). Decided on the rules, before any automaton
/// is built, so that the builder compiles only what can finish: a
/// productive expression compiled to continue at a state from which its
/// rule's end is reachable makes only such states.
struct Facts {
    productive: Vec<bool>,
    nullable: Vec<bool>,
    /// Per expression: `(round, productive, nullable)` as last worked out
    /// (see [`Facts::expr`]).
    exprs: Vec<(u32, bool, bool)>,
    round: u32,
    /// Per round: whether it was a component's last, whose facts are final
    /// (so are the expressions worked out in it).
    last: Vec<bool>,
    /// Per automaton state: whether an accepting state is reachable from
    /// it over edges that derive something (as its automaton's expression
    /// was last worked out).
    live: Vec<bool>,
    /// Scratch: automaton edges backwards (see [`Facts::automaton`]), and
    /// a work list.
    into: (Vec<u32>, Vec<u32>),
    todo: Vec<u32>,
}

impl Facts {
    /// The facts of every rule: components callees first, each until its
    /// rules' facts no longer change (once for a rule that does not
    /// recurse).
    fn new(p: &gbnf::Rules, calls: &Calls, comps: &Components) -> Facts {
        let n = p.rules.len();
        let mut f = Facts {
            productive: vec![false; n],
            nullable: vec![false; n],
            exprs: vec![(u32::MAX, false, false); p.expr_count()],
            round: 0,
            last: Vec::new(),
            live: vec![false; p.state_count()],
            into: (Vec::new(), Vec::new()),
            todo: Vec::new(),
        };
        for members in &comps.members {
            loop {
                f.round += 1;
                f.last.push(false);
                let mut changed = false;
                for &q in members {
                    let (prod, null) = f.expr(p, p.rules[q as usize].body);
                    let q = q as usize;
                    changed |= prod != f.productive[q] || null != f.nullable[q];
                    (f.productive[q], f.nullable[q]) = (prod, null);
                }
                let recursive = members.len() > 1 || calls.of(members[0] as usize).iter().any(|c| c.0 == members[0]);
                if !changed || !recursive {
                    f.last[f.round as usize - 1] = true;
                    break;
                }
            }
        }
        f
    }

    /// Whether expression `e` is productive and nullable, with the rules'
    /// facts as they stand (worked out once per round, and once for good in
    /// a component's last round).
    fn expr(&mut self, p: &gbnf::Rules, e: u32) -> (bool, bool) {
        let (round, prod, null) = self.exprs[e as usize];
        if round == self.round || self.last.get(round.wrapping_sub(1) as usize) == Some(&true) {
            return (prod, null);
        }
        let out = match p.expr(e) {
            Expr::Literal { first, end } => (true, first == end),
            Expr::Class { first, end } => (p.ranges(first, end).iter().any(|&r| has_scalar(r)), false),
            Expr::Seq { first, end } => p.kids(first, end).iter().fold((true, true), |(a, b), &k| {
                let (x, y) = self.expr(p, k);
                (a && x, b && y)
            }),
            Expr::Alt { first, end } => p.kids(first, end).iter().fold((false, false), |(a, b), &k| {
                let (x, y) = self.expr(p, k);
                (a || x, b || y)
            }),
            Expr::Repeat { expr, min, .. } => {
                let (x, y) = self.expr(p, expr);
                (min == 0 || x, min == 0 || y)
            }
            Expr::Ref { rule } => (self.productive[rule as usize], self.nullable[rule as usize]),
            Expr::Automaton { first, end } => self.automaton(p, first, end),
        };
        self.exprs[e as usize] = (self.round, out.0, out.1);
        out
    }

    /// Whether `e` derives some finite string (its rules' facts final).
    fn productive(&mut self, p: &gbnf::Rules, e: u32) -> bool {
        self.expr(p, e).0
    }

    /// Whether automaton `states[first..end]` is productive and nullable;
    /// its states' [`Facts::live`] flags on the way.
    fn automaton(&mut self, p: &gbnf::Rules, first: u32, end: u32) -> (bool, bool) {
        let states = p.states(first, end);
        // Live: backwards from the accepting states over productive edges
        // (`into`: per state, the states with such an edge into it, at
        // `into[at[t]..at[t + 1]]`).
        let mut into = std::mem::take(&mut self.into);
        let (at, from) = (&mut into.0, &mut into.1);
        at.clear();
        at.resize(states.len() + 2, 0);
        from.clear();
        for state in states {
            for edge in p.edges(state) {
                if self.expr(p, edge.expr).0 {
                    at[edge.to as usize + 2] += 1;
                }
            }
        }
        for t in 2..at.len() {
            at[t] += at[t - 1];
        }
        from.resize(at[states.len() + 1] as usize, 0);
        for (i, state) in states.iter().enumerate() {
            for edge in p.edges(state) {
                if self.expr(p, edge.expr).0 {
                    let slot = &mut at[edge.to as usize + 1];
                    from[*slot as usize] = i as u32;
                    *slot += 1;
                }
            }
        }
        let live = &mut self.live[first as usize..end as usize];
        live.fill(false);
        let mut todo = std::mem::take(&mut self.todo);
        todo.clear();
        todo.extend((0..states.len() as u32).filter(|&i| states[i as usize].accept));
        while let Some(i) = todo.pop() {
            if !std::mem::replace(&mut live[i as usize], true) {
                todo.extend_from_slice(&from[at[i as usize] as usize..at[i as usize + 1] as usize]);
            }
        }
        let productive = live[0];
        // Nullable: an accepting state reached from the first over nullable
        // edges.
        let mut seen = vec![false; states.len()];
        let mut nullable = false;
        todo.push(0);
        while let Some(i) = todo.pop() {
            if std::mem::replace(&mut seen[i as usize], true) {
                continue;
            }
            let state = &states[i as usize];
            nullable |= state.accept;
            for edge in p.edges(state) {
                if !seen[edge.to as usize] && self.expr(p, edge.expr).1 {
                    todo.push(edge.to);
                }
            }
        }
        (self.into, self.todo) = (into, todo);
        (productive, nullable)
    }
}

/// Whether scalar range `r` holds a character (not only surrogates).
fn has_scalar(r: (u32, u32)) -> bool {
    r.0 <= r.1 && (r.0 < 0xD800 || r.1 > 0xDFFF)
}

/// Rules a copy of a component holds, `(rule, cost)`, continued by those of
/// the component named (see [`plan`]).
type Held = (Vec<(u32, usize)>, Option<usize>);

/// Decides which source rules are compiled inline at their references:
/// those whose recursion, if any, is right-linear (inside their strongly
/// connected component every reference ends its rule's body, so the inlined
/// copies close into loops through [`Builder::memo`]) and whose inlined copy
/// is estimated at most [`INLINE_MAX`] states ([`INLINE_MAX_AUTOMATON`] when
/// the copy calls nothing), or that are referenced once (inlining them
/// copies nothing). A copy holds, once each, the
/// rules reached through tail references (they share one continuation) and
/// a copy of each rule referenced elsewhere.
fn plan(p: &gbnf::Rules, calls: &Calls, comps: &Components) -> Vec<bool> {
    let rules = &p.rules;
    let (comp, members) = (&comps.of, &comps.members);
    let ncomp = members.len();
    // Per component: how many copies of references from outside it compile.
    let mut outside = vec![0usize; ncomp];
    for q in 0..rules.len() {
        for &(t, n) in calls.of(q) {
            let t = t as usize;
            if comp[t] != comp[q] {
                outside[comp[t]] = outside[comp[t]].saturating_add(n);
            }
        }
    }
    let mut inline = vec![false; rules.len()];
    // Per inlined component: the rules one copy holds once, with their own
    // cost (a list, continued by the list of the component it names: a
    // chain of rules each ending in the next shares one list), and whether
    // a copy calls nothing (an automaton). A copy above
    // [`INLINE_MAX_AUTOMATON`] keeps no list: any copy holding it is too
    // large to inline at every reference as well.
    let mut shared: Vec<Held> = vec![(Vec::new(), None); ncomp];
    let mut shared_cost = vec![0usize; ncomp];
    let mut regular = vec![false; ncomp];
    let mut mark = vec![usize::MAX; rules.len()];
    for c in 0..ncomp {
        let cyclic = members[c].len() > 1 || members[c].iter().any(|&q| calls.of(q as usize).iter().any(|c| c.0 == q));
        let (mut linear, mut tails, mut calls) = (true, Vec::new(), false);
        let mut held: Vec<(u32, usize)> = Vec::new();
        for &q in &members[c] {
            let own = cost(p, rules[q as usize].body, true, &mut |r, tail| {
                let r = r as usize;
                if comp[r] == c {
                    linear &= tail;
                    0
                } else if !inline[r] {
                    calls = true;
                    1
                } else if tail {
                    calls |= !regular[comp[r]];
                    tails.push(comp[r]);
                    0
                } else {
                    calls |= !regular[comp[r]];
                    shared_cost[comp[r]]
                }
            });
            held.push((q, own));
        }
        tails.sort_unstable();
        tails.dedup();
        let own = held.iter().fold(0usize, |s, x| s.saturating_add(x.1));
        let mut rest = None;
        let size = if tails.iter().any(|&t| shared_cost[t] > INLINE_MAX_AUTOMATON) {
            usize::MAX
        } else if let [t] = tails[..] {
            // One tail (whose rules are not this component's): its list continues this one.
            rest = Some(t);
            own.saturating_add(shared_cost[t])
        } else {
            // The union of the tails' lists (`mark` says which list last took a rule).
            for &(q, _) in &held {
                mark[q as usize] = c;
            }
            for t in tails {
                let mut list = Some(t);
                while let Some(k) = list {
                    for &(q, cost) in &shared[k].0 {
                        if std::mem::replace(&mut mark[q as usize], c) != c {
                            held.push((q, cost));
                        }
                    }
                    list = shared[k].1;
                }
            }
            held.iter().fold(0usize, |s, x| s.saturating_add(x.1))
        };
        // Referenced once, a component is never copied: inline it at any size.
        let max = if calls { INLINE_MAX } else { INLINE_MAX_AUTOMATON };
        if (!cyclic || linear) && (size <= max || outside[c] == 1) {
            members[c].iter().for_each(|&q| inline[q as usize] = true);
            if size <= INLINE_MAX_AUTOMATON {
                shared[c] = (held, rest);
            }
            shared_cost[c] = size;
            regular[c] = !calls;
        }
    }
    inline
}

impl Grammar {
    /// Compiles GBNF text whose start rule is `root`.
    pub fn new(src: &str, max_states: usize) -> Result<Grammar, CompileError> {
        let parsed = gbnf::parse(src)?;
        let root = parsed
            .rules
            .iter()
            .position(|r| r.name == "root")
            .ok_or(CompileError::new(CompileErrorKind::NoRoot, "the grammar has no rule named \"root\""))?
            as u32;
        Self::from_rules(&parsed, root, max_states)
    }

    /// Compiles rules whose start rule is `root` (every rule defined).
    pub fn from_rules(parsed: &gbnf::Rules, root: u32, max_states: usize) -> Result<Grammar, CompileError> {
        if parsed.max_repeat() > gbnf::MAX_REPEAT {
            return Err(CompileError::new(CompileErrorKind::Limit, format!("repetition bound over {}", gbnf::MAX_REPEAT)));
        }
        let rules = &parsed.rules;
        let calls = Calls::new(parsed);
        let comps = Components::new(rules.len(), &calls);
        let inline = plan(parsed, &calls, &comps);
        let facts = Facts::new(parsed, &calls, &comps);
        if !facts.productive[root as usize] {
            // Nothing to compile: the start rule derives no string.
            let names = vec![rules[root as usize].name.clone()];
            let rules = vec![RuleInfo { start: (0, 0), nullable: false }];
            return Ok(Grammar { core: Vec::new(), succ: Vec::new(), ranges: Vec::new(), rules, names, root: 0, classes: [0; 256], stand_ins: FastMap::default() });
        }
        let mut called = vec![u32::MAX; rules.len()];
        called[root as usize] = 0;
        let mut b = Builder {
            p: parsed,
            facts,
            inline,
            n: Vec::new(),
            targets: Vec::new(),
            alts: Vec::new(),
            owner: Vec::new(),
            rule: 0,
            called,
            order: vec![root],
            memo: FastMap::default(),
            pending: Vec::new(),
            chains: FastMap::default(),
            tails: FastMap::default(),
            utf8: FastMap::default(),
            entries: Vec::new(),
            twins: Vec::new(),
            max_states,
        };
        // Compile the rules that are called, root first (the list grows
        // as references to them are met).
        let mut starts = Vec::new();
        while let Some(&q) = b.order.get(starts.len()) {
            starts.push(b.rule(starts.len() as u32, q)?);
        }
        let names = b.order.iter().map(|&q| rules[q as usize].name.clone()).collect();
        let nullable: Vec<bool> = b.order.iter().map(|&q| b.facts.nullable[q as usize]).collect();
        Ok(Self::close(&b, &starts, &nullable, names))
    }

    /// Epsilon-closes the builder's automaton, whose rules start at
    /// `starts`. Rule 0 is the start rule; every state can reach its rule's
    /// end (the builder compiles nothing else).
    fn close(b: &Builder, starts: &[u32], nullable: &[bool], names: Vec<String>) -> Grammar {
        let (n, targets, alts, owner) = (&b.n, &b.targets, &b.alts, &b.owner);
        // A `Ranges` state's ranges keep their indexes in `alts`.
        let mut core_of = vec![u32::MAX; n.len()];
        let mut core = Vec::with_capacity(n.len());
        for (i, s) in n.iter().enumerate() {
            let kind = match *s {
                N::Byte { lo, hi, .. } => Kind::Byte { lo, hi },
                N::Ranges { first, end } => {
                    let rs = &alts[first as usize..end as usize];
                    let apart = rs.windows(2).all(|w| (w[0].0, w[0].1) == (w[1].0, w[1].1) || w[0].1 < w[1].0);
                    Kind::Ranges { first, end, search: rs.len() > SHORT_RANGES && apart }
                }
                N::Call { rule, .. } => Kind::Call { rule },
                N::Accept { rule } => Kind::Accept { rule },
                N::Eps { .. } => continue,
            };
            core_of[i] = core.len() as u32;
            core.push(Core { kind, rule: owner[i], next: (0, 0) });
        }
        // Epsilon closures, one per automaton state at most, kept in `succ`
        // (`seen` marks the states of the closure being taken by its round).
        let mut succ: Vec<u32> = Vec::with_capacity(n.len());
        let mut closures = vec![(u32::MAX, 0u32); n.len()];
        let (mut seen, mut round, mut stack) = (vec![0u32; n.len()], 0u32, Vec::new());
        let mut closure = |at: u32, succ: &mut Vec<u32>| -> (u32, u32) {
            if closures[at as usize].0 == u32::MAX {
                let a = succ.len() as u32;
                if let N::Eps { .. } = n[at as usize] {
                    round += 1;
                    stack.push(at);
                    while let Some(s) = stack.pop() {
                        if std::mem::replace(&mut seen[s as usize], round) == round {
                            continue;
                        }
                        match n[s as usize] {
                            N::Eps { first, end } => stack.extend(targets[first as usize..end as usize].iter().rev()),
                            _ => succ.push(core_of[s as usize]),
                        }
                    }
                } else {
                    succ.push(core_of[at as usize]);
                }
                closures[at as usize] = (a, succ.len() as u32);
            }
            closures[at as usize]
        };
        for (s, c) in n.iter().filter(|s| !matches!(s, N::Eps { .. })).zip(&mut core) {
            if let N::Byte { next, .. } | N::Call { next, .. } = *s {
                c.next = closure(next, &mut succ);
            }
        }
        let ranges: Vec<ByteRange> = alts.iter().map(|&(lo, hi, t)| ByteRange { lo, hi, next: closure(t, &mut succ) }).collect();
        let rules = starts.iter().zip(nullable).map(|(&s, &nullable)| RuleInfo { start: closure(s, &mut succ), nullable }).collect();
        // A class starts at every byte where some state's range starts or
        // ends (256 such bytes at most, so classes fit a u8).
        let mut starts = [false; 256];
        let mut cut = |lo: u8, hi: u8| {
            starts[lo as usize] = true;
            if let Some(next) = starts.get_mut(hi as usize + 1) {
                *next = true;
            }
        };
        for c in &core {
            if let Kind::Byte { lo, hi } = c.kind {
                cut(lo, hi);
            }
        }
        ranges.iter().for_each(|r| cut(r.lo, r.hi));
        let mut classes = [0u8; 256];
        for b in 1..256 {
            classes[b] = classes[b - 1] + starts[b] as u8;
        }
        // Twins' closures hold the states compiled from the same edges in
        // the same order: each state stands in for the other's.
        let mut stand_ins = FastMap::default();
        for &(x, y, chars) in &b.twins {
            let ((from, end), (twin_from, twin_end)) = (closure(x, &mut succ), closure(y, &mut succ));
            if end - from != twin_end - twin_from {
                continue;
            }
            for (&s, &t) in succ[from as usize..end as usize].iter().zip(&succ[twin_from as usize..twin_end as usize]) {
                if s != t {
                    stand_ins.entry(s).or_insert((t, chars));
                }
            }
        }
        Grammar { core, succ, ranges, rules, names, root: 0, classes, stand_ins }
    }

    /// True when the start rule derives no string at all.
    pub fn is_empty(&self) -> bool {
        let (a, b) = self.rules[self.root as usize].start;
        a == b
    }

    /// Approximate heap bytes held.
    pub fn memory(&self) -> usize {
        self.core.len() * std::mem::size_of::<Core>()
            + self.succ.len() * 4
            + self.ranges.len() * std::mem::size_of::<ByteRange>()
            + self.rules.len() * std::mem::size_of::<RuleInfo>()
            + self.names.iter().map(|n| n.len() + 24).sum::<usize>()
            + self.stand_ins.len() * 16
    }

    /// Adds to `set` the bytes a string derived from `list` may start with
    /// before any call, and to `calls` the rules it may call first (their
    /// first bytes belong to it too); true when `list` may reach its rule's
    /// end without a byte. `seen` marks the states met with `stamp`: those
    /// are skipped (one walk may span several lists). `lists` is scratch.
    fn first_of(&self, list: (u32, u32), set: &mut [u64; 4], calls: &mut Vec<u32>, seen: &mut [u32], stamp: u32, lists: &mut Vec<(u32, u32)>) -> bool {
        let mut end = false;
        lists.clear();
        lists.push(list);
        while let Some(list) = lists.pop() {
            for &s in self.list(list) {
                if std::mem::replace(&mut seen[s as usize], stamp) == stamp {
                    continue;
                }
                let c = &self.core[s as usize];
                match c.kind {
                    Kind::Byte { lo, hi } => mark(set, lo, hi),
                    Kind::Ranges { first: a, end: b, .. } => self.ranges[a as usize..b as usize]
                        .iter()
                        .filter(|r| r.next.0 != r.next.1)
                        .for_each(|r| mark(set, r.lo, r.hi)),
                    Kind::Call { rule } => {
                        calls.push(rule);
                        if self.rules[rule as usize].nullable {
                            lists.push(c.next);
                        }
                    }
                    Kind::Accept { .. } => end = true,
                }
            }
        }
        end
    }

    /// The rules' FOLLOW sets over bytes, computed per rule when asked
    /// (see [`FollowSets`]).
    pub fn follow_sets(&self) -> FollowSets {
        let mut callers: Vec<Vec<u32>> = vec![Vec::new(); self.rules.len()];
        for (s, c) in self.core.iter().enumerate() {
            if let Kind::Call { rule } = c.kind {
                callers[rule as usize].push(s as u32);
            }
        }
        let n = self.rules.len();
        FollowSets { callers, first: vec![None; n], direct: vec![None; n], follow: vec![None; n], seen: vec![u32::MAX; self.core.len()], stamp: 0 }
    }

    /// Calls `f` with the successor list of each byte state of `states`
    /// (each range of a `Ranges` state) that takes `byte`; returns the
    /// bytes around `byte` that each of the states takes or refuses as it
    /// does `byte`: from a set of items with these states, an Earley step
    /// takes every one of them to the same set.
    fn takers(&self, states: impl IntoIterator<Item = u32>, byte: u8, mut f: impl FnMut((u32, u32))) -> RangeInclusive<u8> {
        let mut alike = 0..=u8::MAX;
        for s in states {
            let c = &self.core[s as usize];
            match c.kind {
                Kind::Byte { lo, hi } => {
                    let inside = narrow(&mut alike, byte, lo, hi);
                    if inside {
                        f(c.next);
                    }
                }
                Kind::Ranges { first, end, search } => self.ranges_at(first, end, search, byte, &mut alike, |r| f(r.next)),
                _ => {}
            }
        }
        alike
    }

    /// Calls `f` with each range of `Ranges` state `first..end` (see
    /// [`Kind::Ranges`]) that holds `byte`, narrowing `alike` ([`narrow`])
    /// by the ranges around it: by all of them, or with `search`, by those
    /// holding it and the nearest on either side (the others lie beyond).
    #[inline]
    fn ranges_at(&self, first: u32, end: u32, search: bool, byte: u8, alike: &mut RangeInclusive<u8>, mut f: impl FnMut(&ByteRange)) {
        let rs = &self.ranges[first as usize..end as usize];
        if !search {
            for r in rs {
                if narrow(alike, byte, r.lo, r.hi) {
                    f(r);
                }
            }
            return;
        }
        let mut i = rs.partition_point(|r| r.hi < byte);
        if let Some(r) = i.checked_sub(1).map(|k| &rs[k]) {
            narrow(alike, byte, r.lo, r.hi);
        }
        while let Some(r) = rs.get(i) {
            let inside = narrow(alike, byte, r.lo, r.hi);
            if !inside {
                break;
            }
            f(r);
            i += 1;
        }
    }

    /// The states after `byte` from `states` when those call no rule: the
    /// union of the successors of the byte states that take it, sorted
    /// into `out` (empty: none does). What an Earley step makes of a set
    /// whose items all have the same origin, without the chart; false when
    /// a successor is a call (it would predict items of another origin).
    /// Also the bytes around `byte` that go the same way ([`Grammar::alike`]).
    pub fn scan_outer(&self, states: &[u32], byte: u8, out: &mut Vec<u32>) -> (bool, RangeInclusive<u8>) {
        out.clear();
        let alike = self.takers(states.iter().copied(), byte, |next| out.extend_from_slice(self.list(next)));
        out.sort_unstable();
        out.dedup();
        (!out.iter().any(|&s| matches!(self.core[s as usize].kind, Kind::Call { .. })), alike)
    }

    /// The one successor list that `byte` leads `states` to, when every
    /// state that takes it goes to that same list (`None`: it leads
    /// nowhere, or to several lists), and [`Grammar::alike`].
    pub fn sole_step(&self, states: &[u32], byte: u8) -> (Option<(u32, u32)>, RangeInclusive<u8>) {
        let (mut to, mut several) = (None, false);
        let alike = self.takers(states.iter().copied(), byte, |next| match to {
            None => to = Some(next),
            Some(t) => several |= t != next,
        });
        (to.filter(|&(a, b)| a < b && !several), alike)
    }

    /// The bytes around `byte` that each of `states` takes or refuses as
    /// it does `byte` (see [`Grammar::takers`]).
    pub fn alike(&self, states: impl IntoIterator<Item = u32>, byte: u8) -> RangeInclusive<u8> {
        self.takers(states, byte, |_| {})
    }

    /// The automaton reachable from `states` (the states of one rule's
    /// items, as a token-cache group), written out: states numbered in the
    /// order met from `states`, each with its kind (calls with their rule,
    /// ends without theirs) and successors. Two groups of one shape take
    /// every byte string the same way, each to its own rule's end. `None`
    /// past [`MAX_SHAPE`] states. `index` is scratch: per state, its number
    /// or `u32::MAX` (left so).
    pub fn shape(&self, states: &[u32], index: &mut Vec<u32>) -> Option<Vec<u32>> {
        index.resize(self.core.len(), u32::MAX);
        let mut order: Vec<u32> = Vec::new();
        let mut out = vec![states.len() as u32];
        let mut number = |s: u32, order: &mut Vec<u32>| {
            if index[s as usize] == u32::MAX {
                index[s as usize] = order.len() as u32;
                order.push(s);
            }
            index[s as usize]
        };
        for &s in states {
            out.push(number(s, &mut order));
        }
        let mut i = 0;
        let mut whole = true;
        while let Some(&s) = order.get(i) {
            if order.len() > MAX_SHAPE {
                whole = false;
                break;
            }
            let c = self.core[s as usize];
            match c.kind {
                Kind::Byte { lo, hi } => out.extend([0, lo as u32, hi as u32]),
                Kind::Ranges { first, end, .. } => {
                    out.extend([1, end - first]);
                    for r in &self.ranges[first as usize..end as usize] {
                        out.extend([r.lo as u32, r.hi as u32, r.next.1 - r.next.0]);
                        for &t in self.list(r.next) {
                            out.push(number(t, &mut order));
                        }
                    }
                }
                Kind::Call { rule } => out.extend([2, rule]),
                Kind::Accept { .. } => out.push(3),
            }
            out.push(c.next.1 - c.next.0);
            for &t in self.list(c.next) {
                out.push(number(t, &mut order));
            }
            i += 1;
        }
        order.iter().for_each(|&s| index[s as usize] = u32::MAX);
        whole.then_some(out)
    }

    /// Calls `f(lo, hi)` for each range of bytes that one of `states`
    /// takes: a set of items whose states take none of a byte dies on it.
    pub fn byte_ranges(&self, states: impl IntoIterator<Item = u32>, mut f: impl FnMut(u8, u8)) {
        for s in states {
            match self.core[s as usize].kind {
                Kind::Byte { lo, hi } => f(lo, hi),
                Kind::Ranges { first, end, .. } => self.ranges[first as usize..end as usize]
                    .iter()
                    .filter(|r| r.next.0 != r.next.1)
                    .for_each(|r| f(r.lo, r.hi)),
                _ => {}
            }
        }
    }

    /// The bytes that some of `states` takes, as a 256-bit set
    /// ([`Grammar::byte_ranges`]).
    pub fn byte_set(&self, states: impl IntoIterator<Item = u32>) -> [u64; 4] {
        let mut set = [0u64; 4];
        self.byte_ranges(states, |lo, hi| mark(&mut set, lo, hi));
        set
    }

    /// Successor lists are told apart by their start, below this.
    pub fn list_count(&self) -> usize {
        self.succ.len()
    }

    /// True when one of `states` ends its rule.
    pub fn has_accept(&self, states: &[u32]) -> bool {
        states.iter().any(|&s| matches!(self.core[s as usize].kind, Kind::Accept { .. }))
    }

    /// `states` with each state replaced by the one that stands in for it
    /// for at least `bytes` bytes (see [`gbnf::State::twin`]), sorted and
    /// without repeats; `None` when none is. Every string of at most
    /// `bytes` bytes leaves the two groups both alive or both dead, and
    /// ends the rule after it in both or neither: a token cache that only
    /// walks tokens that long may take one group for the other. A string
    /// whose length is bounded so meets few groups rather than one per count.
    pub fn stand_in(&self, states: &[u32], bytes: u32) -> Option<Vec<u32>> {
        if self.stand_ins.is_empty() {
            return None;
        }
        let twin = |s: u32| self.stand_ins.get(&s).filter(|t| t.1 >= bytes).map(|t| t.0);
        if !states.iter().any(|&s| twin(s).is_some()) {
            return None;
        }
        let mut out: Vec<u32> = states.iter().map(|&s| twin(s).unwrap_or(s)).collect();
        out.sort_unstable();
        out.dedup();
        Some(out)
    }

    /// How many states another stands in for.
    #[cfg(test)]
    pub fn stand_in_count(&self) -> usize {
        self.stand_ins.len()
    }

    /// The number of byte classes.
    pub fn class_count(&self) -> usize {
        self.classes[255] as usize + 1
    }

    /// The class of `byte` (see `classes`).
    #[inline]
    pub fn class(&self, byte: u8) -> u8 {
        self.classes[byte as usize]
    }

    /// The states of successor list `r`.
    #[inline]
    pub fn list(&self, r: (u32, u32)) -> &[u32] {
        &self.succ[r.0 as usize..r.1 as usize]
    }
}

/// Most ranges of a `Ranges` state taken one by one rather than by a
/// binary search.
const SHORT_RANGES: usize = 8;

/// Narrows `alike`, a range of bytes around `byte`, to the side of the
/// range `lo..=hi` where `byte` lies (inside or out); true when inside.
#[inline]
fn narrow(alike: &mut RangeInclusive<u8>, byte: u8, lo: u8, hi: u8) -> bool {
    let (from, to) = (*alike.start(), *alike.end());
    let inside = lo <= byte && byte <= hi;
    *alike = if byte < lo {
        from..=to.min(lo - 1)
    } else if byte > hi {
        from.max(hi + 1)..=to
    } else {
        from.max(lo)..=to.min(hi)
    };
    inside
}

/// Adds bytes `lo..=hi` to a 256-bit set.
fn mark(set: &mut [u64; 4], lo: u8, hi: u8) {
    // A word at a time: the part of each word's 64 bytes in the range.
    for (w, word) in set.iter_mut().enumerate() {
        let first = w as u32 * 64;
        let (a, b) = (u32::from(lo).max(first), u32::from(hi).min(first + 63));
        if a <= b {
            *word |= (u64::MAX >> (63 - (b - a))) << (a - first);
        }
    }
}

fn or(set: &mut [u64; 4], other: &[u64; 4]) {
    set.iter_mut().zip(other).for_each(|(a, b)| *a |= b);
}

/// Per rule, the bytes that may come right after it ends, in any context
/// (its FOLLOW set over bytes), computed when first asked: a union over the
/// calls of the rule and, where a caller may end right after one, over
/// the calls of the caller, and so on. Computing them all up front costs
/// milliseconds on large grammars, where a mask asks for a few.
#[derive(Debug, Default)]
pub(crate) struct FollowSets {
    /// Per rule, the call states that call it.
    callers: Vec<Vec<u32>>,
    /// Per rule, its FIRST set (once computed).
    first: Vec<Option<[u64; 4]>>,
    /// Per rule, its [`FollowSets::direct`] sets (once computed).
    direct: Vec<Option<Direct>>,
    follow: Vec<Option<[u64; 4]>>,
    /// Scratch marks for [`Grammar::first_of`].
    seen: Vec<u32>,
    stamp: u32,
}

/// The bytes that may come right after a call of a rule, and the rules
/// that may end right after one.
type Direct = ([u64; 4], Box<[u32]>);

impl FollowSets {
    /// The FOLLOW set of `rule`: the union of the direct sets
    /// ([`FollowSets::direct`]) of the rule, of the rules that may end right
    /// after a call of it, and so on.
    pub fn of(&mut self, g: &Grammar, rule: u32) -> [u64; 4] {
        if let Some(Some(f)) = self.follow.get(rule as usize) {
            return *f;
        }
        let (mut set, mut todo) = ([0u64; 4], vec![rule]);
        let mut met: FastSet<u32> = FastSet::from_iter([rule]);
        while let Some(r) = todo.pop() {
            // A known FOLLOW set already holds the direct sets of the rules
            // that may end its rule, and so on.
            if let Some(f) = self.follow[r as usize].filter(|_| r != rule) {
                or(&mut set, &f);
                continue;
            }
            let (after, enders) = self.direct(g, r);
            or(&mut set, &after);
            for c in enders {
                if met.insert(c) {
                    todo.push(c);
                }
            }
        }
        self.follow[rule as usize] = Some(set);
        set
    }

    /// The bytes that may come right after a call of `rule`, and the rules
    /// that may end right after one (computed once per rule: rules share
    /// their callers' callers).
    fn direct(&mut self, g: &Grammar, rule: u32) -> Direct {
        if let Some(d) = &self.direct[rule as usize] {
            return d.clone();
        }
        // One walk for every caller: a state met from an earlier one added
        // its bytes and calls already, and an end it leads to is of the
        // same rule (successors stay in their rule).
        self.stamp += 1;
        let (mut set, mut enders, mut calls, mut lists) = ([0u64; 4], Vec::new(), Vec::new(), Vec::new());
        for i in 0..self.callers[rule as usize].len() {
            let c = g.core[self.callers[rule as usize][i] as usize];
            if g.first_of(c.next, &mut set, &mut calls, &mut self.seen, self.stamp, &mut lists) {
                enders.push(c.rule);
            }
        }
        calls.sort_unstable();
        calls.dedup();
        for k in calls {
            let f = self.first(g, k);
            or(&mut set, &f);
        }
        enders.sort_unstable();
        enders.dedup();
        let d = (set, enders.into_boxed_slice());
        self.direct[rule as usize] = Some(d.clone());
        d
    }

    /// The FIRST set of `rule`: its own first bytes and those of the rules
    /// it may call first, and so on.
    fn first(&mut self, g: &Grammar, rule: u32) -> [u64; 4] {
        if let Some(f) = self.first[rule as usize] {
            return f;
        }
        let (mut set, mut todo, mut calls, mut lists) = ([0u64; 4], vec![rule], Vec::new(), Vec::new());
        let mut met: FastSet<u32> = FastSet::from_iter([rule]);
        self.stamp += 1;
        while let Some(r) = todo.pop() {
            calls.clear();
            g.first_of(g.rules[r as usize].start, &mut set, &mut calls, &mut self.seen, self.stamp, &mut lists);
            for &k in &calls {
                match self.first[k as usize] {
                    Some(f) => or(&mut set, &f),
                    None if met.insert(k) => todo.push(k),
                    None => {}
                }
            }
        }
        self.first[rule as usize] = Some(set);
        set
    }
}

/// Most states [`Grammar::shape`] writes out.
const MAX_SHAPE: usize = 256;

/// An Earley item: an automaton state and the set where its rule started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Item {
    state: u32,
    origin: u32,
}

/// Origin of items whose rule's caller is outside the chart (see
/// [`Chart::local`]).
const OUTER: u32 = u32::MAX;

/// Where an item of a set described apart from the chart started (see
/// [`Chart::relative_set`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Origin {
    /// Outside the chart.
    Outer,
    /// In the set itself.
    Own,
    /// In the set it is opened on.
    Below,
}

/// The Earley chart: one item set per byte consumed (plus the initial set).
#[derive(Debug, Clone, Default)]
pub(crate) struct Chart {
    items: Vec<Item>,
    starts: Vec<u32>,
    /// Per set: an item with origin `OUTER` reached its rule's end there.
    outer_end: Vec<bool>,
    /// Sets opened so far (names the newest set for `marks` and `index`).
    opened: u64,
    marks: Marks,
    /// The newest set's items as a hash set, once a state gets a second
    /// origin in a set of `INDEXED` items or more (a linear scan per added
    /// item would make large sets quadratic): the value of `opened` it was
    /// built for, the set, and how many of the set's items it holds.
    index: (u64, FastSet<Item>, usize),
}

/// Per automaton state: the newest set (by `Chart::opened`) that got an
/// item of the state, and that item's origin. Most items are the only one of
/// their state in a set, so this decides most additions at once. A clone
/// starts empty (so forking a matcher copies nothing): marks are only ever
/// a shortcut.
#[derive(Debug, Default)]
struct Marks(Vec<(u64, u32)>);

impl Clone for Marks {
    fn clone(&self) -> Marks {
        Marks::default()
    }
}

/// Size of a set from which `Chart::add` looks items up in a hash set.
const INDEXED: usize = 32;

impl Chart {
    /// The chart before any byte.
    pub fn new(g: &Grammar) -> Chart {
        let mut c = Chart::local();
        for &s in g.list(g.rules[g.root as usize].start) {
            c.add(Item { state: s, origin: 0 });
        }
        // An unbounded budget cannot run out, so this cannot fail.
        let _ = c.process(g, usize::MAX);
        c
    }

    /// An empty chart for local walks (see `tokencache`): sets are opened
    /// with [`Chart::push_relative`], their items' rules called from
    /// outside the chart (origin `OUTER`). When such a rule ends the set is
    /// flagged (see `outer_end`) instead of advancing a caller.
    pub fn local() -> Chart {
        Chart {
            items: Vec::new(),
            starts: vec![0],
            outer_end: vec![false],
            opened: 0,
            marks: Marks::default(),
            index: (0, FastSet::default(), 0),
        }
    }

    /// Approximate heap bytes held.
    pub fn memory(&self) -> usize {
        self.items.capacity() * std::mem::size_of::<Item>()
            + (self.starts.capacity() + self.outer_end.capacity()) * 4
            + self.marks.0.capacity() * std::mem::size_of::<(u64, u32)>()
            + self.index.1.capacity() * std::mem::size_of::<Item>()
    }

    /// True when a rule called from outside the chart ended in the newest set.
    pub fn outer_end(&self) -> bool {
        self.outer_end.last().copied().unwrap_or(false)
    }

    /// Byte items of the newest set as `(rule, origin, state)`.
    pub fn byte_items<'a>(&'a self, g: &'a Grammar) -> impl Iterator<Item = (u32, u32, u32)> + 'a {
        self.items[self.current()..].iter().filter_map(|it| {
            let c = &g.core[it.state as usize];
            matches!(c.kind, Kind::Byte { .. } | Kind::Ranges { .. }).then_some((c.rule, it.origin, it.state))
        })
    }

    /// Opens a set in which `rule`, started at set `origin`, has just ended:
    /// its callers advance past it. Returns false (chart unchanged) when
    /// nothing follows.
    pub fn push_end_of(&mut self, g: &Grammar, rule: u32, origin: u32, fuel: &mut usize) -> Result<bool, MatchError> {
        let b = self.items.len();
        self.open(b, false);
        let (pa, pb) = (self.starts[origin as usize] as usize, self.starts[origin as usize + 1] as usize);
        for j in pa..pb {
            let parent = self.items[j];
            let pc = g.core[parent.state as usize];
            if pc.kind == (Kind::Call { rule }) {
                for &s in g.list(pc.next) {
                    self.add(Item { state: s, origin: parent.origin });
                }
            }
        }
        self.finish_push(g, b, fuel)
    }

    /// The newest set's states, sorted, when every item's origin is `OUTER`
    /// (a set whose successors depend on nothing else).
    pub fn outer_states(&self) -> Option<Vec<u32>> {
        let items = &self.items[self.current()..];
        items.iter().all(|it| it.origin == OUTER).then(|| {
            let mut v: Vec<u32> = items.iter().map(|it| it.state).collect();
            v.sort_unstable();
            v
        })
    }

    /// The newest set as `(state, origin)` with origins that are `OUTER`,
    /// the set itself, or set `anchor` (`None` when another origin occurs).
    pub fn relative_set(&self, anchor: Option<usize>) -> Option<(Vec<(u32, Origin)>, bool)> {
        let me = (self.starts.len() - 1) as u32;
        let anchor = anchor.map_or(OUTER, |a| a as u32);
        let items = &self.items[self.current()..];
        let mut out = Vec::with_capacity(items.len());
        for it in items {
            match it.origin {
                OUTER => out.push((it.state, Origin::Outer)),
                o if o == me => out.push((it.state, Origin::Own)),
                o if o == anchor => out.push((it.state, Origin::Below)),
                _ => return None,
            }
        }
        Some((out, self.outer_end()))
    }

    /// Opens a set with known content (see [`Chart::relative_set`]); items
    /// of origin [`Origin::Below`] started in the set under it.
    pub fn push_relative(&mut self, items: impl IntoIterator<Item = (u32, Origin)>, outer_end: bool) {
        let me = self.starts.len() as u32;
        self.open(self.items.len(), outer_end);
        for (state, origin) in items {
            let origin = match origin {
                Origin::Outer => OUTER,
                Origin::Own => me,
                Origin::Below => me.saturating_sub(1),
            };
            self.add(Item { state, origin });
        }
    }

    /// Number of bytes consumed.
    pub fn bytes(&self) -> usize {
        self.starts.len() - 1
    }

    fn current(&self) -> usize {
        *self.starts.last().unwrap_or(&0) as usize
    }

    /// Opens a set whose items start at `b`.
    fn open(&mut self, b: usize, outer_end: bool) {
        self.starts.push(b as u32);
        self.outer_end.push(outer_end);
        self.opened += 1;
    }

    #[inline]
    fn add(&mut self, it: Item) {
        let s = it.state as usize;
        if s >= self.marks.0.len() {
            self.marks.0.resize(s + 1, (u64::MAX, 0));
        }
        let mark = &mut self.marks.0[s];
        if mark.0 != self.opened {
            *mark = (self.opened, it.origin);
            self.items.push(it);
            return;
        }
        if mark.1 == it.origin {
            return;
        }
        mark.1 = it.origin;
        let from = self.current();
        if self.items.len() - from < INDEXED {
            if !self.items[from..].contains(&it) {
                self.items.push(it);
            }
            return;
        }
        if self.index.0 != self.opened {
            // A new set, not a cleared one: clearing costs the largest set's capacity.
            self.index = (self.opened, FastSet::default(), from);
        }
        let (_, set, done) = &mut self.index;
        set.extend(self.items[*done..].iter().copied());
        *done = self.items.len();
        if set.insert(it) {
            self.items.push(it);
            *done += 1;
        }
    }

    /// Predicts and completes the newest set until nothing changes.
    /// Fails when the chart would grow past `max_items` items.
    fn process(&mut self, g: &Grammar, max_items: usize) -> Result<(), MatchError> {
        let set = (self.starts.len() - 1) as u32;
        let mut i = self.current();
        while i < self.items.len() {
            let it = self.items[i];
            i += 1;
            let c = g.core[it.state as usize];
            match c.kind {
                Kind::Byte { .. } | Kind::Ranges { .. } => {}
                Kind::Call { rule } => {
                    let info = &g.rules[rule as usize];
                    for &s in g.list(info.start) {
                        self.add(Item { state: s, origin: set });
                    }
                    if info.nullable {
                        for &s in g.list(c.next) {
                            self.add(Item { state: s, origin: it.origin });
                        }
                    }
                }
                Kind::Accept { .. } if it.origin == OUTER => {
                    if let Some(f) = self.outer_end.last_mut() {
                        *f = true;
                    }
                }
                Kind::Accept { rule } if it.origin != set => {
                    let (a, b) = (self.starts[it.origin as usize] as usize, self.starts[it.origin as usize + 1] as usize);
                    for j in a..b {
                        let parent = self.items[j];
                        let pc = g.core[parent.state as usize];
                        if pc.kind == (Kind::Call { rule }) {
                            for &s in g.list(pc.next) {
                                self.add(Item { state: s, origin: parent.origin });
                            }
                        }
                    }
                }
                Kind::Accept { .. } => {}
            }
            if self.items.len() > max_items {
                return Err(MatchError::Limit { what: "Earley items", limit: max_items });
            }
        }
        Ok(())
    }

    /// Consumes `byte`; returns false (chart unchanged) when no item takes it.
    pub fn push(&mut self, g: &Grammar, byte: u8, fuel: &mut usize) -> Result<bool, MatchError> {
        let (a, b) = (self.current(), self.items.len());
        self.open(b, false);
        for i in a..b {
            let it = self.items[i];
            let c = g.core[it.state as usize];
            match c.kind {
                Kind::Byte { lo, hi } if lo <= byte && byte <= hi => {
                    for &s in g.list(c.next) {
                        self.add(Item { state: s, origin: it.origin });
                    }
                }
                Kind::Ranges { first, end, .. } => {
                    for r in &g.ranges[first as usize..end as usize] {
                        if r.lo <= byte && byte <= r.hi {
                            for &s in g.list(r.next) {
                                self.add(Item { state: s, origin: it.origin });
                            }
                        }
                    }
                }
                _ => {}
            }
        }
        self.finish_push(g, b, fuel)
    }

    /// Closes the set opened at item `b`, or drops it when it is empty.
    fn finish_push(&mut self, g: &Grammar, b: usize, fuel: &mut usize) -> Result<bool, MatchError> {
        if self.items.len() == b {
            self.starts.pop();
            self.outer_end.pop();
            return Ok(false);
        }
        if let Err(e) = self.process(g, b.saturating_add(*fuel)) {
            self.pop();
            return Err(e);
        }
        *fuel = fuel.saturating_sub(self.items.len() - b);
        Ok(true)
    }

    /// Drops the newest set (undoes one `push`).
    pub fn pop(&mut self) {
        if self.starts.len() > 1
            && let Some(s) = self.starts.pop()
        {
            self.items.truncate(s as usize);
            self.outer_end.pop();
        }
    }

    /// Drops sets until `bytes` bytes remain consumed.
    pub fn truncate(&mut self, bytes: usize) {
        while self.bytes() > bytes {
            self.pop();
        }
    }

    /// True when the bytes consumed form a complete sentence.
    pub fn is_accepting(&self, g: &Grammar) -> bool {
        let root = g.root;
        self.items[self.current()..]
            .iter()
            .any(|it| it.origin == 0 && g.core[it.state as usize].kind == (Kind::Accept { rule: root }))
    }

    /// The bytes some item of the newest set can consume, as a 256-bit set.
    pub fn next_bytes(&self, g: &Grammar) -> [u64; 4] {
        g.byte_set(self.items[self.current()..].iter().map(|it| it.state))
    }
}

/// A trie walker over an Earley chart, with a budget of item additions.
pub(crate) struct ChartWalker<'a> {
    pub g: &'a Grammar,
    pub chart: &'a mut Chart,
    pub fuel: usize,
    pub limit: usize,
}

impl Walker for ChartWalker<'_> {
    #[inline]
    fn push(&mut self, byte: u8) -> Result<bool, MatchError> {
        let limit = self.limit;
        self.chart
            .push(self.g, byte, &mut self.fuel)
            .map_err(|_| MatchError::Limit { what: "Earley items per mask (Limits::mask_fuel)", limit })
    }

    #[inline]
    fn pop(&mut self) {
        self.chart.pop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn tail_recursion_becomes_a_loop() {
        // `items` and `chars` call themselves last: both become loops, so
        // nothing is called and everything is inlined into `root`.
        let src = "root ::= \"[\" items \"]\"\nitems ::= item \",\" items | item\nitem ::= \"'\" chars \"'\"\nchars ::= [a-z] chars | \"\"\n";
        let g = Grammar::new(src, 1000).unwrap();
        assert_eq!(g.names, ["root"]);
        // So do rules that call each other last (`even` and `odd`).
        let src = "root ::= \"<\" even \">\"\neven ::= \"\" | \"a\" odd\nodd ::= \"a\" even\n";
        let g = Grammar::new(src, 1000).unwrap();
        assert_eq!(g.names, ["root"]);
        // A rule too large to copy is inlined where it is referenced once,
        // and called where it is referenced twice; an automaton (calling
        // nothing once inlined) is copied up to a larger size than a rule
        // that calls.
        let words = |n: usize| (0..n).map(|i| format!("\"w{i}\"")).collect::<Vec<_>>().join(" | ");
        let names = |body: &str| {
            let src = format!("root ::= \"<\" r \">\" r\nr ::= {body}\nrec ::= \"(\" rec \")\" | \"x\"\n");
            Grammar::new(&src, 1_000_000).unwrap().names
        };
        let g = Grammar::new(&format!("root ::= \"<\" r \">\"\nr ::= {}\n", words(1500)), 1_000_000).unwrap();
        assert_eq!(g.names, ["root"]);
        assert_eq!(names(&words(1500)), ["root", "r"]);
        assert_eq!(names(&words(300)), ["root"]);
        assert_eq!(names(&format!("{} | rec", words(300))), ["root", "r", "rec"]);
        // A self-reference elsewhere than at the end stays a call.
        let g = Grammar::new("root ::= \"(\" root \")\" | \"x\"", 1000).unwrap();
        assert!(g.core.iter().any(|c| c.kind == Kind::Call { rule: 0 }));
    }

    #[test]
    fn each_class_keeps_its_own_characters() {
        // An empty class read right before another starts at the same place
        // in the parsed ranges; expansions are kept per class, not per place.
        assert!(Grammar::new("root ::= [^\\u0000-\\U0010FFFF] [b]", 100).unwrap().is_empty());
        let g = Grammar::new("root ::= [^\\u0000-\\U0010FFFF] \"a\" | [b]", 100).unwrap();
        assert!(chart_accepts(&g, b"b") && !chart_accepts(&g, b"a"));
    }

    /// Every state of a compiled grammar can reach its rule's end: the
    /// builder compiles only what derives something, so dead alternatives,
    /// rules that derive nothing, empty and surrogate-only classes and
    /// repetitions of them leave no state behind.
    #[test]
    fn every_state_can_finish() {
        let grammars = [
            "root ::= \"a\" dead | \"b\" [^\\u0000-\\U0010FFFF] | \"c\" x\ndead ::= \"d\" dead\nx ::= \"x\" | x \"y\" | dead",
            "root ::= (\"a\" never)* \"b\" (never \"c\")? \"d\" never{0,3}\nnever ::= [^\\u0000-\\U0010FFFF]",
            "root ::= e\ne ::= e \"+\" t | t\nt ::= \"(\" e \")\" | [0-9]+ | u\nu ::= \"-\" u",
            "root ::= a\na ::= \"\" | \"x\" a | b a\nb ::= \"y\" b",
        ];
        // Classes of surrogates only (no GBNF text writes them): `s` and
        // `e` around none of them, or one that cannot be.
        let mut surrogates = gbnf::Rules::default();
        let root = surrogates.add_rule("root".into());
        let (s, e, none) = (surrogates.literal(b"s"), surrogates.literal(b"e"), surrogates.class(&[(0xD800, 0xDFFF)]));
        let many = surrogates.repeat(none, 0, None);
        let (around, one) = (surrogates.seq(&[s, many, e]), surrogates.seq(&[s, none, e]));
        surrogates.rules[0].body = surrogates.alt(&[around, one]);
        let built = [Grammar::from_rules(&surrogates, root, 100).unwrap()];
        assert!(chart_accepts(&built[0], b"se") && !chart_accepts(&built[0], b"s"));
        let read = grammars.iter().map(|src| Grammar::new(src, 10_000).unwrap());
        for (src, g) in grammars.iter().chain(["(surrogates)"].iter()).zip(read.chain(built)) {
            // Backwards from each rule's end over successor lists; a call
            // continues (every compiled rule derives something).
            let mut preds: Vec<Vec<usize>> = vec![Vec::new(); g.core.len()];
            for (s, c) in g.core.iter().enumerate() {
                let lists: Vec<(u32, u32)> = match c.kind {
                    Kind::Ranges { first, end, .. } => g.ranges[first as usize..end as usize].iter().map(|r| r.next).collect(),
                    _ => vec![c.next],
                };
                for l in lists {
                    g.list(l).iter().for_each(|&t| preds[t as usize].push(s));
                }
            }
            let mut live = vec![false; g.core.len()];
            let mut todo: Vec<usize> = (0..g.core.len()).filter(|&s| matches!(g.core[s].kind, Kind::Accept { .. })).collect();
            while let Some(s) = todo.pop() {
                if !std::mem::replace(&mut live[s], true) {
                    todo.extend(&preds[s]);
                }
            }
            let dead: Vec<_> = (0..g.core.len()).filter(|&s| !live[s]).map(|s| g.core[s]).collect();
            assert!(dead.is_empty(), "{src}: {dead:?}");
            for r in &g.rules {
                assert!(r.start.0 < r.start.1, "{src}: a rule with no start");
            }
        }
        assert!(chart_accepts(&Grammar::new(grammars[0], 10_000).unwrap(), b"cxyy"));
        assert!(Grammar::new("root ::= \"a\" root", 100).unwrap().is_empty());
    }

    #[test]
    fn mark_sets_the_bytes_of_a_range() {
        for (lo, hi) in [(0u8, 0u8), (0, 255), (63, 64), (5, 200), (128, 191), (255, 255), (64, 127)] {
            let mut set = [0u64; 4];
            mark(&mut set, lo, hi);
            let bytes: Vec<u8> = (0..=255u8).filter(|&b| set[(b / 64) as usize] >> (b % 64) & 1 == 1).collect();
            assert_eq!(bytes, (lo..=hi).collect::<Vec<u8>>(), "{lo}..={hi}");
        }
    }

    #[test]
    fn follow_sets() {
        // `e` is recursive (so called); `t` ends `e` and may be empty.
        let src = "root ::= e \";\" | \"[\" e t \"]\"\ne ::= \"(\" e \")\" | \"x\"\nt ::= \"!\"?\n";
        let g = Grammar::new(src, 1000).unwrap();
        let e = g.names.iter().position(|n| n == "e").unwrap();
        let mut follow = g.follow_sets();
        let of_e = follow.of(&g, e as u32);
        let bytes: Vec<u8> = (0..=255u8).filter(|&b| of_e[(b / 64) as usize] >> (b % 64) & 1 == 1).collect();
        assert_eq!(bytes, b"!);]");
        assert_eq!(follow.of(&g, 0), [0; 4]);
    }

    /// FOLLOW sets do not depend on the order rules are asked in: a known
    /// set stands for those of the rules that end its rule.
    #[test]
    fn follow_sets_in_any_order() {
        let src = "root ::= v\nv ::= o | a | s | \"1\"\no ::= \"{\" (m (\",\" m)*)? \"}\"\nm ::= s \":\" v\na ::= \"[\" (v (\",\" v)*)? \"]\" t\nt ::= \"!\"? | v \";\"\ns ::= \"\\\"\" [a-z]* \"\\\"\" | \"<\" s \">\"\n";
        let g = Grammar::new(src, 1000).unwrap();
        let n = g.names.len() as u32;
        assert!(n > 3, "{:?}", g.names);
        let alone: Vec<[u64; 4]> = (0..n).map(|r| g.follow_sets().of(&g, r)).collect();
        for order in [(0..n).collect::<Vec<_>>(), (0..n).rev().collect()] {
            let mut follow = g.follow_sets();
            for &r in &order {
                assert_eq!(follow.of(&g, r), alone[r as usize], "rule {}", g.names[r as usize]);
            }
        }
    }

    /// An automaton over `a b c` written as rules, one per state, each
    /// alternative ending in a reference to the next state (how the JSON
    /// Schema compiler writes pattern automata), plus `"d"` from every state.
    fn automaton_rules(edges: &[(u8, u8, u8)], accepting: &[bool]) -> String {
        let mut src = String::from("root ::= s0 | \"<\" s0 \">\" s0\n");
        for s in 0..accepting.len() as u8 {
            let mut alts = vec!["\"d\"".to_string()];
            alts.extend(edges.iter().filter(|e| e.0 == s).map(|e| format!("\"{}\" s{}", (b'a' + e.1) as char, e.2)));
            if accepting[s as usize] {
                alts.push("\"\"".into());
            }
            src += &format!("s{s} ::= {}\n", alts.join(" | "));
        }
        src
    }

    /// Whether the automaton accepts `w` from state 0 (simulated on state sets).
    fn automaton_accepts(edges: &[(u8, u8, u8)], accepting: &[bool], w: &[u8]) -> bool {
        let mut at = vec![0u8];
        for (i, &b) in w.iter().enumerate() {
            if b == b'd' {
                return i + 1 == w.len() && !at.is_empty();
            }
            at = edges.iter().filter(|e| at.contains(&e.0) && b'a' + e.1 == b).map(|e| e.2).collect();
        }
        at.iter().any(|&s| accepting[s as usize])
    }

    fn chart_accepts(g: &Grammar, w: &[u8]) -> bool {
        let mut chart = Chart::new(g);
        let mut fuel = usize::MAX;
        w.iter().all(|&b| chart.push(g, b, &mut fuel).unwrap()) && chart.is_accepting(g)
    }

    proptest! {
        /// Right-linear rules (tail references, mutual recursion included)
        /// are inlined into loops and keep their language, whether their
        /// reference ends the caller's body or not.
        #[test]
        fn right_linear_rules_keep_their_language(
            edges in prop::collection::vec((0..4u8, 0..3u8, 0..4u8), 0..10),
            accepting in prop::collection::vec(any::<bool>(), 4),
            words in prop::collection::vec(prop::collection::vec(prop::sample::select(b"abcd".to_vec()), 0..8), 1..8),
        ) {
            let g = Grammar::new(&automaton_rules(&edges, &accepting), 100_000).unwrap();
            prop_assert_eq!(&g.names, &["root"]);
            for (i, w) in words.iter().enumerate() {
                let ok = automaton_accepts(&edges, &accepting, w);
                prop_assert_eq!(chart_accepts(&g, w), ok);
                let v = &words[(i + 1) % words.len()];
                let wrapped = [&b"<"[..], w, b">", v].concat();
                prop_assert_eq!(chart_accepts(&g, &wrapped), ok && automaton_accepts(&edges, &accepting, v));
            }
        }

        /// Sets large enough to be indexed (`INDEXED` items and more) keep
        /// the language: many alternatives against the same regex.
        #[test]
        fn large_sets_keep_the_language(
            words in prop::collection::vec(prop::collection::vec(prop::sample::select(b"abc".to_vec()), 1..4), 40..90),
            texts in prop::collection::vec(prop::collection::vec(prop::sample::select(b"abc".to_vec()), 0..10), 1..20),
        ) {
            let words: Vec<String> = words.into_iter().map(|w| String::from_utf8(w).unwrap()).collect();
            let alts: Vec<String> = words.iter().enumerate().map(|(i, w)| format!("\"{w}\" w{i}")).collect();
            let mut src = format!("root ::= ({})+\n", alts.join(" | "));
            // Each word is followed by its own `c*` (a rule inlined as a loop).
            for i in 0..words.len() {
                src += &format!("w{i} ::= \"\" | \"c\" w{i}\n");
            }
            let g = Grammar::new(&src, 1_000_000).unwrap();
            let re = regex_automata::meta::Regex::new(&format!("^(?:(?:{})c*)+$", words.join("|"))).unwrap();
            for t in &texts {
                prop_assert_eq!(chart_accepts(&g, t), re.is_match(t.as_slice()));
            }
        }

        /// Bounded repetitions keep their language, whatever order the
        /// bounds come in: those of one expression with one continuation
        /// share their optional copies (see `Builder::chains`), and copies
        /// are replicated from one compiled (see `Builder::copies`), here
        /// with an inlined rule, a loop and a class of two-byte characters
        /// (whose last bytes' states classes share by continuation) inside.
        #[test]
        fn bounded_repetitions_keep_their_language(
            bounds in prop::collection::vec((0..4u32, 0..5u32), 3),
            words in prop::collection::vec((0..3usize, prop::collection::vec(0..4usize, 0..8)), 1..10),
            texts in prop::collection::vec(prop::collection::vec(prop::sample::select(b"abxyzw!\xc3\xa9".to_vec()), 0..12), 1..10),
        ) {
            let bounds: Vec<(u32, u32)> = bounds.into_iter().map(|(min, extra)| (min, min + extra)).collect();
            let [(a, b), (c, d), (e, f)] = bounds[..] else { unreachable!() };
            let t = "t ::= \"x\" | \"yz\" | \"w\" u | [\\u00e0-\\u00ef]\nu ::= \"w\" u | \"\"\n";
            let src = format!("root ::= (\"a\" t{{{a},{b}}} | \"b\" t{{{c},{d}}} | t{{{e},{f}}}) ([\\u00e9] | \"!\")\n{t}");
            let g = Grammar::new(&src, 1_000_000).unwrap();
            let t = "(?:x|yz|w+|[à-ï])";
            let re = format!("^(?:a{t}{{{a},{b}}}|b{t}{{{c},{d}}}|{t}{{{e},{f}}})(?:é|!)$");
            let re = regex_automata::meta::Regex::new(&re).unwrap();
            // Words of the grammar (some too long or too short) and random texts.
            let made = words.iter().map(|(alt, picks)| {
                let mut w = [&b"a"[..], b"b", b""][*alt].to_vec();
                picks.iter().for_each(|&p| w.extend_from_slice([&b"x"[..], b"yz", b"ww", "\u{e9}".as_bytes()][p]));
                w.push(b'!');
                w
            });
            for t in made.chain(texts) {
                prop_assert_eq!(chart_accepts(&g, &t), re.is_match(t.as_slice()), "{}", String::from_utf8_lossy(&t));
            }
        }

        /// Masks over inlined right-linear rules equal taking each token on
        /// the parser, along random walks.
        #[test]
        fn right_linear_masks_equal_the_parser(
            edges in prop::collection::vec((0..4u8, 0..3u8, 0..4u8), 0..10),
            accepting in prop::collection::vec(any::<bool>(), 4),
            picks in prop::collection::vec(any::<prop::sample::Index>(), 1..10),
        ) {
            use crate::{Constraint, Matcher};
            let vocab = crate::matcher::short_strings_vocab(b"abcd<>");
            let c = Constraint::gbnf(&automaton_rules(&edges, &accepting)).unwrap();
            let mut m = Matcher::new(&c, &vocab);
            let mut mask = vec![0u32; vocab.mask_words()];
            for pick in picks {
                let allowed = crate::matcher::mask_equals_parser(&mut m, &mut mask);
                prop_assert!(allowed.is_ok(), "the mask and the parser disagree on token {:?}", allowed);
                let allowed = allowed.unwrap();
                if allowed.is_empty() {
                    break;
                }
                m.accept_token(allowed[pick.index(allowed.len())]).unwrap();
            }
        }
    }
}
