//! What kills a set: the characters of the strings of the slice that kill
//! it, and how many a string needs, so that a walk may allow the subtrees
//! of tokens that lack some of them whole.

use super::characters::ByteSequence;
use super::dfa::{SetDfa, OPEN, UNKNOWN};
use super::walker::SetWalker;
use crate::error::MatchError;
use crate::hash::FastMap;
use std::collections::hash_map::Entry;

/// A class of strings of the slice that may kill a set: those of at least
/// `chars` characters with, among their characters' marks (as
/// [`Slice::bytes`] gives them), all of `all` and one of each of `any`
/// (the marks of the bytes of a class of the grammar that the strings
/// take at a character's start: one class of one byte is one mark). None
/// needed: any string of that many may.
///
/// [`Slice::bytes`]: crate::trie::Slice::bytes
#[derive(Debug)]
pub(super) struct Kill {
    chars: u32,
    all: u128,
    any: Box<[u128]>,
}

impl Kill {
    /// Whether a string of at most `chars` characters whose characters
    /// have only the marks `marks` may be of this class.
    fn may(&self, marks: u128, chars: u32) -> bool {
        self.chars <= chars && self.all & !marks == 0 && self.any.iter().all(|&m| m & marks != 0)
    }
}

/// Whether no string of at most `chars` characters with only the marks
/// `marks` is of one of the classes `kills`: all such strings keep the set alive.
pub(super) fn spares(kills: &[Kill], marks: u128, chars: u32) -> bool {
    !kills.iter().any(|k| k.may(marks, chars))
}

impl SetDfa {
    /// Set `id`'s entry of [`SetDfa::kills`], once computed.
    fn kills_of(&self, id: u32) -> Option<u32> {
        self.kills[(id >> 31) as usize].get((id & !OPEN) as usize).copied().flatten()
    }
}

/// A set of the byte classes a string takes at its characters' starts,
/// by their representative bytes (see [`ByteSequence::bytes`]).
type Classes = [u64; 4];

/// `c` and the class of `b`.
fn with(c: &Classes, b: u8) -> Classes {
    let mut c = *c;
    c[(b / 64) as usize] |= 1 << (b % 64);
    c
}

/// Whether every class of `a` is one of `b`.
fn within(a: &Classes, b: &Classes) -> bool {
    a.iter().zip(b).all(|(a, b)| a & !b == 0)
}

impl SetWalker<'_, '_> {
    /// The classes of strings of the slice's characters (`seqs`) that may
    /// kill the newest set (see [`Kill`]), computed once per set and kept
    /// in [`SetDfa::kills`]: its index there, `None` where every string of
    /// one character may (none is worth asking then). Found by exploring
    /// the sets the strings reach with the classes they took, a character
    /// at a time, where a string that takes no class the others to the
    /// same set did not is left out (whatever follows it follows one of
    /// those), and every string that dies or leaves the DFA is a class of
    /// its own. Past [`MAX_KILL_WORK`], or [`MAX_WAYS`] to one set, the
    /// strings of more characters than explored may all kill (the set's
    /// lifespan would take a walk of its own, as long as the kills'). Strings
    /// of more than `max_chars` (the slice's longest token) do not count.
    ///
    /// [`SetDfa::kills`]: super::dfa::SetDfa::kills
    pub(super) fn kills(&mut self, seqs: &[ByteSequence], max_chars: usize) -> Result<Option<u32>, MatchError> {
        let Some(&(id, _)) = self.frames.last() else { return Ok(None) };
        if id == UNKNOWN {
            return Ok(None);
        }
        if let Some(k) = self.dfa.kills_of(id) {
            return Ok((k != SPARES_NONE).then_some(k));
        }
        let mut found: Vec<(Classes, u32)> = Vec::new();
        let mut seen: FastMap<u32, Vec<Classes>> = FastMap::default();
        seen.insert(id, vec![[0; 4]]);
        let (mut level, mut next, mut after) = (vec![(id, [0u64; 4])], Vec::new(), Vec::new());
        // Per set met: per character of the slice (by its first byte),
        // the sets it leads to, `targets[start..end]` (none where it dies).
        let mut moves: FastMap<u32, Vec<(u8, u32, u32)>> = FastMap::default();
        let mut targets: Vec<u32> = Vec::new();
        // Subset tests and steps taken (`MAX_KILL_WORK` at most, give or take a set's).
        let mut work = 0;
        // The characters of the strings explored: every kill of as many is found.
        let mut chars = 0;
        // `None` when every kill is found, else `n`: every string of more
        // than `n` characters may kill.
        let unknown_past = 'explore: loop {
            // (Where a character kills, the strays tell the subtrees apart:
            // none is worth asking here.)
            if chars == 1 && !found.is_empty() {
                found.clear();
                break Some(0);
            }
            if level.is_empty() || chars >= max_chars {
                break None;
            }
            next.clear();
            for &(from, ref took) in &level {
                if work > MAX_KILL_WORK {
                    break 'explore Some(chars);
                }
                if let Entry::Vacant(entry) = moves.entry(from) {
                    let mut list = Vec::new();
                    for seq in seqs {
                        for &b in &seq.bytes[0] {
                            work += 1;
                            let start = targets.len() as u32;
                            match self.dfa.after_char(&mut self.inner, from, b, &seq.bytes[1..], &mut after)? {
                                None => list.push((b, start, start)),
                                Some(_) => {
                                    targets.extend_from_slice(&after);
                                    list.push((b, start, targets.len() as u32));
                                }
                            }
                        }
                    }
                    entry.insert(list);
                }
                for &(b, start, end) in &moves[&from] {
                    let took = with(took, b);
                    work += 1 + found.len();
                    if found.iter().any(|(k, _)| within(k, &took)) {
                        continue;
                    }
                    if start == end {
                        found.push((took, chars as u32 + 1));
                        continue;
                    }
                    for &to in &targets[start as usize..end as usize] {
                        let known = seen.entry(to).or_default();
                        work += known.len();
                        if !known.iter().any(|k| within(k, &took)) {
                            // (Those it dominates were explored; none is worth a test since.)
                            known.retain(|k| !within(&took, k));
                            known.push(took);
                            if known.len() > MAX_WAYS {
                                break 'explore Some(chars);
                            }
                            next.push((to, took));
                        }
                    }
                }
            }
            std::mem::swap(&mut level, &mut next);
            chars += 1;
        };
        // Per representative first byte: the marks of the bytes it stands for.
        // (None should be without one: then any byte may be it.)
        let mut marks = [u128::MAX; 256];
        for seq in seqs {
            for (&b, &m) in seq.bytes[0].iter().zip(&seq.bits) {
                marks[b as usize] = if m == 0 { u128::MAX } else { m };
            }
        }
        let mut kills: Vec<Kill> = found
            .iter()
            .map(|(took, chars)| {
                let needs = (0..=255u8).filter(|&b| took[(b / 64) as usize] >> (b % 64) & 1 == 1).map(|b| marks[b as usize]);
                let (one, any): (Vec<u128>, Vec<u128>) = needs.partition(|m| m.count_ones() == 1);
                Kill { chars: *chars, all: one.iter().fold(0, |a, m| a | m), any: any.into() }
            })
            .collect();
        if let Some(n) = unknown_past {
            kills.push(Kill { chars: n.saturating_add(1).min(u32::MAX as usize) as u32, all: 0, any: Box::new([]) });
        }
        // (A string of one character, any, may kill.)
        let spares = unknown_past != Some(0);
        let list = if spares { self.dfa.kill_lists.len() as u32 } else { SPARES_NONE };
        if spares {
            self.dfa.bytes += kills.iter().map(|k| 48 + 16 * k.any.len()).sum::<usize>();
            self.dfa.kill_lists.push(kills.into_boxed_slice());
        }
        let (known, i) = (&mut self.dfa.kills[(id >> 31) as usize], (id & !OPEN) as usize);
        if i >= known.len() {
            self.dfa.bytes += 4 * (i + 1 - known.len());
            known.resize(i + 1, None);
        }
        known[i] = Some(list);
        Ok(spares.then_some(list))
    }

    /// [`SetWalker::kills`] when already computed for the newest set and
    /// some string spared.
    pub(super) fn known_kills(&self) -> Option<u32> {
        match self.frames.last() {
            Some(&(id, _)) if id != UNKNOWN => self.dfa.kills_of(id).filter(|&k| k != SPARES_NONE),
            _ => None,
        }
    }
}

/// In [`SetDfa::kills`]: a set whose kills spare no string.
///
/// [`SetDfa::kills`]: super::dfa::SetDfa::kills
const SPARES_NONE: u32 = u32::MAX;

/// Most ways (sets of classes, none within another) [`SetWalker::kills`]
/// reaches one set by: where many characters lead alike, one of any of
/// them may kill, which few subtrees' characters rule out, and the ways
/// multiply with each character.
const MAX_WAYS: usize = 16;

/// Most work [`SetWalker::kills`] does (steps and subset tests).
const MAX_KILL_WORK: usize = 1 << 16;
