//! Deterministic automata over characters, for the string languages a grammar
//! cannot combine by itself: a pattern within length bounds, and the regions
//! of object keys that match exactly a given subset of several patterns (the
//! complement included), which `patternProperties` and `additionalProperties`
//! need. Each becomes an automaton expression of the grammar (edges of JSON
//! string characters), where states that take the same strings the same way
//! outside any cycle (the tails of declared names) are one; an automaton with
//! a cycle through several states is made minimal first.

use super::gbnf::{Ex, Writer};
use super::regex::{complement, CharSet, MAX_CHAR, Re};
use crate::graph::components;
use crate::hash::FastMap;
use std::hash::BuildHasher;

const DEAD: u32 = u32::MAX;

/// Most Thompson states one state of [`Dfa::search`] stands for.
const MAX_SEARCH_SET: usize = 64;

/// Why an automaton was not built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooLarge;

/// A DFA whose states carry the set of tagged languages (bit `i` for the
/// `i`-th input expression) that accept there.
pub struct Dfa {
    classes: Vec<CharSet>,
    /// Each state's moves as runs of consecutive classes with one target
    /// (`DEAD` included): `(first class, target)`, in class order from
    /// class 0, each run ending where the next starts; state `s`'s are
    /// `runs[at[s]..at[s + 1]]`. A name trie's node has a few children and
    /// one target for every other character: its row is as short.
    runs: Vec<(u32, u32)>,
    at: Vec<u32>,
    tags: Vec<u64>,
}

/// A Thompson automaton under construction: moves are listed as they are
/// made (one vector each, not one per state) and grouped by state in
/// [`Moves`] once it is built.
struct Nfa {
    /// Epsilon moves `(from, to)`.
    eps: Vec<(usize, usize)>,
    /// Moves `(from, (set, to))` on a character of `sets[set]`.
    edges: Vec<(usize, (usize, usize))>,
    sets: Vec<CharSet>,
    tag: Vec<Option<u8>>,
    max_states: usize,
}

/// Moves grouped by source state, each state's in the order they were made:
/// state `s`'s are `to[at[s]..at[s + 1]]`.
struct Moves<T> {
    at: Vec<usize>,
    to: Vec<T>,
}

impl<T: Copy + Default> Moves<T> {
    fn new(states: usize, moves: &[(usize, T)]) -> Self {
        let mut at = vec![0; states + 1];
        moves.iter().for_each(|m| at[m.0 + 1] += 1);
        for s in 0..states {
            at[s + 1] += at[s];
        }
        let mut fill = at.clone();
        let mut to = vec![T::default(); moves.len()];
        for &(s, t) in moves {
            to[fill[s]] = t;
            fill[s] += 1;
        }
        Moves { at, to }
    }

    fn of(&self, s: usize) -> &[T] {
        &self.to[self.at[s]..self.at[s + 1]]
    }
}

impl Nfa {
    fn state(&mut self) -> Result<usize, TooLarge> {
        if self.tag.len() >= self.max_states {
            return Err(TooLarge);
        }
        self.tag.push(None);
        Ok(self.tag.len() - 1)
    }

    fn build(&mut self, re: &Re, start: usize) -> Result<usize, TooLarge> {
        Ok(match re {
            Re::Set(s) => {
                let end = self.state()?;
                self.sets.push(s.clone());
                self.edges.push((start, (self.sets.len() - 1, end)));
                end
            }
            Re::Start | Re::End => return Err(TooLarge),
            Re::Concat(parts) => {
                let mut cur = start;
                for p in parts {
                    cur = self.build(p, cur)?;
                }
                cur
            }
            Re::Alt(branches) => {
                let end = self.state()?;
                for b in branches {
                    let s = self.state()?;
                    self.eps.push((start, s));
                    let e = self.build(b, s)?;
                    self.eps.push((e, end));
                }
                end
            }
            Re::Repeat(inner, min, max) => {
                let mut cur = start;
                for _ in 0..*min {
                    cur = self.build(inner, cur)?;
                }
                match max {
                    None => {
                        let x = self.state()?;
                        self.eps.push((cur, x));
                        let e = self.build(inner, x)?;
                        self.eps.push((e, x));
                        x
                    }
                    Some(m) => {
                        let end = self.state()?;
                        for _ in *min..*m {
                            self.eps.push((cur, end));
                            cur = self.build(inner, cur)?;
                        }
                        self.eps.push((cur, end));
                        end
                    }
                }
            }
        })
    }
}

/// The strings of a literal expression (single characters in sequence, or
/// alternatives of such); `None` for any other expression.
fn literals(re: &Re) -> Option<Vec<Vec<u32>>> {
    let word = |parts: &[Re]| -> Option<Vec<u32>> {
        parts.iter().map(|p| match p {
            Re::Set(s) if s.0.len() == 1 && s.0[0].0 == s.0[0].1 => Some(s.0[0].0),
            _ => None,
        }).collect()
    };
    match re {
        Re::Concat(parts) => Some(vec![word(parts)?]),
        Re::Alt(branches) => branches.iter().map(|b| match b {
            Re::Concat(parts) => word(parts),
            _ => None,
        }).collect(),
        _ => None,
    }
}

/// Adds to `states` those its epsilon moves reach; sorts them and drops
/// repeats. `on` has a flag per NFA state, all false before and after.
fn closure(eps: &Moves<usize>, states: &mut Vec<usize>, on: &mut [bool]) {
    states.retain(|&s| !std::mem::replace(&mut on[s], true));
    let mut i = 0;
    while i < states.len() {
        for &t in eps.of(states[i]) {
            if !on[t] {
                on[t] = true;
                states.push(t);
            }
        }
        i += 1;
    }
    states.iter().for_each(|&s| on[s] = false);
    states.sort_unstable();
}

/// The classes of characters no range splits: each a range between two
/// ranges' edges, in order (surrogates left out).
fn partition(ranges: impl IntoIterator<Item = (u32, u32)>) -> Vec<CharSet> {
    let mut cuts = vec![0u32, MAX_CHAR + 1];
    for (a, b) in ranges {
        cuts.push(a);
        cuts.push(b + 1);
    }
    cuts.sort_unstable();
    cuts.dedup();
    cuts.windows(2)
        .map(|w| CharSet::from_ranges(vec![(w[0], w[1] - 1)]))
        .filter(|c| !c.is_empty())
        .collect()
}

impl Dfa {
    /// The DFA of several expressions at once (at most 64), each tagged.
    /// `required`: the expressions (bits) that every string to be accepted
    /// matches; a state from which one of them can no longer match is left
    /// out (an intersection explores only what all its parts allow).
    pub fn tagged(exprs: &[Re], required: u64, max_states: usize) -> Result<Dfa, TooLarge> {
        if exprs.len() > 64 {
            return Err(TooLarge);
        }
        match Dfa::trie(exprs, max_states) {
            Some(dfa) => dfa,
            None => Dfa::subsets(exprs, required, max_states, usize::MAX),
        }
    }

    /// The DFA of one expression that searches ([`Re::is_search`]), where
    /// it stays close to deterministic: `TooLarge` once one of its states
    /// stands for more than [`MAX_SEARCH_SET`] states of the Thompson
    /// automaton (an alternation of hundreds of words, whose every state
    /// carries a partial match of each: the construction's work grows with
    /// the words times the states, seconds for 500 words).
    pub fn search(expr: &Re, max_states: usize) -> Result<Dfa, TooLarge> {
        Dfa::subsets(std::slice::from_ref(expr), 1, max_states, MAX_SEARCH_SET)
    }

    /// [`Dfa::tagged`] of literal strings and "any string" (the declared
    /// names an undeclared key must avoid), built as the names' trie: the
    /// automaton the subset construction makes, without its sets. `None`
    /// when some expression is neither.
    fn trie(exprs: &[Re], max_states: usize) -> Option<Result<Dfa, TooLarge>> {
        let mut any = 0u64;
        let mut words: Vec<(Vec<u32>, u64)> = Vec::new();
        for (i, e) in exprs.iter().enumerate() {
            if *e == Re::any_string() {
                any |= 1 << i;
            } else {
                words.extend(literals(e)?.into_iter().map(|w| (w, 1 << i)));
            }
        }
        let chars = words.iter().flat_map(|w| w.0.iter().map(|&c| (c, c)));
        let any_char = if any != 0 { CharSet::any().0 } else { Vec::new() };
        let classes = partition(chars.chain(any_char));
        // Each node's children: `(class, node)`.
        let mut kids: Vec<Vec<(u32, u32)>> = vec![Vec::new()];
        let mut tags = vec![any];
        for (word, tag) in &words {
            let mut s = 0;
            for &c in word {
                let ci = (classes.partition_point(|k| k.0[0].0 <= c) - 1) as u32;
                s = match kids[s].iter().find(|k| k.0 == ci) {
                    Some(k) => k.1 as usize,
                    None => {
                        if kids.len() >= max_states {
                            return Some(Err(TooLarge));
                        }
                        let t = kids.len();
                        kids[s].push((ci, t as u32));
                        kids.push(Vec::new());
                        tags.push(any);
                        t
                    }
                };
            }
            tags[s] |= tag;
        }
        // "Any string" goes on, past every name, to a state of its own.
        let n = classes.len() as u32;
        let mut other = DEAD;
        if any != 0 && kids.iter().any(|k| k.len() < classes.len()) {
            if kids.len() >= max_states {
                return Some(Err(TooLarge));
            }
            other = kids.len() as u32;
            kids.push(Vec::new());
            tags.push(any);
        }
        let mut dfa = Dfa { classes, runs: Vec::new(), at: vec![0], tags };
        for k in &mut kids {
            k.sort_unstable();
            let mut from = 0;
            for &(ci, t) in k.iter() {
                if ci > from {
                    dfa.runs.push((from, other));
                }
                dfa.runs.push((ci, t));
                from = ci + 1;
            }
            if from < n {
                dfa.runs.push((from, other));
            }
            dfa.at.push(dfa.runs.len() as u32);
        }
        Some(Ok(dfa))
    }

    /// The state after character `c` from state `s` (`DEAD`: none).
    fn next(&self, s: usize, c: u32) -> u32 {
        let Some(class) = self.classes.iter().position(|k| k.contains(c)) else { return DEAD };
        self.moves(s).find(|&(from, end, _)| (from..end).contains(&class)).map_or(DEAD, |m| m.2)
    }

    /// The strings the DFA accepts (integers as [`super::number::range`]
    /// writes them: a sign, digits and a zero fraction) whose value's
    /// remainder modulo `k` satisfies `accept`, as an automaton of raw
    /// characters: the product of the DFA with the remainder of the digits
    /// before the point, which the fraction's zeros leave as it is. `None`:
    /// no string. The product's states are bounded by `max_states`.
    pub fn emit_remainders(&self, k: u64, accept: &dyn Fn(u64) -> bool, rules: &mut Writer, max_states: usize) -> Result<Option<Ex>, TooLarge> {
        let n = self.tags.len();
        let k = usize::try_from(k).map_err(|_| TooLarge)?;
        let total = n.checked_mul(k).and_then(|x| x.checked_mul(2)).filter(|&t| t <= max_states).ok_or(TooLarge)?;
        // Product state (DFA state, remainder, past the point).
        let idx = |s: usize, r: usize, point: bool| (s * k + r) * 2 + usize::from(point);
        let chars: Vec<u32> = b"-.0123456789".iter().map(|&b| u32::from(b)).collect();
        // The DFA's own moves on those characters, once per state (not per product state).
        let moves: Vec<u32> = (0..n).flat_map(|s| chars.iter().map(move |&c| self.next(s, c))).collect();
        // The product state after character `chars[ci]`.
        let step = |v: usize, ci: usize| -> Option<usize> {
            let (s, r, point, c) = (v / 2 / k, v / 2 % k, v % 2 == 1, chars[ci]);
            let t = moves[s * chars.len() + ci];
            if t == DEAD {
                return None;
            }
            let r = match c {
                0x30..=0x39 if !point => (r * 10 + (c - 0x30) as usize) % k,
                _ => r,
            };
            Some(idx(t as usize, r, point || c == u32::from(b'.')))
        };
        let accepts = |v: usize| accept((v / 2 % k) as u64) && self.tags[v / 2 / k] & 1 == 1;
        // Live states reach an accepting one; those the start reaches are written.
        let mut preds: Vec<Vec<usize>> = vec![Vec::new(); total];
        for v in 0..total {
            for ci in 0..chars.len() {
                if let Some(t) = step(v, ci) {
                    preds[t].push(v);
                }
            }
        }
        let mut live = vec![false; total];
        let mut queue: Vec<usize> = (0..total).filter(|&v| accepts(v)).collect();
        queue.iter().for_each(|&v| live[v] = true);
        while let Some(t) = queue.pop() {
            for &v in &preds[t] {
                if !live[v] {
                    live[v] = true;
                    queue.push(v);
                }
            }
        }
        let root = idx(0, 0, false);
        if !live[root] {
            return Ok(None);
        }
        let mut index = vec![u32::MAX; total];
        let mut order = vec![root];
        index[root] = 0;
        let mut i = 0;
        while i < order.len() {
            for ci in 0..chars.len() {
                if let Some(t) = step(order[i], ci).filter(|&t| live[t] && index[t] == u32::MAX) {
                    index[t] = order.len() as u32;
                    order.push(t);
                }
            }
            i += 1;
        }
        let mut states = Vec::with_capacity(order.len());
        let mut edges: Vec<(Ex, u32)> = Vec::new();
        for &v in &order {
            let at = edges.len() as u32;
            // One edge per target, with every character that leads there.
            let mut targets: Vec<(u32, Vec<(u32, u32)>)> = Vec::new();
            for (ci, &c) in chars.iter().enumerate() {
                let Some(t) = step(v, ci).filter(|&t| live[t]) else { continue };
                match targets.iter_mut().find(|x| x.0 == index[t]) {
                    Some(x) => x.1.push((c, c)),
                    None => targets.push((index[t], vec![(c, c)])),
                }
            }
            for (t, cs) in targets {
                edges.push((rules.ranges(&CharSet::from_ranges(cs).0), t));
            }
            states.push((accepts(v), at, edges.len() as u32));
        }
        Ok(Some(rules.automaton(&states, &edges, &[])))
    }

    /// State `s`'s moves: `(first class, end class, target)` (see [`Dfa::runs`]).
    fn moves(&self, s: usize) -> impl Iterator<Item = (usize, usize, u32)> + '_ {
        let row = &self.runs[self.at[s] as usize..self.at[s + 1] as usize];
        row.iter().enumerate().map(move |(i, &(from, t))| {
            let end = row.get(i + 1).map_or(self.classes.len(), |r| r.0 as usize);
            (from as usize, end, t)
        })
    }

    /// The characters of classes `from..end`: classes are consecutive
    /// ranges (but for the surrogates, which none holds), so they are
    /// those from the first one's to the last one's, less the surrogates.
    fn span(&self, from: usize, end: usize) -> impl Iterator<Item = (u32, u32)> {
        let last = &self.classes[end - 1].0;
        let (lo, hi) = (self.classes[from].0[0].0, last[last.len() - 1].1);
        let below = (lo < 0xD800).then(|| (lo, hi.min(0xD7FF)));
        let above = (hi > 0xDFFF).then(|| (lo.max(0xE000), hi));
        below.into_iter().chain(above)
    }

    /// Adds a state's moves from one target per class.
    fn push_row(&mut self, row: &[u32]) {
        for (ci, &t) in row.iter().enumerate() {
            if ci == 0 || row[ci - 1] != t {
                self.runs.push((ci as u32, t));
            }
        }
        self.at.push(self.runs.len() as u32);
    }

    /// [`Dfa::tagged`] by the subset construction over a Thompson automaton.
    fn subsets(exprs: &[Re], required: u64, max_states: usize, max_set: usize) -> Result<Dfa, TooLarge> {
        let mut nfa = Nfa { eps: Vec::new(), edges: Vec::new(), sets: Vec::new(), tag: Vec::new(), max_states: max_states * 8 };
        let start = nfa.state()?;
        // Each expression's states are a run of their own: `ends[i]` is
        // the first state past expression `i`'s.
        let mut ends = Vec::with_capacity(exprs.len());
        for (i, e) in exprs.iter().enumerate() {
            let s = nfa.state()?;
            nfa.eps.push((start, s));
            let end = nfa.build(e, s)?;
            let t = nfa.state()?;
            nfa.eps.push((end, t));
            nfa.tag[t] = Some(i as u8);
            ends.push(t + 1);
        }
        // The expressions a set of states can still match (none leads from
        // one expression's states into another's).
        let matchable = |set: &[usize]| set.iter().filter(|&&s| s != start).fold(0u64, |acc, &s| acc | 1 << ends.partition_point(|&e| e <= s));
        let eps = Moves::new(nfa.tag.len(), &nfa.eps);
        let edges = Moves::new(nfa.tag.len(), &nfa.edges);
        let classes = partition(nfa.sets.iter().flat_map(|s| s.0.iter().copied()));
        let words = classes.len().div_ceil(64);
        // Per edge set, the classes it holds as a bitset (classes are
        // sorted disjoint ranges, each inside or outside every set).
        // (Set `k`'s words are `masks[k * words..][..words]`.)
        let mut masks = vec![0u64; nfa.sets.len() * words];
        for (m, s) in masks.chunks_exact_mut(words.max(1)).zip(&nfa.sets) {
            for &(a, b) in &s.0 {
                let from = classes.partition_point(|c| c.0[0].0 < a);
                for ci in from..classes.len() {
                    if classes[ci].0[0].0 > b {
                        break;
                    }
                    m[ci / 64] |= 1 << (ci % 64);
                }
            }
        }
        let mut all = vec![!0u64; words];
        if !classes.len().is_multiple_of(64) {
            all[words - 1] = (1u64 << (classes.len() % 64)) - 1;
        }
        let mut ids: FastMap<Vec<usize>, u32> = FastMap::default();
        let mut moved: FastMap<Vec<usize>, u32> = FastMap::default();
        let mut order: Vec<Vec<usize>> = Vec::new();
        let mut on = vec![false; nfa.tag.len()];
        let mut first = vec![start];
        closure(&eps, &mut first, &mut on);
        ids.insert(first.clone(), 0);
        order.push(first);
        let mut dfa = Dfa { classes: Vec::new(), runs: Vec::new(), at: vec![0], tags: Vec::new() };
        let mut i = 0;
        while i < order.len() {
            let cur = std::mem::take(&mut order[i]);
            if cur.len() > max_set {
                return Err(TooLarge);
            }
            dfa.tags.push(cur.iter().filter_map(|&s| nfa.tag[s]).fold(0u64, |acc, t| acc | 1 << t));
            // Classes split by the states they lead to before closure: one
            // group per distinct move (refined edge by edge), not one walk per class.
            let mut groups: Vec<(Vec<u64>, Vec<usize>)> = vec![(all.clone(), Vec::new())];
            for &s in &cur {
                for &(set, t) in edges.of(s) {
                    let m = &masks[set * words..(set + 1) * words];
                    for g in 0..groups.len() {
                        let (gm, moves) = &mut groups[g];
                        if !gm.iter().zip(m).any(|(g, m)| g & m != 0) {
                            continue;
                        }
                        if !gm.iter().zip(m).any(|(g, m)| g & !m != 0) {
                            moves.push(t);
                            continue;
                        }
                        let inside: Vec<u64> = gm.iter().zip(m).map(|(g, m)| g & m).collect();
                        gm.iter_mut().zip(m).for_each(|(g, m)| *g &= !m);
                        let mut with = moves.clone();
                        with.push(t);
                        groups.push((inside, with));
                    }
                }
            }
            let mut row = vec![DEAD; classes.len()];
            for (gm, mut next) in groups {
                if next.is_empty() {
                    continue;
                }
                // The same moves lead to the same state: the closure is taken
                // once per distinct set of moves.
                next.sort_unstable();
                next.dedup();
                let id = match moved.get(&next) {
                    Some(&id) => id,
                    None => {
                        let moves = next.clone();
                        closure(&eps, &mut next, &mut on);
                        let id = match ids.get(&next) {
                            Some(&id) => id,
                            None if required & !matchable(&next) != 0 => DEAD,
                            None => {
                                if order.len() >= max_states {
                                    return Err(TooLarge);
                                }
                                let id = order.len() as u32;
                                ids.insert(next.clone(), id);
                                order.push(next);
                                id
                            }
                        };
                        moved.insert(moves, id);
                        id
                    }
                };
                for (w, &bits) in gm.iter().enumerate() {
                    let mut bits = bits;
                    while bits != 0 {
                        row[w * 64 + bits.trailing_zeros() as usize] = id;
                        bits &= bits - 1;
                    }
                }
            }
            dfa.push_row(&row);
            i += 1;
        }
        dfa.classes = classes;
        Ok(dfa)
    }

    /// Distinct tag sets of reachable states.
    pub fn signatures(&self) -> Vec<u64> {
        let mut v = self.tags.clone();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// Every string whose tag set satisfies `accept`, counted in characters
    /// between `min` and `max`, as an automaton of JSON string characters
    /// (`None`: no string). States times counts are bounded by `max_states`.
    pub fn emit(
        &self,
        accept: &dyn Fn(u64) -> bool,
        min: u64,
        max: Option<u64>,
        rules: &mut Writer,
        max_states: usize,
    ) -> Result<Option<Ex>, TooLarge> {
        // Product with a counter: count capped at `max` (or at `min` when unbounded).
        let cap = max.unwrap_or(min);
        // A product with a count multiplies the states: the states alike
        // under `accept` are merged first.
        let merged = if cap > 0 { self.quotient(accept) } else { None };
        let d = merged.as_ref().unwrap_or(self);
        let width = cap as usize + 1;
        let n = d.tags.len();
        if n.saturating_mul(width) > max_states {
            return Err(TooLarge);
        }
        let idx = |s: usize, k: u64| k as usize * n + s;
        let total = n * width;
        let step = |k: u64| -> Option<u64> {
            match max {
                Some(m) if k >= m => None,
                Some(_) => Some(k + 1),
                None => Some((k + 1).min(cap)),
            }
        };
        let mut preds: Vec<Vec<usize>> = vec![Vec::new(); n];
        for s in 0..n {
            for (_, _, t) in d.moves(s) {
                if t != DEAD && preds[t as usize].last() != Some(&s) {
                    preds[t as usize].push(s);
                }
            }
        }
        // Whether each pattern state's tags accept.
        let ends: Vec<bool> = d.tags.iter().map(|&t| accept(t)).collect();
        // The pattern states' own successors, the same at every count.
        let mut pattern = Successors::default();
        pattern.reset(n);
        for s in 0..n {
            for (from, end, t) in d.moves(s).filter(|m| m.2 != DEAD) {
                pattern.add(t as usize, d.span(from, end));
            }
            pattern.close(s);
        }
        // A count that can no longer bind: from pattern state `s`, every
        // string to acceptance fits the bounds at each count in
        // `free[s].0..=free[s].1`, where `(s, k)` takes the strings that
        // `(s, free[s].1)` takes (the top one, or the cap's where `max` is
        // unbounded): such states are written once (an email's domain,
        // bounded, past the counts that near `max`).
        let shortest = d.shortest(&ends, &preds);
        // (Only a bound above asks for the longest.)
        let longest = if max.is_some() { d.longest(&shortest, &pattern) } else { Vec::new() };
        let free: Vec<(u64, u64)> = (0..n)
            .map(|s| {
                let lo = min.saturating_sub(shortest[s]);
                match max {
                    _ if shortest[s] == u64::MAX => (1, 0),
                    None => (lo, cap),
                    Some(m) => m.checked_sub(longest[s]).map_or((1, 0), |hi| (lo, hi)),
                }
            })
            .collect();
        let is_free = |s: usize, k: u64| k < cap && free[s].0 <= k && k <= free[s].1;
        let canon = |s: usize, k: u64| if is_free(s, k) { idx(s, free[s].1) } else { idx(s, k) };
        // Live states: those that reach an accepting one, layer by layer from
        // the cap's (where `max` is unbounded, the pattern's states that reach
        // one; where bounded, the accepting ones).
        let mut live = vec![false; total];
        for s in 0..n {
            live[idx(s, cap)] = if max.is_some() { ends[s] && cap >= min } else { shortest[s] != u64::MAX };
        }
        for k in (0..cap).rev() {
            for s in 0..n {
                live[idx(s, k)] = is_free(s, k) || (ends[s] && k >= min) || pattern.of(s).iter().any(|g| live[idx(g.0, k + 1)]);
            }
        }
        if !live[idx(0, 0)] {
            return Ok(None);
        }
        // A product state's live targets: `(first class, end class, target)`.
        let live = &live;
        let next = |v: usize| {
            let k2 = step((v / n) as u64);
            d.moves(v % n).map(move |(from, end, t)| {
                let to = k2.and_then(|k2| (t != DEAD && live[idx(t as usize, k2)]).then(|| idx(t as usize, k2)));
                (from, end, to)
            })
        };
        // Each product state stands for itself until `minimize` merges the
        // equivalent ones.
        let mut rep: Vec<usize> = (0..total).collect();
        // A product state's live successors (their representatives), grouped
        // by target, each with its characters: `succ.of(v)`.
        let mut succ = Successors::default();
        let successors = |v: usize, rep: &[usize], succ: &mut Successors| {
            let Some(k2) = step((v / n) as u64) else { return };
            for &(t, a, b) in pattern.of(v % n) {
                if live[idx(t, k2)] {
                    succ.add(rep[idx(t, k2)], pattern.ranges[a as usize..b as usize].iter().copied());
                }
            }
            succ.close(v);
        };
        // Layers by count: a state below the cap steps to the next count; at
        // the cap it steps within the cap where `max` is unbounded (the
        // patterns' automaton, cycles and all) and nowhere where it is
        // bounded. The states the root reaches, layer by layer:
        let root = canon(0, 0);
        let mut reached = vec![false; total];
        reached[root] = true;
        for k in 0..cap {
            for s in 0..n {
                if reached[idx(s, k)] {
                    for &(t, _, _) in pattern.of(s) {
                        reached[canon(t, k + 1)] |= live[idx(t, k + 1)];
                    }
                }
            }
        }
        let accepts = |v: usize| (v / n) as u64 >= min && ends[v % n];
        // The cap's layer: components of states, successors first, minimal
        // where a cycle passes through several states.
        let mut roots: Vec<usize> = (0..n).map(|s| idx(s, cap)).filter(|&v| reached[v]).collect();
        let graph = |roots: &[usize], rep: &[usize], succ: &mut Successors| {
            succ.reset(total);
            components(total, roots.iter().copied(), |v, i| {
                if i == 0 {
                    successors(v, rep, succ);
                }
                succ.of(v).get(i).map(|e| e.0)
            })
        };
        let (mut comp, mut ncomp) = graph(&roots, &rep, &mut succ);
        let mut sizes = vec![0u32; ncomp];
        comp.iter().filter(|&&c| c != usize::MAX).for_each(|&c| sizes[c] += 1);
        if sizes.iter().any(|&n| n > 1) {
            rep = minimize(&roots, &next, &accepts, total);
            roots = roots.iter().map(|&v| rep[v]).collect();
            roots.dedup();
            (comp, ncomp) = graph(&roots, &rep, &mut succ);
        }
        // Each component's states, `members[at[c]..at[c + 1]]`.
        let mut at = vec![0usize; ncomp + 1];
        comp.iter().filter(|&&c| c != usize::MAX).for_each(|&c| at[c + 1] += 1);
        for c in 0..ncomp {
            at[c + 1] += at[c];
        }
        let mut members = vec![0usize; at[ncomp]];
        let mut fill = at.clone();
        for (v, &c) in comp.iter().enumerate().filter(|x| *x.1 != usize::MAX) {
            members[fill[c]] = v;
            fill[c] += 1;
        }
        // Automaton states (`index`: each product state's representative's),
        // successors first, their edges in one array; a state outside any
        // cycle takes the place of an equivalent one written before.
        let mut index = vec![u32::MAX; total];
        let mut written = Written::default();
        let moves = |w: usize, index: &[u32], rules: &mut Writer, edges: &mut Vec<(Ex, u32)>| {
            for &(t, a, b) in succ.of(w) {
                if let Some(c) = rules.json_char(&succ.ranges[a as usize..b as usize]) {
                    edges.push((c, index[t]));
                }
            }
        };
        for component in at.windows(2).map(|w| &members[w[0]..w[1]]) {
            if let [w] = *component
                && succ.of(w).iter().all(|g| g.0 != w)
            {
                let at = written.edges.len();
                moves(w, &index, rules, &mut written.edges);
                index[w] = written.state(accepts(w), at);
            } else {
                for &w in component {
                    index[w] = written.states.len() as u32;
                    written.states.push((accepts(w), 0, 0));
                }
                for &w in component {
                    let at = written.edges.len() as u32;
                    moves(w, &index, rules, &mut written.edges);
                    written.states[index[w] as usize] = (accepts(w), at, written.edges.len() as u32);
                }
            }
        }
        // The layers below the cap, from the top down: a state's successors
        // are written before it, so equivalent states meet as equal ones.
        // Its edges are its pattern state's groups of characters, in their
        // order at every count (as twins need), each made once.
        let mut chars: Vec<Option<Option<Ex>>> = vec![None; pattern.list.len()];
        for k in (0..cap).rev() {
            for s in (0..n).filter(|&s| reached[idx(s, k)]) {
                let at = written.edges.len();
                let (first, end) = pattern.at[s];
                let group = first as usize..end as usize;
                for (&(t, a, b), char) in pattern.list[group.clone()].iter().zip(&mut chars[group]) {
                    let w = idx(t, k + 1);
                    if !live[w] {
                        continue;
                    }
                    let ranges = &pattern.ranges[a as usize..b as usize];
                    if let Some(c) = *char.get_or_insert_with(|| rules.json_char(ranges)) {
                        written.edges.push((c, index[rep[canon(t, k + 1)]]));
                    }
                }
                index[idx(s, k)] = written.state(k >= min && ends[s], at);
            }
        }
        let Written { mut states, mut edges, .. } = written;
        // The root's state first.
        let first = index[rep[root]];
        states.swap(0, first as usize);
        let swap = |e: u32| if e == first { 0 } else if e == 0 { first } else { e };
        for e in &mut edges {
            e.1 = swap(e.1);
        }
        let twins = match max {
            Some(max) => {
                let state = |v: usize| (index[rep[v]] != u32::MAX).then(|| swap(index[rep[v]]));
                // A free count's state is its first free count's.
                let state = |s: usize, k: u64| match is_free(s, k) && k > free[s].0.max(min) {
                    true => None,
                    false => state(canon(s, k)).filter(|_| live[idx(s, k)]),
                };
                d.twins(min, max, &shortest, state, states.len())
            }
            None => Vec::new(),
        };
        Ok(Some(rules.automaton(&states, &edges, &twins)))
    }

    /// The automaton with the states that take the same strings to a tag
    /// set satisfying `accept` merged (those the first state reaches; it
    /// stays first), or `None` where none are alike.
    fn quotient(&self, accept: &dyn Fn(u64) -> bool) -> Option<Dfa> {
        let n = self.tags.len();
        let next = |s: usize| self.moves(s).map(|(from, end, t)| (from, end, (t != DEAD).then_some(t as usize)));
        let rep = minimize(&[0], &next, &|s| accept(self.tags[s]), n);
        // The merged states, numbered as the first state reaches them.
        let mut number = vec![DEAD; n];
        let mut order = vec![0usize];
        number[0] = 0;
        let mut q = Dfa { classes: self.classes.clone(), runs: Vec::new(), at: vec![0], tags: Vec::new() };
        while let Some(&s) = order.get(q.tags.len()) {
            q.tags.push(self.tags[s]);
            let row = q.runs.len();
            for (from, _, t) in self.moves(s) {
                let t = match t {
                    DEAD => DEAD,
                    t => {
                        let r = rep[t as usize];
                        if number[r] == DEAD {
                            number[r] = order.len() as u32;
                            order.push(r);
                        }
                        number[r]
                    }
                };
                // (Targets merged into one join their runs.)
                if q.runs.len() == row || q.runs.last().is_some_and(|r| r.1 != t) {
                    q.runs.push((from as u32, t));
                }
            }
            q.at.push(q.runs.len() as u32);
        }
        (q.tags.len() < n).then_some(q)
    }

    /// The twins of a product with a count bounded by `max` (see
    /// [`gbnf::State::twin`]), per automaton state (`state(s, k)`: the
    /// automaton state of product state `(s, k)`, if written and live).
    /// Past `min`, `(s, k)` and `(s, j)` with `j < k` take every string
    /// alike as long as the one with the higher count does not near the
    /// bound: for strings of at most `max - k - far` characters, where
    /// `far` is the longest of the shortest ways to acceptance. The twin
    /// of each is the one with the lowest count written (`dist`: per
    /// pattern state, [`Dfa::shortest`]).
    fn twins(&self, min: u64, max: u64, dist: &[u64], state: impl Fn(usize, u64) -> Option<u32>, count: usize) -> Vec<Option<(u32, u32)>> {
        let n = self.tags.len();
        let far = dist.iter().copied().filter(|&d| d != u64::MAX).max().unwrap_or(0);
        let mut twins = vec![None; count];
        let mut lowest = vec![None; n];
        for k in min..max.saturating_sub(far) {
            for s in (0..n).filter(|&s| dist[s] != u64::MAX) {
                let Some(a) = state(s, k) else { continue };
                match lowest[s] {
                    None => lowest[s] = Some(a),
                    Some(t) if t != a && twins[a as usize].is_none() => {
                        twins[a as usize] = Some((t, u32::try_from(max - k - far).unwrap_or(u32::MAX)));
                    }
                    Some(_) => {}
                }
            }
        }
        // A twin of one that has a twin of its own (product states merged
        // across counts) is dropped: each stands in for the other at most once.
        let has: Vec<bool> = twins.iter().map(Option::is_some).collect();
        twins.iter_mut().filter(|t| t.is_some_and(|(t, _)| has[t as usize])).for_each(|t| *t = None);
        twins
    }

    /// Per state, the fewest characters to an accepting one (`ends`), or
    /// `u64::MAX` where none is reached (`preds`: each state's predecessors).
    fn shortest(&self, ends: &[bool], preds: &[Vec<usize>]) -> Vec<u64> {
        let mut dist = vec![u64::MAX; self.tags.len()];
        let mut queue: std::collections::VecDeque<usize> = (0..dist.len()).filter(|&s| ends[s]).collect();
        queue.iter().for_each(|&s| dist[s] = 0);
        while let Some(t) = queue.pop_front() {
            for &s in &preds[t] {
                if dist[s] == u64::MAX {
                    dist[s] = dist[t] + 1;
                    queue.push_back(s);
                }
            }
        }
        dist
    }

    /// Per state that reaches an accepting one (`shortest` finite), the
    /// most characters to one: `u64::MAX` where a cycle is on the way.
    fn longest(&self, shortest: &[u64], pattern: &Successors) -> Vec<u64> {
        let n = self.tags.len();
        let on_way = |v: usize| pattern.of(v).iter().map(|g| g.0).filter(|&t| shortest[t] != u64::MAX);
        let (comp, ncomp) = components(n, (0..n).filter(|&s| shortest[s] != u64::MAX), |v, i| on_way(v).nth(i));
        let mut members = vec![Vec::new(); ncomp];
        (0..n).filter(|&v| comp[v] != usize::MAX).for_each(|v| members[comp[v]].push(v));
        let mut longest = vec![u64::MAX; n];
        // Components complete successors first.
        for states in &members {
            let cyclic = states.len() > 1 || on_way(states[0]).any(|t| t == states[0]);
            for &s in states.iter().filter(|_| !cyclic) {
                longest[s] = on_way(s).map(|t| longest[t].saturating_add(1)).max().unwrap_or(0);
            }
        }
        longest
    }
}

/// Every string but `names`, as an automaton of JSON string characters: the
/// rules [`Dfa::emit`] writes for the strings that [`Dfa::tagged`] of "any
/// string" and the names tags with "any string" alone (the keys of an
/// object's undeclared members, when no pattern splits them), made in one
/// pass over the names' trie instead of through the product's passes.
///
/// Its states are written as emit writes them: depth first, each after its
/// successors, a node's edges ordered by their first character (the
/// characters no child takes, to the state past the trie, and each child's),
/// a node equal to one written before written once, and the root first.
pub fn emit_other_than(names: &[String], rules: &mut Writer) -> Ex {
    // The trie: each node's children `(character, node)` and whether a name ends there.
    let mut kids: Vec<Vec<(u32, u32)>> = vec![Vec::new()];
    let mut ends = vec![false];
    for name in names {
        let mut s = 0;
        for c in name.chars().map(u32::from) {
            s = match kids[s].iter().find(|k| k.0 == c) {
                Some(k) => k.1 as usize,
                None => {
                    let t = kids.len();
                    kids[s].push((c, t as u32));
                    kids.push(Vec::new());
                    ends.push(false);
                    t
                }
            };
        }
        ends[s] = true;
    }
    kids.iter_mut().for_each(|k| k.sort_unstable());
    // Past the trie, every string goes on: one looping state.
    let past = kids.len();
    // Per node, its children of characters 0, 1, ... (before the first character none takes).
    let gaps: Vec<usize> = kids.iter().map(|k| k.iter().enumerate().take_while(|&(i, c)| c.0 == i as u32).count()).collect();
    // Node `v`'s `i`-th edge: a child `(character, node)`, or `None` for the
    // characters no child takes (after the node's gap).
    let edge = |v: usize, i: usize| -> Option<Option<(u32, u32)>> {
        let (k, gap) = kids.get(v).zip(gaps.get(v)).map_or((&[][..], 0), |(k, &g)| (k.as_slice(), g));
        match i.cmp(&gap) {
            std::cmp::Ordering::Less => Some(Some(k[i])),
            std::cmp::Ordering::Equal => Some(None),
            std::cmp::Ordering::Greater => k.get(i - 1).copied().map(Some),
        }
    };
    let target = |e: Option<(u32, u32)>| e.map_or(past, |c| c.1 as usize);
    let mut index = vec![u32::MAX; past + 1];
    let mut entered = vec![false; past + 1];
    let mut written = Written::default();
    // A node's children's characters, and the characters none takes.
    let (mut taken, mut others) = (Vec::new(), Vec::new());
    let mut work: Vec<(usize, usize)> = vec![(0, 0)];
    entered[0] = true;
    while let Some(&mut (v, ref mut i)) = work.last_mut() {
        if let Some(e) = edge(v, *i) {
            *i += 1;
            let t = target(e);
            if !std::mem::replace(&mut entered[t], true) {
                work.push((t, 0));
            }
            continue;
        }
        work.pop();
        if v == past {
            // (In a cycle: its own index comes before its edge.)
            index[past] = written.states.len() as u32;
            let at = written.edges.len() as u32;
            written.edges.extend(rules.json_char(&CharSet::any().0).map(|c| (c, index[past])));
            written.states.push((true, at, written.edges.len() as u32));
            continue;
        }
        let at = written.edges.len();
        taken.clear();
        taken.extend(kids[v].iter().map(|c| (c.0, c.0)));
        complement(&taken, &mut others);
        let mut i = 0;
        while let Some(e) = edge(v, i) {
            let chars = match e {
                Some((c, _)) => &[(c, c)][..],
                None => &others[..],
            };
            if let Some(c) = rules.json_char(chars) {
                written.edges.push((c, index[target(e)]));
            }
            i += 1;
        }
        index[v] = written.state(!ends[v], at);
    }
    let Written { mut states, mut edges, .. } = written;
    // The root's state first.
    let first = index[0];
    states.swap(0, first as usize);
    let swap = |e: u32| if e == first { 0 } else if e == 0 { first } else { e };
    for e in &mut edges {
        e.1 = swap(e.1);
    }
    rules.automaton(&states, &edges, &[])
}

/// Each product state's successors, grouped by target: `(target, ranges)`
/// with the characters leading there (sorted, apart) in `ranges`.
#[derive(Default)]
struct Successors {
    /// Per state, its groups `list[at.0..at.1]`.
    at: Vec<(u32, u32)>,
    list: Vec<(usize, u32, u32)>,
    ranges: Vec<(u32, u32)>,
    /// The groups of the state being filled, each with its ranges.
    open: Vec<(usize, Vec<(u32, u32)>)>,
    used: usize,
}

impl Successors {
    fn reset(&mut self, states: usize) {
        self.at.clear();
        self.at.resize(states, (0, 0));
        self.list.clear();
        self.ranges.clear();
    }

    fn of(&self, v: usize) -> &[(usize, u32, u32)] {
        let (a, b) = self.at[v];
        &self.list[a as usize..b as usize]
    }

    /// Characters `ranges` (in order) lead to `target`: runs of classes
    /// share a target, so the last group is tried first.
    fn add(&mut self, target: usize, ranges: impl Iterator<Item = (u32, u32)>) {
        let g = match self.open[..self.used].iter().rposition(|g| g.0 == target) {
            Some(g) => g,
            None => {
                if self.used == self.open.len() {
                    self.open.push((target, Vec::new()));
                }
                self.open[self.used].0 = target;
                self.open[self.used].1.clear();
                self.used += 1;
                self.used - 1
            }
        };
        let group = &mut self.open[g].1;
        for (a, b) in ranges {
            match group.last_mut() {
                Some(l) if l.1 + 1 == a => l.1 = b,
                _ => group.push((a, b)),
            }
        }
    }

    fn close(&mut self, v: usize) {
        let first = self.list.len() as u32;
        for (target, ranges) in &mut self.open[..self.used] {
            let a = self.ranges.len() as u32;
            // Groups that met (targets merged as one) come in out of order.
            if !ranges.is_sorted() {
                join(ranges);
            }
            self.ranges.extend_from_slice(ranges);
            self.list.push((*target, a, self.ranges.len() as u32));
        }
        self.at[v] = (first, self.list.len() as u32);
        self.used = 0;
    }
}

/// Automaton states written so far and their edges; a state outside any
/// cycle is written once (`same`: by a hash of what it holds).
#[derive(Default)]
struct Written {
    states: Vec<(bool, u32, u32)>,
    edges: Vec<(Ex, u32)>,
    same: FastMap<u64, u32>,
}

impl Written {
    /// The state that accepts as `accepts` says with edges `edges[at..]`:
    /// an equal one written before (those edges dropped), or a new one.
    fn state(&mut self, accepts: bool, at: usize) -> u32 {
        let key = self.same.hasher().hash_one((accepts, &self.edges[at..]));
        let old = self.same.get(&key).copied().filter(|&o| {
            let (a, x, y) = self.states[o as usize];
            a == accepts && self.edges[x as usize..y as usize] == self.edges[at..]
        });
        match old {
            Some(o) => {
                self.edges.truncate(at);
                o
            }
            None => {
                self.states.push((accepts, at as u32, self.edges.len() as u32));
                let s = self.states.len() as u32 - 1;
                self.same.entry(key).or_insert(s);
                s
            }
        }
    }
}

/// Sorts `ranges` and joins those that meet or overlap.
fn join(ranges: &mut Vec<(u32, u32)>) {
    ranges.sort_unstable();
    ranges.dedup_by(|r, prev| {
        let meet = prev.1 + 1 >= r.0;
        if meet {
            prev.1 = prev.1.max(r.1);
        }
        meet
    });
}

/// For each state reachable from `roots` (by its moves `next(state)`:
/// `(first class, end class, target)` in class order, covering them all),
/// the first reached of the states equivalent to it: alike in `accepts`,
/// and moving to equivalent states (or to none) on each character class
/// (Moore's refinement).
fn minimize<I: Iterator<Item = (usize, usize, Option<usize>)>>(
    roots: &[usize],
    next: &dyn Fn(usize) -> I,
    accepts: &dyn Fn(usize) -> bool,
    total: usize,
) -> Vec<usize> {
    const NONE: u32 = u32::MAX;
    // States by when they are reached; each one's moves as runs of
    // consecutive classes with one target (its position here, or NONE).
    let mut order = roots.to_vec();
    let mut pos = vec![NONE; total];
    for (i, &r) in roots.iter().enumerate() {
        pos[r] = i as u32;
    }
    let mut runs: Vec<Vec<(u32, u32)>> = Vec::new();
    while runs.len() < order.len() {
        let v = order[runs.len()];
        let mut row: Vec<(u32, u32)> = Vec::new();
        for (ci, _, t) in next(v) {
            let t = match t {
                Some(t) => {
                    if pos[t] == NONE {
                        pos[t] = order.len() as u32;
                        order.push(t);
                    }
                    pos[t]
                }
                None => NONE,
            };
            if row.last().is_none_or(|r| r.1 != t) {
                row.push((ci as u32, t));
            }
        }
        runs.push(row);
    }
    let mut block: Vec<u32> = order.iter().map(|&v| u32::from(accepts(v))).collect();
    let mut blocks = 0;
    loop {
        // Each round splits blocks by where their states' runs lead (a
        // block's old number leads the signature, so blocks only split).
        let mut ids: FastMap<Vec<u32>, u32> = FastMap::default();
        let mut sig = Vec::new();
        let mut split = Vec::with_capacity(order.len());
        for (j, row) in runs.iter().enumerate() {
            sig.clear();
            sig.push(block[j]);
            for &(ci, t) in row {
                let b = if t == NONE { NONE } else { block[t as usize] };
                if sig.len() == 1 || sig[sig.len() - 1] != b {
                    sig.push(ci);
                    sig.push(b);
                }
            }
            let fresh = ids.len() as u32;
            split.push(match ids.get(&sig) {
                Some(&b) => b,
                None => *ids.entry(sig.clone()).or_insert(fresh),
            });
        }
        block = split;
        if ids.len() == blocks {
            break;
        }
        blocks = ids.len();
    }
    let mut first = vec![usize::MAX; blocks];
    let mut rep: Vec<usize> = (0..total).collect();
    for (&v, &b) in order.iter().zip(&block) {
        if first[b as usize] == usize::MAX {
            first[b as usize] = v;
        }
        rep[v] = first[b as usize];
    }
    rep
}

#[cfg(test)]
mod tests {
    use super::super::regex::parse_pattern;
    use super::*;

    #[test]
    fn signatures_split_overlapping_patterns() {
        let a = parse_pattern("^a").unwrap();
        let b = parse_pattern("b$").unwrap();
        let d = Dfa::tagged(&[a, b], 0, 100).unwrap();
        let sigs = d.signatures();
        assert!(sigs.contains(&0b11) && sigs.contains(&0b01) && sigs.contains(&0b10) && sigs.contains(&0));
    }

    /// A search of a few words is a DFA that follows it; one of a hundred
    /// words is refused (each state would carry a partial match of each).
    #[test]
    fn searches_of_a_few_words_are_automata_and_of_hundreds_are_not() {
        let words = |n: usize| (0..n).map(|i| format!("w{i:03}x")).collect::<Vec<_>>().join("|");
        let few = Dfa::search(&parse_pattern(&words(8)).unwrap(), 1000).unwrap();
        // The DFA follows the search: a word anywhere, after a false start.
        let accepts = |s: &str| {
            let end = s.chars().try_fold(0usize, |st, c| match few.next(st, c as u32) {
                DEAD => None,
                t => Some(t as usize),
            });
            end.is_some_and(|e| few.tags[e] == 1)
        };
        assert!(accepts("ww005x") && accepts("w00w007x!") && !accepts("w008x") && !accepts("w00"));
        // Each state of a search of 100 words stands for a partial match of each.
        assert_eq!(Dfa::search(&parse_pattern(&words(100)).unwrap(), 100_000).err(), Some(TooLarge));
    }

    /// Equivalent states in a cycle are written as one: strings of `a` and
    /// `b` read two characters at a time take one looping rule, and the
    /// same strings.
    #[test]
    fn written_automata_are_minimal() {
        let d = Dfa::tagged(&[parse_pattern("^((a|b)[ab])*[ab]?$").unwrap()], 0, 100).unwrap();
        let mut rules = Writer::default();
        let root = d.emit(&|t| t == 1, 0, None, &mut rules, 1000).unwrap().unwrap();
        let grammar = rules.quoted_text(root);
        assert_eq!(grammar.lines().count(), 2, "{grammar}");
        let c = crate::Constraint::gbnf(&grammar).unwrap();
        for s in ["", "a", "ab", "bab", "abba", "ac", "c"] {
            assert_eq!(c.matches(format!("\"{s}\"").as_bytes()).unwrap(), !s.contains('c'), "{s:?}");
        }
    }

    /// Before a product with a count, states that differ only in tags
    /// `accept` does not ask about are merged: searching for `a` beside
    /// `^[ab]*$` adds states that a bound would multiply, and nothing to
    /// the written automaton.
    #[test]
    fn counted_automata_merge_alike_states() {
        let written = |patterns: &[&str]| {
            let exprs: Vec<Re> = patterns.iter().map(|p| parse_pattern(p).unwrap()).collect();
            let d = Dfa::tagged(&exprs, 0, 100).unwrap();
            let mut rules = Writer::default();
            let root = d.emit(&|t| t & 1 == 1, 1, Some(3), &mut rules, 1000).unwrap().unwrap();
            (d.tags.len(), rules.quoted_text(root))
        };
        let ((searched, with_search), (plain, alone)) = (written(&["^[ab]*$", "a"]), written(&["^[ab]*$"]));
        assert!(searched > plain);
        assert_eq!(with_search, alone);
    }

    /// An automaton built twice is one expression; automata that end in
    /// the same cycle (`(ab)*` after `x` and after `y`) keep their
    /// languages.
    #[test]
    fn equal_automata_are_one() {
        let mut rules = Writer::default();
        let mut roots = Vec::new();
        for p in ["^x(ab)*$", "^y(ab)*$", "^x(ab)*$"] {
            let d = Dfa::tagged(&[parse_pattern(p).unwrap()], 0, 100).unwrap();
            roots.push(d.emit(&|t| t == 1, 0, None, &mut rules, 1000).unwrap().unwrap());
        }
        assert_eq!(roots[0], roots[2]);
        assert_ne!(roots[0], roots[1]);
        let either = rules.alt(&roots[..2]);
        let c = crate::Constraint::gbnf(&rules.quoted_text(either)).unwrap();
        for s in ["x", "yab", "xabab", "ya", "xba", "xy", "ab"] {
            let want = (s.starts_with('x') || s.starts_with('y')) && s[1..].len() % 2 == 0 && s[1..].chars().enumerate().all(|(i, c)| c == ['a', 'b'][i % 2]);
            assert_eq!(c.matches(format!("\"{s}\"").as_bytes()).unwrap(), want, "{s:?}");
        }
    }

    proptest::proptest! {
        /// The trie of literal names is the automaton the subset
        /// construction makes: both write the same rules, for any names
        /// (the empty one, escapes and non-ASCII characters among them),
        /// tagged one by one or together, with "any string" or without.
        #[test]
        fn name_tries_are_the_subset_automata(
            names in proptest::collection::vec("[ab\"\\\u{0}\u{e9}\u{10FFFF}]{0,4}", 0..6),
            any in proptest::bool::ANY,
            together in proptest::bool::ANY,
        ) {
            let mut exprs: Vec<Re> = Vec::new();
            if any {
                exprs.push(Re::any_string());
            }
            let words: Vec<Re> = names.iter().map(|n| Re::Concat(n.chars().map(|c| Re::Set(CharSet::single(c as u32))).collect())).collect();
            if together {
                exprs.push(Re::Alt(words));
            } else {
                exprs.extend(words);
            }
            let trie = Dfa::trie(&exprs, 1000).unwrap().unwrap();
            let subsets = Dfa::subsets(&exprs, 0, 1000, usize::MAX).unwrap();
            proptest::prop_assert_eq!(trie.signatures(), subsets.signatures());
            for sig in subsets.signatures() {
                let written = [&trie, &subsets].map(|d| {
                    let mut rules = Writer::default();
                    let root = d.emit(&|t| t == sig, 0, None, &mut rules, 1000).unwrap();
                    root.map(|root| rules.quoted_text(root))
                });
                proptest::prop_assert_eq!(&written[0], &written[1]);
            }
        }
    }

    proptest::proptest! {
        /// Every string but some names, written from their trie, is what
        /// the subset construction's automaton of "any string" and the
        /// names writes for "any string" alone: the same rules, for any
        /// names (the empty one, escapes, characters 0 and 1, which come
        /// before the characters no child takes, and non-ASCII among them);
        /// and it takes no name, and each name with a character more.
        #[test]
        fn other_than_names_is_the_emitted_complement(
            names in proptest::collection::vec("[ab\"\\\u{0}\u{1}\u{e9}\u{10FFFF}]{0,4}", 0..6),
        ) {
            let mut exprs = vec![Re::any_string()];
            exprs.extend(names.iter().map(|n| Re::Concat(n.chars().map(|c| Re::Set(CharSet::single(c as u32))).collect())));
            let d = Dfa::tagged(&exprs, 0, 1000).unwrap();
            let mut general = Writer::default();
            let root = d.emit(&|t| t == 1, 0, None, &mut general, 1000).unwrap().unwrap();
            let mut direct = Writer::default();
            let other = emit_other_than(&names, &mut direct);
            let text = direct.quoted_text(other);
            proptest::prop_assert_eq!(&text, &general.quoted_text(root));
            let c = crate::Constraint::gbnf(&text).unwrap();
            let spelled = |s: &str| serde_json::to_string(s).unwrap();
            for n in &names {
                let longer = format!("{n}b{n}");
                proptest::prop_assert!(!c.matches(spelled(n).as_bytes()).unwrap(), "{:?}", n);
                proptest::prop_assert_eq!(c.matches(spelled(&longer).as_bytes()).unwrap(), !names.contains(&longer));
            }
        }
    }

    proptest::proptest! {
        /// An intersection built with its parts required leaves out the
        /// states where a part can no longer match, and takes the same
        /// strings (every string of up to five of `a`, `b`, `c`) as the
        /// whole construction, whatever its length bounds.
        #[test]
        fn required_parts_prune_intersections(
            picks in proptest::collection::vec(0..8usize, 1..4),
            min in 0..3u64,
            max in proptest::option::of(2..6u64),
        ) {
            const PARTS: [&str; 8] = ["^....$", "ab", "b", "^[ab]*$", "a.*c", "^a", "c$", "^(ab|c)+$"];
            let exprs: Vec<Re> = picks.iter().map(|&i| parse_pattern(PARTS[i]).unwrap()).collect();
            let all = (1u64 << exprs.len()) - 1;
            let [whole, pruned] = [0, all].map(|required| Dfa::subsets(&exprs, required, 1000, usize::MAX).unwrap());
            proptest::prop_assert!(pruned.tags.len() <= whole.tags.len());
            let [a, b] = [&whole, &pruned].map(|d| {
                let mut rules = Writer::default();
                d.emit(&|t| t == all, min, max, &mut rules, 100_000).unwrap().map(|root| crate::Constraint::gbnf(&rules.quoted_text(root)).unwrap())
            });
            proptest::prop_assert_eq!(a.is_some(), b.is_some());
            let (Some(a), Some(b)) = (a, b) else { return Ok(()) };
            for s in strings_of_abc(5) {
                let quoted = format!("\"{s}\"");
                proptest::prop_assert_eq!(a.matches(quoted.as_bytes()).unwrap(), b.matches(quoted.as_bytes()).unwrap(), "{:?}", s);
            }
        }
    }

    proptest::proptest! {
        /// A pattern within length bounds takes exactly the strings the
        /// pattern's automaton accepts that have a length in bounds (every
        /// string of up to six of `a`, `b`, `c`): counts where a bounded
        /// tail cannot reach the bound are written once, the others per count.
        #[test]
        fn counted_automata_take_the_strings_in_bounds(
            pick in 0..8usize,
            min in 0..4u64,
            max in proptest::option::of(0..7u64),
        ) {
            const PATTERNS: [&str; 8] = ["^a*b[ac]{0,2}$", "ab", "^[ab]{1,3}c?$", "^(a|bc)*c?[ab]{0,3}$", "^c.{0,2}$", "^(ab|c)+$", "b[abc]{2}$", "^a?b?c?a?b?$"];
            let d = Dfa::tagged(&[parse_pattern(PATTERNS[pick]).unwrap()], 1, 1000).unwrap();
            let mut rules = Writer::default();
            let written = d.emit(&|t| t == 1, min, max, &mut rules, 100_000).unwrap();
            let c = written.map(|root| crate::Constraint::gbnf(&rules.quoted_text(root)).unwrap());
            for s in strings_of_abc(6) {
                let end = s.chars().try_fold(0usize, |at, ch| Some(d.next(at, ch as u32)).filter(|&t| t != DEAD).map(|t| t as usize));
                let len = s.len() as u64;
                let want = end.is_some_and(|e| d.tags[e] == 1) && len >= min && max.is_none_or(|m| len <= m);
                let got = c.as_ref().is_some_and(|c| c.matches(format!("\"{s}\"").as_bytes()).unwrap());
                proptest::prop_assert_eq!(got, want, "{:?}", s);
            }
        }
    }

    /// Four characters holding `ab`: past four characters the search goes
    /// on alone, and the intersection has no state there.
    #[test]
    fn intersections_stop_where_a_part_dies() {
        let exprs = [parse_pattern("^....$").unwrap(), parse_pattern("ab").unwrap()];
        let [whole, pruned] = [0, 3].map(|required| Dfa::tagged(&exprs, required, 1000).unwrap());
        let after = |d: &Dfa, s: &str| s.chars().try_fold(0, |at, c| Some(d.next(at, c as u32)).filter(|&t| t != DEAD).map(|t| t as usize));
        assert!(after(&pruned, "xabx").is_some() && after(&pruned, "xabxy").is_none());
        assert!(after(&whole, "xabxy").is_some());
        assert!(pruned.tags.len() < whole.tags.len());
    }

    /// A key automaton (any string but the declared names) written twice:
    /// it takes every short string over the names' characters (`/` with
    /// its two spellings, `"` escaped, a non-ASCII one) exactly when it is
    /// not a name, and the second copy is the first one's expression.
    #[test]
    fn written_automata_share_equivalent_states() {
        let names = ["ab", "c/b", "ab\u{e9}", "c\"a"];
        let mut exprs = vec![Re::any_string()];
        exprs.extend(names.iter().map(|n| literal(n)));
        let d = Dfa::tagged(&exprs, 0, 100).unwrap();
        let other = |tags: u64| tags == 1;
        let mut rules = Writer::default();
        let first = d.emit(&other, 0, None, &mut rules, 1000).unwrap().unwrap();
        let size = rules.size();
        let second = d.emit(&other, 0, None, &mut rules, 1000).unwrap().unwrap();
        assert_eq!((first, size), (second, rules.size()));
        let key = crate::Constraint::gbnf(&rules.quoted_text(first)).unwrap();
        // Strings with each of their spellings.
        let mut strings = vec![(String::new(), String::new())];
        for len in 0..3 {
            let longer: Vec<(String, String)> = strings
                .iter()
                .filter(|s| s.0.chars().count() == len)
                .flat_map(|(s, t)| {
                    [("a", "a"), ("b", "b"), ("c", "c"), ("/", "/"), ("/", "\\/"), ("\u{e9}", "\u{e9}"), ("\"", "\\\"")]
                        .map(|(c, spelled)| (format!("{s}{c}"), format!("{t}{spelled}")))
                })
                .collect();
            strings.extend(longer);
        }
        for (s, spelled) in strings {
            assert_eq!(key.matches(format!("\"{spelled}\"").as_bytes()).unwrap(), !names.contains(&s.as_str()), "{spelled:?}");
        }
    }

    /// Every string of `a`, `b` and `c` of at most `longest` characters.
    fn strings_of_abc(longest: usize) -> Vec<String> {
        let mut strings = vec![String::new()];
        for len in 0..longest {
            let longer: Vec<String> = strings.iter().filter(|s| s.len() == len).flat_map(|s| ["a", "b", "c"].map(|c| format!("{s}{c}"))).collect();
            strings.extend(longer);
        }
        strings
    }

    fn literal(s: &str) -> Re {
        Re::Concat(s.chars().map(|c| Re::Set(CharSet::single(c as u32))).collect())
    }
}
