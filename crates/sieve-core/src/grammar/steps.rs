//! Sets of states stepped without the chart, for the token cache: the
//! states that take a byte, where they lead, the bytes that go alike,
//! a group's shape, and stand-ins.

use super::{mark, ByteRange, Grammar, Kind};
use std::ops::RangeInclusive;

impl Grammar {
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
    /// items, as a token-cache group), written out into `scratch.out`:
    /// states numbered in the order met from `states`, each with its kind
    /// (calls with their rule, ends without theirs) and successors. Two
    /// groups of one shape take every byte string the same way, each to its
    /// own rule's end. False (the shape left incomplete) past [`MAX_SHAPE`]
    /// states.
    pub fn shape(&self, states: &[u32], scratch: &mut ShapeScratch) -> bool {
        let ShapeScratch { index, order, out } = scratch;
        index.resize(self.core.len(), u32::MAX);
        order.clear();
        out.clear();
        out.push(states.len() as u32);
        let number = |s: u32, index: &mut [u32], order: &mut Vec<u32>| {
            let n = &mut index[s as usize];
            if *n == u32::MAX {
                *n = order.len() as u32;
                order.push(s);
            }
            *n
        };
        for &s in states {
            out.push(number(s, index, order));
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
                Kind::Byte { lo, hi } => out.extend_from_slice(&[0, lo as u32, hi as u32]),
                Kind::Ranges { first, end, .. } => {
                    out.extend_from_slice(&[1, end - first]);
                    for r in &self.ranges[first as usize..end as usize] {
                        out.extend_from_slice(&[r.lo as u32, r.hi as u32, r.next.1 - r.next.0]);
                        for &t in self.list(r.next) {
                            out.push(number(t, index, order));
                        }
                    }
                }
                Kind::Call { rule } => out.extend_from_slice(&[2, rule]),
                Kind::Accept { .. } => out.push(3),
            }
            out.push(c.next.1 - c.next.0);
            for &t in self.list(c.next) {
                out.push(number(t, index, order));
            }
            i += 1;
        }
        order.iter().for_each(|&s| index[s as usize] = u32::MAX);
        whole
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

    /// True when one of `states` ends its rule.
    pub fn has_accept(&self, states: &[u32]) -> bool {
        states.iter().any(|&s| matches!(self.core[s as usize].kind, Kind::Accept { .. }))
    }

    /// `states` with each state replaced by the one that stands in for it
    /// for at least `bytes` bytes (an automaton's twin, see
    /// [`gbnf::State::twin`], or a repetition's copy with more left), sorted and
    /// without repeats; `None` when none is. Every string of at most
    /// `bytes` bytes leaves the two groups both alive or both dead, and
    /// ends the rule after it in both or neither: a token cache that only
    /// walks tokens that long may take one group for the other. A string
    /// whose length is bounded so meets few groups rather than one per count.
    ///
    /// [`gbnf::State::twin`]: crate::gbnf::State::twin
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

    /// The fewest bytes that a state standing in for one of `states` stands
    /// in for ([`Grammar::stand_in`] of that many replaces each that has one);
    /// `None` when none has one.
    pub fn stand_in_bound(&self, states: &[u32]) -> Option<u32> {
        if self.stand_ins.is_empty() {
            return None;
        }
        states.iter().filter_map(|s| self.stand_ins.get(s)).map(|t| t.1).min()
    }
}

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

/// Buffers of [`Grammar::shape`], kept between calls: per state, its
/// number or `u32::MAX` (left so); the states in the order numbered; the
/// shape written out.
#[derive(Debug, Default)]
pub struct ShapeScratch {
    index: Vec<u32>,
    order: Vec<u32>,
    /// The last shape written.
    pub out: Vec<u32>,
}

impl ShapeScratch {
    /// Heap bytes held.
    pub fn memory(&self) -> usize {
        (self.index.capacity() + self.order.capacity() + self.out.capacity()) * 4
    }
}

/// Most states [`Grammar::shape`] writes out.
const MAX_SHAPE: usize = 256;
