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

/// Analyses per group of states, for one grammar and one vocabulary.
#[derive(Debug, Default)]
pub(crate) struct TokenCache {
    groups: HashMap<Box<[u32]>, Arc<Analysis>>,
    bytes: usize,
}

impl TokenCache {
    /// Approximate heap bytes held.
    pub fn memory(&self) -> usize {
        self.bytes
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
                    let a = Arc::new(analyze(g, vocab, &states, fuel, limit)?);
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

/// Walks every token through a chart seeded with `states` (one rule, caller
/// outside). Tokens alive at their end are allowed; tokens that die after
/// the rule could have ended at depth `k` get the suffix `bytes[k..]`.
fn analyze(g: &Grammar, vocab: &Vocabulary, states: &[u32], fuel: &mut usize, limit: usize) -> Result<Analysis, MatchError> {
    let trie = vocab.trie();
    let mut allowed = vec![0u32; vocab.mask_words()].into_boxed_slice();
    let mut chart = Chart::local(g, states);
    let mut walker = MemoWalker {
        inner: ChartWalker { g, chart: &mut chart, fuel: *fuel, limit },
        configs: HashMap::new(),
        trans: Vec::new(),
        results: Vec::new(),
        stack: Vec::new(),
    };
    let top = walker.config_of_top();
    walker.stack.push(top);
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
                if walker.inner.chart.outer_end() {
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


const UNKNOWN: u32 = u32::MAX;
const DEAD: u32 = u32::MAX - 1;

/// A chart walker that remembers, for sets whose items all come from the
/// seed rule (origin `OUTER`), the set each byte leads to. Inside a string
/// or a number almost every set is such a set, so most steps of an analysis
/// become a table lookup and a copy instead of an Earley step.
/// A remembered set: items as `(state, origin is the set itself)`, whether
/// the seed rule ended there, and the config of that set.
type Memo = (Vec<(u32, bool)>, bool, u32);

struct MemoWalker<'a> {
    inner: ChartWalker<'a>,
    configs: HashMap<Vec<u32>, u32>,
    /// 256 result ids per config (`UNKNOWN`, `DEAD` or an index into `results`).
    trans: Vec<u32>,
    /// Set contents (relative origins), end flag, and the config of the set.
    results: Vec<Memo>,
    /// Config id of each set on the chart (`UNKNOWN` when not all `OUTER`).
    stack: Vec<u32>,
}

impl MemoWalker<'_> {
    fn config_of_top(&mut self) -> u32 {
        match self.inner.chart.outer_states() {
            Some(states) => {
                let next = self.configs.len() as u32;
                let id = *self.configs.entry(states).or_insert(next);
                if id == next {
                    self.trans.extend(std::iter::repeat_n(UNKNOWN, 256));
                }
                id
            }
            None => UNKNOWN,
        }
    }
}

impl Walker for MemoWalker<'_> {
    fn push(&mut self, byte: u8) -> Result<bool, MatchError> {
        let config = *self.stack.last().unwrap_or(&UNKNOWN);
        if config != UNKNOWN {
            match self.trans[config as usize * 256 + byte as usize] {
                UNKNOWN => {}
                DEAD => return Ok(false),
                r => {
                    let (items, end, next_config) = &self.results[r as usize];
                    self.inner.chart.push_relative(items, *end);
                    self.stack.push(*next_config);
                    return Ok(true);
                }
            }
        }
        if !self.inner.push(byte)? {
            if config != UNKNOWN {
                self.trans[config as usize * 256 + byte as usize] = DEAD;
            }
            return Ok(false);
        }
        let next_config = self.config_of_top();
        if config != UNKNOWN
            && let Some((items, end)) = self.inner.chart.relative_set()
        {
            self.trans[config as usize * 256 + byte as usize] = self.results.len() as u32;
            self.results.push((items, end, next_config));
        }
        self.stack.push(next_config);
        Ok(true)
    }

    fn pop(&mut self) {
        self.stack.pop();
        self.inner.pop();
    }
}
