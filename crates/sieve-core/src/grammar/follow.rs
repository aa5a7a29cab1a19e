//! FIRST and FOLLOW sets over bytes, per rule, computed when first asked.

use super::{mark, Grammar, Kind};
use crate::hash::FastSet;

impl Grammar {
    /// Adds to `set` the bytes a string derived from `list` may start with
    /// before any call, and to `calls` the rules it may call first (their
    /// first bytes belong to it too); true when `list` may reach its rule's
    /// end without a byte. The states in `seen` are skipped, and those met
    /// are added (one walk may span several lists). `lists` is scratch.
    fn first_of(&self, list: (u32, u32), set: &mut [u64; 4], calls: &mut Vec<u32>, seen: &mut FastSet<u32>, lists: &mut Vec<(u32, u32)>) -> bool {
        let mut end = false;
        lists.clear();
        lists.push(list);
        while let Some(list) = lists.pop() {
            for &s in self.list(list) {
                if !seen.insert(s) {
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
        let n = self.rules.len();
        FollowSets { first: vec![None; n], direct: vec![None; n], follow: vec![None; n], seen: FastSet::default() }
    }

    /// The call states that call `rule`.
    fn callers(&self, rule: u32) -> &[u32] {
        let at = &self.calls.at;
        match (at.get(rule as usize), at.get(rule as usize + 1)) {
            (Some(&a), Some(&b)) => &self.calls.states[a as usize..b as usize],
            _ => &[],
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
    /// Per rule, its FIRST set (once computed).
    first: Vec<Option<[u64; 4]>>,
    /// Per rule, its [`FollowSets::direct`] sets (once computed).
    direct: Vec<Option<Direct>>,
    follow: Vec<Option<[u64; 4]>>,
    /// Scratch: the states a walk of [`Grammar::first_of`] met.
    seen: FastSet<u32>,
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
        self.seen.clear();
        let (mut set, mut enders, mut calls, mut lists) = ([0u64; 4], Vec::new(), Vec::new(), Vec::new());
        for &s in g.callers(rule) {
            let c = g.core[s as usize];
            if g.first_of(c.next, &mut set, &mut calls, &mut self.seen, &mut lists) {
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
        self.seen.clear();
        while let Some(r) = todo.pop() {
            calls.clear();
            g.first_of(g.rules[r as usize].start, &mut set, &mut calls, &mut self.seen, &mut lists);
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
