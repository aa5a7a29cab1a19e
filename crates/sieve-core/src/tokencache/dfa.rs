//! The lazily built DFA over outer and open sets: sets interned, their
//! transitions computed by an Earley step once per class of bytes, and the
//! characters that lead a set back into itself.

use super::characters::{ByteSequence, MANY_CHARACTERS};
use crate::error::MatchError;
use crate::grammar::{Chart, ChartWalker, Grammar, Origin};
use crate::trie::Walker;
use crate::hash::{FastMap, FastSet};
use super::kills::Kill;
use super::living::Living;

/// No DFA set (in a walker frame) or not yet computed (in a transition).
pub(super) const UNKNOWN: u32 = u32::MAX;
pub(super) const DEAD: u32 = u32::MAX - 1;
/// A transition to a set that is neither an outer nor an open set: it is
/// taken by an Earley step on the chart.
pub(super) const CHART: u32 = u32::MAX - 2;
/// Tag of an open set's id (index into `open`).
pub(super) const OPEN: u32 = 1 << 31;

/// The lazily built DFA over outer and open sets (see the module docs).
#[derive(Debug, Default)]
pub(super) struct SetDfa {
    ids: FastMap<Box<[u32]>, u32>,
    /// Per outer set: its states.
    pub(super) sets: Vec<Box<[u32]>>,
    /// Per outer set, then per open set: whether the outer rule ended there.
    ends: [Vec<bool>; 2],
    /// Per outer set, then per open set: per byte class (every byte of a
    /// class goes the same way), `UNKNOWN`, `DEAD`, `CHART`, an outer set,
    /// or `OPEN | i`; a row of `width` per set.
    trans: [Rows; 2],
    /// Open sets: sets whose items belong to rules called from outside,
    /// in the set itself, or in one open set without an anchor (the set's
    /// anchor). What follows them depends on nothing else either, so they
    /// are DFA states too.
    open: Vec<OpenSet>,
    /// Open set ids by anchor and items.
    open_ids: FastMap<(u32, OpenItems), u32>,
    /// The grammar's number of byte classes: the length of a set's row.
    width: usize,
    /// Per set from which every character of the string slice lives and
    /// leads to one same set, ending no rule on the way: that set (a chain
    /// link of [`SetWalker::alive_depth`], which takes it in one lookup).
    ///
    /// [`SetWalker::alive_depth`]: super::walker::SetWalker::alive_depth
    pub(super) links: FastMap<u32, u32>,
    /// Outer sets checked by [`SetWalker::loop_set`].
    ///
    /// [`SetWalker::loop_set`]: super::walker::SetWalker::loop_set
    pub(super) looped: FastSet<u32>,
    /// What [`Living::lives`] learnt of the grammar's successor lists.
    pub(super) living: Living,
    /// Per outer set and per open set: its [`SetDfa::strays`] for the
    /// string slice, once computed.
    pub(super) strays: [Vec<Option<u128>>; 2],
    /// Per outer set and per open set: its [`SetWalker::kills`], once
    /// computed, as an index into `kill_lists` (`u32::MAX` where they
    /// spare no string).
    ///
    /// [`SetWalker::kills`]: super::walker::SetWalker::kills
    pub(super) kills: [Vec<Option<u32>>; 2],
    /// The lists of [`SetDfa::kills`].
    pub(super) kill_lists: Vec<Box<[Kill]>>,
    /// Approximate heap bytes held.
    pub(super) bytes: usize,
    /// Scratch for the states after a byte ([`SetDfa::next`]).
    scratch: Vec<u32>,
    /// The vocabulary's longest token, in bytes: no walk takes more, so
    /// a set may hold the states that stand in for its own for that long
    /// ([`Grammar::stand_in`]). 0 (none does) until the first analysis.
    pub(super) horizon: u32,
    /// The bytes of the string slice's tokens (the ASCII bytes of its
    /// characters, and every byte from 0x80) as a 256-bit set, set up with
    /// [`SetDfa::horizon`].
    pub(super) slice_bytes: [u64; 4],
    /// Per outer set, then per open set: whether it takes none of those
    /// bytes (its tokens die on their next byte).
    pub(super) refuses: [Vec<bool>; 2],
}

/// Rows of transitions, in chunks of [`CHUNK_ROWS`] rows: a DFA of tens
/// of thousands of sets grows a chunk at a time, where a doubling vector
/// would copy megabytes into fresh memory within one mask.
#[derive(Debug, Default)]
struct Rows {
    chunks: Vec<Vec<u32>>,
}

/// Rows per chunk of [`Rows`].
const CHUNK_ROWS: usize = 64;

impl Rows {
    /// Adds a row of `width` transitions.
    fn push(&mut self, width: usize, row: impl Iterator<Item = u32>) {
        match self.chunks.last_mut() {
            Some(chunk) if chunk.len() < CHUNK_ROWS * width => chunk.extend(row),
            _ => {
                let mut chunk = Vec::with_capacity(CHUNK_ROWS * width);
                chunk.extend(row);
                self.chunks.push(chunk);
            }
        }
    }

    /// Row `i`.
    fn row(&mut self, width: usize, i: usize) -> &mut [u32] {
        &mut self.chunks[i / CHUNK_ROWS][i % CHUNK_ROWS * width..][..width]
    }

    /// Transition `k` of row `i`.
    #[inline]
    fn get(&self, width: usize, i: usize, k: usize) -> u32 {
        self.chunks[i / CHUNK_ROWS][i % CHUNK_ROWS * width + k]
    }
}

/// Most sets of a closure in [`SetDfa::strays`].
const MAX_CLOSURE: usize = 8;

/// The bits of ASCII characters in [`Slice::bytes`] (the others mark
/// non-ASCII first bytes).
///
/// [`Slice::bytes`]: crate::trie::Slice::bytes
pub(super) const ASCII_BITS: u128 = !0xFFFF_FFFF;

/// An open set's items as `(state, origin)` ([`Origin::Below`]: its anchor).
type OpenItems = Box<[(u32, Origin)]>;

/// An open set: its items and its anchor (`NO_ANCHOR` when none).
type OpenSet = (OpenItems, u32);

const NO_ANCHOR: u32 = u32::MAX;

impl SetDfa {
    pub(super) fn intern(&mut self, g: &Grammar, states: &[u32], end: bool) -> u32 {
        let stand_in = if self.horizon > 0 { g.stand_in(states, self.horizon) } else { None };
        let states = stand_in.as_deref().unwrap_or(states);
        // Most sets are met again: look them up without a copy.
        if let Some(&id) = self.ids.get(states) {
            return id;
        }
        let id = self.sets.len() as u32;
        self.ids.insert(states.into(), id);
        self.width = g.class_count();
        self.bytes += self.width * 4 + 32 + states.len() * 8 + 64;
        self.sets.push(states.into());
        self.ends[0].push(end);
        self.add_row(g, id, states.iter().copied());
        id
    }

    /// The id (`OPEN | i`) of the open set of `items`, `end` flag and
    /// `anchor`.
    fn intern_open(&mut self, g: &Grammar, items: Vec<(u32, Origin)>, end: bool, anchor: u32) -> u32 {
        let next = self.open.len() as u32;
        let id = *self.open_ids.entry((anchor, items.clone().into_boxed_slice())).or_insert(next);
        if id == next {
            self.width = g.class_count();
            self.bytes += self.width * 4 + 32 + items.len() * 16 + 64;
            self.add_row(g, OPEN | id, items.iter().map(|x| x.0));
            self.open.push((items.into_boxed_slice(), anchor));
            self.ends[1].push(end);
        }
        OPEN | id
    }

    /// Adds the row of new set `id`, whose items have `states`: `UNKNOWN`
    /// on the bytes some of them take ([`Grammar::byte_ranges`]; classes
    /// never straddle a range's border), `DEAD` on the others; and whether
    /// it takes no byte of the string slice's tokens.
    fn add_row(&mut self, g: &Grammar, id: u32, states: impl IntoIterator<Item = u32>) {
        let trans = &mut self.trans[(id >> 31) as usize];
        trans.push(self.width, std::iter::repeat_n(DEAD, self.width));
        let row = trans.row(self.width, (id & !OPEN) as usize);
        let (slice, mut refuses) = (&self.slice_bytes, true);
        g.byte_ranges(states, |lo, hi| {
            row[g.class(lo) as usize..=g.class(hi) as usize].fill(UNKNOWN);
            refuses &= !(lo..=hi).any(|b| slice[(b / 64) as usize] >> (b % 64) & 1 == 1);
        });
        self.refuses[(id >> 31) as usize].push(refuses);
    }

    pub(super) fn memory(&self) -> usize {
        self.bytes + self.living.memory()
    }

    /// The bytes whose characters may not keep set `id` alive, as
    /// [`Slice::bytes`] marks them: every bit but those of the characters of
    /// `seqs` (a class as [`byte_sequences`]) that lead every set of a
    /// closure of `id` back into it through DFA sets. Every string of the
    /// others lives from the set. Of two closures, the one keeping more
    /// ASCII characters: `id` alone (a string's loop), or up to
    /// [`MAX_CLOSURE`] sets (a first character that leads into the loop).
    /// Computed once per set, and only where the set takes the first bytes
    /// of [`MANY_CHARACTERS`] ASCII characters (else every bit: the tokens
    /// of a few, a key's first letters or a number's digits, are few, and
    /// the walk takes them quickly), or in tests, whose vocabularies are small.
    ///
    /// [`Slice::bytes`]: crate::trie::Slice::bytes
    /// [`byte_sequences`]: super::characters::byte_sequences
    pub(super) fn strays(&mut self, w: &mut ChartWalker, id: u32, seqs: &[ByteSequence]) -> Result<u128, MatchError> {
        let (known, i) = (&mut self.strays[(id >> 31) as usize], (id & !OPEN) as usize);
        if i >= known.len() {
            self.bytes += (i + 1 - known.len()) * std::mem::size_of::<Option<u128>>();
            known.resize(i + 1, None);
        }
        if let Some(strays) = known[i] {
            return Ok(strays);
        }
        let slice = &self.slice_bytes;
        let taken = (b' '..0x80).filter(|&b| slice[(b / 64) as usize] >> (b % 64) & 1 == 1 && self.known(id, w.g.class(b)) != DEAD).count();
        if taken < MANY_CHARACTERS as usize && !cfg!(test) {
            self.strays[(id >> 31) as usize][i] = Some(u128::MAX);
            return Ok(u128::MAX);
        }
        let alone = self.closure_strays(w, id, seqs, 1)?;
        let wider = self.closure_strays(w, id, seqs, MAX_CLOSURE)?;
        let strays = if (wider & ASCII_BITS).count_ones() < (alone & ASCII_BITS).count_ones() { wider } else { alone };
        self.strays[(id >> 31) as usize][i] = Some(strays);
        Ok(strays)
    }

    /// [`SetDfa::strays`] for a closure of at most `max_sets` sets: keeps
    /// the characters that take every set reached from `id` by kept
    /// characters to sets so reached, dropping one whenever it dies, leaves
    /// the DFA or would reach a set past the bound, until none is dropped.
    fn closure_strays(&mut self, w: &mut ChartWalker, id: u32, seqs: &[ByteSequence], max_sets: usize) -> Result<u128, MatchError> {
        // Per sequence, per first byte: still kept.
        let mut kept: Vec<Vec<bool>> = seqs.iter().map(|seq| vec![true; seq.bits.len()]).collect();
        let (mut sets, mut after) = (Vec::new(), Vec::new());
        loop {
            sets.clear();
            sets.push(id);
            let mut dropped = false;
            let mut k = 0;
            while k < sets.len() {
                for (seq, kept) in seqs.iter().zip(kept.iter_mut()) {
                    for (&b, kept) in seq.bytes[0].iter().zip(kept.iter_mut()) {
                        if !*kept {
                            continue;
                        }
                        let lives = self.after_char(w, sets[k], b, &seq.bytes[1..], &mut after)?.is_some();
                        let inside = lives && after.iter().all(|&to| {
                            let known = sets.contains(&to);
                            if !known && sets.len() < max_sets {
                                sets.push(to);
                            }
                            known || sets.last() == Some(&to)
                        });
                        if !inside {
                            *kept = false;
                            dropped = true;
                        }
                    }
                }
                k += 1;
            }
            if !dropped {
                break;
            }
        }
        // (First bytes share bits: a bit is kept when all its bytes are.)
        let (mut back, mut away) = (0u128, 0u128);
        for (seq, kept) in seqs.iter().zip(&kept) {
            for (&bits, &kept) in seq.bits.iter().zip(kept) {
                match kept {
                    true => back |= bits,
                    false => away |= bits,
                }
            }
        }
        Ok(!back | away)
    }

    /// The sets that the characters of a sequence starting with byte
    /// `first` (then `rest`, as [`ByteSequence::bytes`]) lead set `from` to,
    /// in `after`, and whether the outer rule ends in a set on the way
    /// (theirs included); `None` when one of them dies or leaves the DFA.
    pub(super) fn after_char(&mut self, w: &mut ChartWalker, from: u32, first: u8, rest: &[Vec<u8>], after: &mut Vec<u32>) -> Result<Option<bool>, MatchError> {
        after.clear();
        let to = self.next(w, from, first)?;
        if to == DEAD || to == CHART {
            return Ok(None);
        }
        let mut ended = self.end(to);
        after.push(to);
        let mut next = Vec::new();
        for bytes in rest {
            next.clear();
            for &s in after.iter() {
                for &b in bytes {
                    let to = self.next(w, s, b)?;
                    if to == DEAD || to == CHART {
                        return Ok(None);
                    }
                    ended |= self.end(to);
                    if !next.contains(&to) {
                        next.push(to);
                    }
                }
            }
            std::mem::swap(after, &mut next);
        }
        Ok(Some(ended))
    }

    /// The transitions of set `id` (outer or open).
    fn row(&mut self, id: u32) -> &mut [u32] {
        self.trans[(id >> 31) as usize].row(self.width, (id & !OPEN) as usize)
    }

    /// The known transition of set `id` (outer or open) on `class`:
    /// `UNKNOWN` until computed, `DEAD` from the start on the bytes none of
    /// its items take.
    #[inline]
    pub(super) fn known(&self, id: u32, class: u8) -> u32 {
        self.trans[(id >> 31) as usize].get(self.width, (id & !OPEN) as usize, class as usize)
    }

    /// True when the outer rule ended in set `id`.
    pub(super) fn end(&self, id: u32) -> bool {
        self.ends[(id >> 31) as usize][(id & !OPEN) as usize]
    }

    /// Opens set `id` (outer or open) on the chart, on its anchor if it
    /// has one; returns how many sets it opened.
    pub(super) fn open_on(&self, chart: &mut Chart, id: u32) -> u8 {
        if id & OPEN == 0 {
            let states = &self.sets[id as usize];
            chart.push_relative(states.iter().map(|&s| (s, Origin::Outer)), self.end(id));
            return 1;
        }
        let (items, anchor) = &self.open[(id & !OPEN) as usize];
        let below = if *anchor == NO_ANCHOR { 0 } else { self.open_on(chart, *anchor) };
        chart.push_relative(items.iter().copied(), self.end(id));
        below + 1
    }

    /// The open set without an anchor that a set reached from `from` may
    /// take as its anchor: `from` itself, or its anchor.
    fn anchor_of(&self, from: u32) -> u32 {
        match self.open.get((from & !OPEN) as usize) {
            Some(&(_, anchor)) if from & OPEN != 0 && anchor != NO_ANCHOR => anchor,
            _ if from & OPEN != 0 => from,
            _ => NO_ANCHOR,
        }
    }

    /// The transition of set `from` on `byte` (`DEAD`, `CHART`, an outer
    /// set or an open set), computed the first time a byte of its class is
    /// taken (for every class of the bytes the set takes alike).
    #[inline]
    pub(super) fn next(&mut self, w: &mut ChartWalker, from: u32, byte: u8) -> Result<u32, MatchError> {
        match self.known(from, w.g.class(byte)) {
            UNKNOWN => self.compute(w, from, byte),
            known => Ok(known),
        }
    }

    /// [`SetDfa::next`] the first time: directly from an outer set when
    /// the successors call no rule, else by an Earley step.
    #[inline(never)]
    fn compute(&mut self, w: &mut ChartWalker, from: u32, byte: u8) -> Result<u32, MatchError> {
        let mut states = std::mem::take(&mut self.scratch);
        // Every class of the bytes the set's states take alike goes the same way.
        let (scanned, alike) = match from & OPEN {
            0 => w.g.scan_outer(&self.sets[from as usize], byte, &mut states),
            _ => (false, w.g.alike(self.open[(from & !OPEN) as usize].0.iter().map(|x| x.0), byte)),
        };
        let to = match scanned {
            true if states.is_empty() => DEAD,
            true => {
                let end = w.g.has_accept(&states);
                self.intern(w.g, &states, end)
            }
            false => self.step(w, from, byte)?,
        };
        self.scratch = states;
        // The classes of those bytes: a run of them (classes are runs of bytes).
        let (first, last) = (w.g.class(*alike.start()), w.g.class(*alike.end()));
        self.row(from)[first as usize..=last as usize].fill(to);
        Ok(to)
    }

    /// The transition of set `from` on `byte` by an Earley step on `w`'s
    /// chart (for steps that call rules). The chart is left as it was.
    fn step(&mut self, w: &mut ChartWalker, from: u32, byte: u8) -> Result<u32, MatchError> {
        let opened = self.open_on(w.chart, from);
        // The anchor is the lowest set opened (`from` or its anchor).
        let anchor = self.anchor_of(from);
        let below = (anchor != NO_ANCHOR).then(|| (w.chart.bytes() + 1 - opened as usize, anchor));
        let to = match w.push(byte) {
            Ok(true) => {
                let to = self.classify(w.g, w.chart, below);
                w.chart.pop();
                Ok(to)
            }
            Ok(false) => Ok(DEAD),
            Err(e) => Err(e),
        };
        for _ in 0..opened {
            w.chart.pop();
        }
        to
    }

    /// The id of the chart's newest set: an outer set, an open set (whose
    /// anchor may be `anchor`: its place on the chart and its id), or
    /// `CHART` when it is neither.
    pub(super) fn classify(&mut self, g: &Grammar, chart: &Chart, anchor: Option<(usize, u32)>) -> u32 {
        match chart.outer_states() {
            Some(states) => self.intern(g, &states, chart.outer_end()),
            None => match chart.relative_set(anchor.map(|a| a.0)) {
                Some((items, end)) => {
                    let anchored = items.iter().any(|x| x.1 == Origin::Below);
                    self.intern_open(g, items, end, anchor.filter(|_| anchored).map_or(NO_ANCHOR, |a| a.1))
                }
                None => CHART,
            },
        }
    }
}
