//! Compiling rules to automata: a Thompson automaton per compiled rule
//! (inlined rules copied in, repetitions replicated), then closed over
//! its epsilon moves into the [`Grammar`].

use super::plan::{plan, Calls, Components, Facts};
use super::{ByteRange, Callers, Core, Grammar, Kind, RuleInfo, SHORT_RANGES};
use crate::error::{CompileError, CompileErrorKind};
use crate::gbnf::{self, Expr};
use crate::trie::Slice;
use regex_syntax::utf8::{Utf8Sequence, Utf8Sequences};
use std::rc::Rc;
use crate::hash::FastMap;

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

/// The states that consume one continuation byte in a range and then go to
/// a given state, listed per target state (a few each: a class's sequences
/// end in at most a handful of distinct continuation ranges).
#[derive(Default)]
struct Tails {
    /// Per target state, its newest entry in `list` (`u32::MAX`: none).
    newest: Vec<u32>,
    /// `(lo, hi, state, the target's entry before)`.
    list: Vec<(u8, u8, u32, u32)>,
}

impl Tails {
    fn get(&self, lo: u8, hi: u8, next: u32) -> Option<u32> {
        let mut at = *self.newest.get(next as usize)?;
        while let Some(&(l, h, state, before)) = self.list.get(at as usize) {
            if (l, h) == (lo, hi) {
                return Some(state);
            }
            at = before;
        }
        None
    }

    fn insert(&mut self, lo: u8, hi: u8, next: u32, state: u32) {
        if self.newest.len() <= next as usize {
            self.newest.resize(next as usize + 1, u32::MAX);
        }
        let before = std::mem::replace(&mut self.newest[next as usize], self.list.len() as u32);
        self.list.push((lo, hi, state, before));
    }
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

pub(super) struct Builder<'a> {
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
    /// States consuming a UTF-8 continuation byte then going to a state:
    /// character classes that continue at the same state share their
    /// sequences' tails.
    tails: Tails,
    /// The UTF-8 sequences of each character class met, by its expression:
    /// a class is copied wherever its rule is inlined.
    utf8: FastMap<u32, Rc<[Utf8Sequence]>>,
    /// The entries of the alternatives being compiled, innermost last
    /// (each alternation takes its own off when it ends).
    entries: Vec<u32>,
    /// States that compile alike with their twin for strings of at most
    /// some bytes: `(state, twin, bytes)`, each pair's epsilon closures
    /// alike. An automaton's states ([`gbnf::State::twin`], characters: no
    /// fewer bytes) and a repetition's copies, their entries and the states
    /// inside them (see [`Builder::copies`]).
    twins: Vec<(u32, u32, u32)>,
    max_states: usize,
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
            return Ok(Grammar { core: Vec::new(), succ: Vec::new(), ranges: Vec::new(), rules, names, root: 0, classes: [0; 256], stand_ins: FastMap::default(), calls: Callers::default() });
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
            tails: Tails::default(),
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
        let rules: Vec<RuleInfo> = starts.iter().zip(nullable).map(|(&s, &nullable)| RuleInfo { start: closure(s, &mut succ), nullable }).collect();
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
            let (mine, theirs) = (&succ[from as usize..end as usize], &succ[twin_from as usize..twin_end as usize]);
            // (Each pair does the same on each byte: a guard on the builder's
            // order, which makes them so.)
            let alike = |s: u32, t: u32| match (core[s as usize].kind, core[t as usize].kind) {
                (Kind::Ranges { first: a, end: b, .. }, Kind::Ranges { first: c, end: d, .. }) => {
                    let span = |x: u32, y: u32| alts[x as usize..y as usize].iter().map(|r| (r.0, r.1));
                    span(a, b).eq(span(c, d))
                }
                (k, l) => k == l,
            };
            if mine.len() != theirs.len() || mine.iter().zip(theirs).any(|(&s, &t)| !alike(s, t)) {
                continue;
            }
            for (&s, &t) in mine.iter().zip(theirs) {
                if s != t {
                    // (A state met twice with one twin keeps the longer.)
                    let twin = stand_ins.entry(s).or_insert((t, chars));
                    if twin.0 == t {
                        twin.1 = twin.1.max(chars);
                    }
                }
            }
        }
        // Each rule's call states, counted, then placed (`callers[r]` is
        // where rule `r`'s go, from `r + 1` on once placed).
        let mut callers = vec![0u32; rules.len() + 2];
        for c in &core {
            if let Kind::Call { rule } = c.kind {
                callers[rule as usize + 2] += 1;
            }
        }
        for r in 2..callers.len() {
            callers[r] += callers[r - 1];
        }
        let mut calls = vec![0u32; callers[rules.len() + 1] as usize];
        for (s, c) in core.iter().enumerate() {
            if let Kind::Call { rule } = c.kind {
                let at = &mut callers[rule as usize + 1];
                calls[*at as usize] = s as u32;
                *at += 1;
            }
        }
        callers.pop();
        let calls = Callers { at: callers.into(), states: calls.into() };
        Grammar { core, succ, ranges, rules, names, root: 0, classes, stand_ins, calls }
    }
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
    /// A copy with fewer copies left has the first (or, in a chain, the
    /// one with the most left) as its twin, for the strings too short to
    /// reach past the copies it has left (each takes at least the bytes of
    /// `e`'s shortest string); so do the states inside it, where it is a
    /// replica, those of the last copy.
    ///
    /// Copies are alike but for their continuation, so a copy whose states
    /// lead only among themselves, to its continuation and to `next` is
    /// compiled once and then replicated, renumbered. Replicas share no
    /// state with the rest of the rule, which compiling would sometimes
    /// have shared, but have the same moves.
    fn copies(&mut self, e: u32, count: u32, mut tail: u32, next: u32, mut chain: Option<&mut Vec<u32>>) -> Result<u32, CompileError> {
        let optional = chain.is_some();
        let mut template = None;
        // The entries of required copies: the one with `r` copies left
        // takes every string shorter than `r` copies as the first one
        // (with `count` left) does where no copy is empty: it ends none.
        let mut required = Vec::new();
        // The copies laid out as the template, `(i, first state)`, and the
        // steps of a chain built before.
        let mut layouts: Vec<(u32, u32)> = Vec::new();
        let before = chain.as_deref().map_or(0, |c| c.len() as u32 - 1);
        for i in 0..count {
            tail = match template {
                Some(t) => {
                    layouts.push((i, self.n.len() as u32));
                    self.replicate(t, tail)?
                }
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
                        layouts.extend(template.map(|_| (i, a)));
                    }
                    entry
                }
            };
            match chain.as_deref_mut() {
                Some(chain) => chain.push(tail),
                None => required.push(tail),
            }
        }
        // Each copy takes at least `fewest` bytes (asked where twins may be).
        let fewest = if layouts.len() > 1 || count > 2 { self.facts.fewest_bytes(self.p, e) } else { 0 };
        if count > 2 && fewest > 0 {
            // `required[i]` has `i + 1` copies left.
            for (i, &entry) in required.iter().enumerate().take(count as usize - 1).skip(1) {
                self.twins.push((entry, tail, (i as u32 + 1).saturating_mul(fewest) - 1));
            }
        }
        // Inside them too, where no copy is empty: a state of a copy takes
        // every string as the same state of the last copy (which has more
        // after it) does until the string could pass the copies after it
        // (`i` required ones, to end them; or a chain's `before + i`
        // optional ones, to take a byte past them). Only in copies that
        // loop (words, not the characters of a string of bounded length,
        // inside which few tokens end).
        if let (Some(t), Some((&(_, top), others))) = (template, layouts.split_last())
            && fewest > 0
            && Facts::loops(self.p, e)
        {
            let (a, b) = t.states;
            for &(i, first) in others {
                let bytes = if optional { (before + i).saturating_mul(fewest) } else { i.saturating_mul(fewest).saturating_sub(1) };
                // (A token cache takes a state that stands in for fewer
                // bytes than its short tokens as its own: none is kept.)
                if (bytes as usize) < Slice::SHORT {
                    continue;
                }
                for s in (a..b).filter(|&s| !matches!(self.n[s as usize], N::Eps { .. })) {
                    self.twins.push((s - a + first, s - a + top, bytes));
                }
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
            let (more, last, built) = (count + 1 - chain.len() as u32, chain[chain.len() - 1], chain.len());
            self.copies(e, more, last, next, Some(&mut chain))?;
            // The step with `c` copies left takes every string shorter
            // than those copies and a byte as the top one does where no copy
            // is empty: a string of bounded length stands in for its
            // highest count.
            let fewest = self.facts.fewest_bytes(self.p, e);
            if fewest > 0 {
                let top = chain[count as usize];
                for (c, &entry) in chain.iter().enumerate().take(count as usize).skip(built.max(1) - 1).filter(|x| x.0 > 0) {
                    self.twins.push((entry, top, (c as u32).saturating_mul(fewest)));
                }
            }
        }
        let entry = chain[count as usize];
        self.chains.insert(key, chain);
        Ok(entry)
    }

    /// Compiles automaton `e` (`states[first..end]`), which derives some string,
    /// so that it continues at `next`; returns its entry. Each state that
    /// can reach an accepting one is an epsilon state moving to `next` if it
    /// accepts, and into each edge that derives something towards such a
    /// state. Edges of several states that lead to one state on one
    /// expression (a pattern's states that move alike on a character
    /// class, at one count) share one copy of it.
    fn automaton(&mut self, e: u32, first: u32, end: u32, next: u32) -> Result<u32, CompileError> {
        let p = self.p;
        // Worked out with the rules' final facts (and then kept).
        self.facts.productive(p, e);
        let live = self.facts.live[first as usize..end as usize].to_vec();
        let mut at = vec![u32::MAX; live.len()];
        for (i, _) in live.iter().enumerate().filter(|x| *x.1) {
            at[i] = self.add(N::Eps { first: 0, end: 0 })?;
        }
        // The copies made so far, per target state: `(expression, entry,
        // the target's copy before)` in `copies`, the newest at `newest[t]`.
        let mut newest = vec![u32::MAX; live.len()];
        let mut copies: Vec<(u32, u32, u32)> = Vec::new();
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
                    let to = edge.to as usize;
                    let mut copy = newest[to];
                    while let Some(&(_, _, before)) = copies.get(copy as usize).filter(|c| c.0 != edge.expr) {
                        copy = before;
                    }
                    let entry = match copies.get(copy as usize) {
                        Some(&(_, entry, _)) => entry,
                        None => {
                            let entry = self.expr(edge.expr, at[to])?;
                            copies.push((edge.expr, entry, newest[to]));
                            newest[to] = copies.len() as u32 - 1;
                            entry
                        }
                    };
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
                        s = match self.tails.get(r.start, r.end, s) {
                            Some(t) => t,
                            None => {
                                let t = self.add(N::Byte { lo: r.start, hi: r.end, next: s })?;
                                self.tails.insert(r.start, r.end, s, t);
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
