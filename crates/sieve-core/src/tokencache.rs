//! Grammar masks through a cache of context-independent tokens.
//!
//! Group the byte-consuming items of the newest Earley set by rule and
//! origin. For one group, most tokens are decided by the group's states
//! alone: a token whose bytes keep some item of the rule alive is allowed
//! whatever the callers are, and a token that dies before the rule could end
//! is refused. Only tokens that end the rule part-way through (`",` ending a
//! string inside a list) depend on the callers. [`Analysis`] computes both
//! sets once per group of states by walking the whole token trie through a
//! local chart; at mask time a group costs one OR of the cached bits plus a
//! walk of the remaining suffixes (`,` of `",`) from the set where the rule
//! has ended, through the real chart. The result is exact: every token is
//! either decided locally or checked against the full parse.
//!
//! The walks share a lazily built DFA over outer sets (sets whose items all
//! belong to rules called from outside the local chart): what follows such a
//! set depends on nothing else, so each of its byte transitions is computed
//! by an Earley step once and looked up afterwards. Inside a string or a
//! number nearly every set is an outer set, so a walk costs about one table
//! lookup per trie node. Transitions are computed once per byte class.
//!
//! Inside a string body most of the vocabulary is allowed, and walking it
//! all is what costs. When every string of JSON string characters keeps the
//! group's set alive (checked on the DFA), the vocabulary's string slice
//! (tokens made of such characters) is allowed as a block and only the other
//! tokens are walked.

use crate::error::MatchError;
use crate::grammar::{Chart, ChartWalker, Grammar};
use crate::trie::{TokenTrie, Walker};
use crate::vocab::Vocabulary;
use std::collections::HashMap;
use std::sync::Arc;

/// What a group of states decides on its own.
#[derive(Debug)]
pub(crate) struct Analysis {
    /// Tokens allowed whatever the context.
    allowed: Box<[u32]>,
    /// For tokens that may end the rule part-way: the bytes left after each
    /// place it may end, in a trie whose tokens are the owners of the suffixes.
    suffixes: TokenTrie,
}

/// Analyses per group of states, for one grammar and one vocabulary, and
/// the DFA their walks share.
#[derive(Debug, Default)]
pub(crate) struct TokenCache {
    groups: HashMap<Box<[u32]>, Arc<Analysis>>,
    dfa: SetDfa,
    bytes: usize,
}

impl TokenCache {
    /// Approximate heap bytes held.
    pub fn memory(&self) -> usize {
        self.bytes + self.dfa.memory()
    }

    /// Fills `mask` for the newest set of `chart`. `fuel` bounds the Earley
    /// items created (analyses included).
    pub fn fill(
        &mut self,
        g: &Grammar,
        vocab: &Vocabulary,
        chart: &mut Chart,
        mask: &mut [u32],
        fuel: &mut usize,
        limit: usize,
    ) -> Result<(), MatchError> {
        let mut items: Vec<(u32, u32, u32)> = chart.byte_items(g).collect();
        items.sort_unstable();
        let mut i = 0;
        while i < items.len() {
            let (rule, origin, _) = items[i];
            let j = i + items[i..].iter().take_while(|x| x.0 == rule && x.1 == origin).count();
            let states: Vec<u32> = items[i..j].iter().map(|x| x.2).collect();
            i = j;
            let a = match self.groups.get(states.as_slice()) {
                Some(a) => a.clone(),
                None => {
                    let a = Arc::new(analyze(g, vocab, &mut self.dfa, &states, fuel, limit)?);
                    self.bytes += a.allowed.len() * 4 + a.suffixes.nodes.len() * 20 + a.suffixes.tokens.len() * 4 + 64;
                    self.groups.insert(states.into_boxed_slice(), a.clone());
                    a
                }
            };
            for (m, &w) in mask.iter_mut().zip(a.allowed.iter()) {
                *m |= w;
            }
            if !a.suffixes.nodes.is_empty() && chart.push_end_of(g, rule, origin, fuel)? {
                let mut w = ChartWalker { g, chart: &mut *chart, fuel: *fuel, limit };
                let r = a.suffixes.walk(&mut w, mask);
                *fuel = w.fuel;
                chart.pop();
                r?;
            }
        }
        Ok(())
    }
}

/// Walks every token from the set of `states` (one rule, caller outside).
/// Tokens alive at their end are allowed; tokens that die after the rule
/// could have ended at depth `k` get the suffix `bytes[k..]`.
fn analyze(
    g: &Grammar,
    vocab: &Vocabulary,
    dfa: &mut SetDfa,
    states: &[u32],
    fuel: &mut usize,
    limit: usize,
) -> Result<Analysis, MatchError> {
    let mut allowed = vec![0u32; vocab.mask_words()].into_boxed_slice();
    let mut chart = Chart::local();
    let seed = dfa.intern(states.to_vec(), false);
    let mut walker = SetWalker {
        inner: ChartWalker { g, chart: &mut chart, fuel: *fuel, limit },
        dfa,
        frames: vec![(seed, 0)],
    };
    // Where every string of the slice's characters keeps the seed set
    // alive, the slice's tokens are allowed (none can die) and only the
    // other tokens are walked.
    let slice = vocab.string_slice();
    let trie = match walker.keeps_alive(seed, slice.class) {
        Ok(true) => {
            allowed.iter_mut().zip(slice.mask.iter()).for_each(|(a, &m)| *a = m);
            &slice.rest
        }
        Ok(false) => vocab.trie(),
        Err(e) => {
            *fuel = walker.inner.fuel;
            return Err(e);
        }
    };
    let mut ends: Vec<u32> = Vec::new(); // depths where the rule could end, on the current path
    let mut pending: Vec<(u32, u32)> = Vec::new(); // (token, depth of the end)
    let mut depth = 0u32;
    let mut i = 0usize;
    let result = loop {
        let Some(node) = trie.nodes.get(i) else { break Ok(()) };
        while depth >= node.depth {
            walker.pop();
            depth -= 1;
        }
        while ends.last().is_some_and(|&d| d > depth) {
            ends.pop();
        }
        match walker.push(node.byte) {
            Ok(true) => {
                depth += 1;
                for &t in &trie.tokens[node.tok_start as usize..node.tok_end as usize] {
                    allowed[(t / 32) as usize] |= 1 << (t % 32);
                }
                if walker.outer_end() {
                    ends.push(depth);
                }
                i += 1;
            }
            Ok(false) => {
                if !ends.is_empty() {
                    let last = trie.nodes[node.end as usize - 1].tok_end;
                    for &t in &trie.tokens[node.tok_start as usize..last as usize] {
                        pending.extend(ends.iter().map(|&k| (t, k)));
                    }
                }
                i = node.end as usize;
            }
            Err(e) => break Err(e),
        }
    };
    *fuel = walker.inner.fuel;
    result?;
    let mut sorted: Vec<(&[u8], u32)> = pending
        .iter()
        .filter_map(|&(t, k)| vocab.token_bytes(t).and_then(|b| b.get(k as usize..)).map(|s| (s, t)))
        .filter(|(s, _)| !s.is_empty())
        .collect();
    sorted.sort_unstable();
    sorted.dedup();
    let suffixes = TokenTrie::from_sorted(sorted.into_iter().map(|(s, t)| (t, s)));
    Ok(Analysis { allowed, suffixes })
}

/// No outer set (in a walker frame) or not yet computed (in a transition).
const UNKNOWN: u32 = u32::MAX;
const DEAD: u32 = u32::MAX - 1;
/// Tag of a transition to a set that is not an outer set (index into `open`).
const OPEN: u32 = 1 << 31;

/// The lazily built DFA over outer sets (see the module docs).
#[derive(Debug, Default)]
struct SetDfa {
    ids: HashMap<Box<[u32]>, u32>,
    /// Per outer set: its states and whether the outer rule ended there.
    sets: Vec<(Box<[u32]>, bool)>,
    /// 256 per outer set: `UNKNOWN`, `DEAD`, an outer set, or `OPEN | i`.
    trans: Vec<u32>,
    /// Sets reached from an outer set that have items of rules called in the
    /// set itself.
    open: Vec<OpenSet>,
}

/// A set's items as `(state, origin is the set itself)`, and its end flag.
type OpenSet = (Box<[(u32, bool)]>, bool);

impl SetDfa {
    fn intern(&mut self, states: Vec<u32>, end: bool) -> u32 {
        let next = self.sets.len() as u32;
        let id = *self.ids.entry(states.clone().into_boxed_slice()).or_insert(next);
        if id == next {
            self.sets.push((states.into_boxed_slice(), end));
            self.trans.extend(std::iter::repeat_n(UNKNOWN, 256));
        }
        id
    }

    fn memory(&self) -> usize {
        self.trans.len() * 4
            + self.sets.iter().map(|(s, _)| s.len() * 8 + 64).sum::<usize>()
            + self.open.iter().map(|(s, _)| s.len() * 8 + 32).sum::<usize>()
    }

    /// Opens outer set `id` on the chart.
    fn open_on(&self, chart: &mut Chart, id: u32) {
        let (states, end) = &self.sets[id as usize];
        chart.push_relative(states.iter().map(|&s| (s, false)), *end);
    }

    /// The transition of outer set `from` on `byte` (`DEAD`, an outer set or
    /// `OPEN | i`), computed by one Earley step on `w`'s chart the first
    /// time a byte of its class is taken. The chart is left as it was.
    fn next(&mut self, w: &mut ChartWalker, from: u32, byte: u8) -> Result<u32, MatchError> {
        let slot = from as usize * 256 + byte as usize;
        if self.trans[slot] != UNKNOWN {
            return Ok(self.trans[slot]);
        }
        self.open_on(w.chart, from);
        let to = match w.push(byte) {
            Ok(true) => {
                let to = match (w.chart.outer_states(), w.chart.relative_set()) {
                    (Some(states), _) => Ok(self.intern(states, w.chart.outer_end())),
                    (None, Some((items, end))) => {
                        self.open.push((items.into_boxed_slice(), end));
                        Ok(OPEN | (self.open.len() as u32 - 1))
                    }
                    // A step from an outer set only adds items of rules
                    // called from outside or in the new set.
                    (None, None) => Err(MatchError::Limit { what: "token cache: unexpected Earley set", limit: 0 }),
                };
                w.chart.pop();
                to
            }
            Ok(false) => Ok(DEAD),
            Err(e) => Err(e),
        };
        w.chart.pop();
        let to = to?;
        // Every byte of the class goes the same way.
        let class = w.g.class(byte);
        let row = from as usize * 256;
        for b in 0..=255u8 {
            if w.g.class(b) == class {
                self.trans[row + b as usize] = to;
            }
        }
        Ok(to)
    }
}

/// A trie walker that follows the DFA while it stays on outer sets and
/// falls back to Earley steps on a local chart where it does not.
struct SetWalker<'a, 'c> {
    inner: ChartWalker<'c>,
    dfa: &'a mut SetDfa,
    /// Per set on the path: its outer set id (`UNKNOWN` when it is not one)
    /// and how many sets its step opened on the chart.
    frames: Vec<(u32, u8)>,
}

impl SetWalker<'_, '_> {
    /// True when the outer rule ended in the newest set.
    fn outer_end(&self) -> bool {
        match self.frames.last() {
            Some(&(id, _)) if id != UNKNOWN => self.dfa.sets[id as usize].1,
            _ => self.inner.chart.outer_end(),
        }
    }

    /// True when every string of `class` characters, and every prefix of
    /// one, keeps outer set `id` alive: the outer sets such strings reach
    /// (at most `MAX_REACHED`) all take every character, through outer sets.
    fn keeps_alive(&mut self, id: u32, class: &[(char, char)]) -> Result<bool, MatchError> {
        let mut reached = vec![id];
        let mut i = 0;
        while let Some(&from) = reached.get(i) {
            i += 1;
            for &(lo, hi) in class {
                for seq in regex_syntax::utf8::Utf8Sequences::new(lo, hi) {
                    let mut at = vec![from];
                    for r in seq.as_slice() {
                        let mut next = Vec::new();
                        for &s in &at {
                            for b in r.start..=r.end {
                                if b > r.start && self.inner.g.class(b) == self.inner.g.class(b - 1) {
                                    continue;
                                }
                                let to = self.dfa.next(&mut self.inner, s, b)?;
                                if to == DEAD || to & OPEN != 0 {
                                    return Ok(false);
                                }
                                if !next.contains(&to) {
                                    next.push(to);
                                }
                            }
                        }
                        at = next;
                    }
                    for to in at {
                        if !reached.contains(&to) {
                            if reached.len() == MAX_REACHED {
                                return Ok(false);
                            }
                            reached.push(to);
                        }
                    }
                }
            }
        }
        Ok(true)
    }
}

/// Most outer sets [`SetWalker::keeps_alive`] explores before it gives up
/// (and the walk takes the whole trie).
const MAX_REACHED: usize = 64;

impl Walker for SetWalker<'_, '_> {
    fn push(&mut self, byte: u8) -> Result<bool, MatchError> {
        let from = self.frames.last().map_or(UNKNOWN, |f| f.0);
        if from == UNKNOWN {
            if !self.inner.push(byte)? {
                return Ok(false);
            }
            let id = match self.inner.chart.outer_states() {
                Some(states) => self.dfa.intern(states, self.inner.chart.outer_end()),
                None => UNKNOWN,
            };
            self.frames.push((id, 1));
            return Ok(true);
        }
        match self.dfa.next(&mut self.inner, from, byte)? {
            DEAD => Ok(false),
            to if to & OPEN == 0 => {
                self.frames.push((to, 0));
                Ok(true)
            }
            to => {
                self.dfa.open_on(self.inner.chart, from);
                let (items, end) = &self.dfa.open[(to & !OPEN) as usize];
                self.inner.chart.push_relative(items.iter().copied(), *end);
                self.frames.push((UNKNOWN, 2));
                Ok(true)
            }
        }
    }

    fn pop(&mut self) {
        if let Some((_, opened)) = self.frames.pop() {
            for _ in 0..opened {
                self.inner.chart.pop();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether the group after the first byte of `text` keeps alive on
    /// every string of JSON string characters.
    fn keeps_alive_after(src: &str, text: &[u8]) -> bool {
        let g = Grammar::new(src, 10_000).unwrap();
        let mut chart = Chart::new(&g);
        let mut fuel = usize::MAX;
        for &b in text {
            assert!(chart.push(&g, b, &mut fuel).unwrap());
        }
        let states: Vec<u32> = chart.byte_items(&g).map(|x| x.2).collect();
        let mut dfa = SetDfa::default();
        let mut local = Chart::local();
        let seed = dfa.intern(states, false);
        let mut w = SetWalker { inner: ChartWalker { g: &g, chart: &mut local, fuel, limit: fuel }, dfa: &mut dfa, frames: vec![] };
        w.keeps_alive(seed, &[(' ', '!'), ('#', '['), (']', char::MAX)]).unwrap()
    }

    #[test]
    fn string_bodies_keep_alive() {
        let body = r#"[^"\\\x00-\x1F]"#;
        assert!(keeps_alive_after(&format!(r#"root ::= "\"" {body}* "\"""#), b"\""));
        assert!(keeps_alive_after(&format!(r#"root ::= "\"" {body}* "ab" {body}* "\"""#), b"\"x"));
        assert!(!keeps_alive_after(&format!(r#"root ::= "\"" {body}{{0,30}} "\"""#), b"\""));
        assert!(!keeps_alive_after(r#"root ::= "\"" [a-z]* "\"""#, b"\""));
    }
}
