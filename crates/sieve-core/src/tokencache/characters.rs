//! Walks by the string slice's characters rather than bytes: how far
//! strings of them keep a set alive, which of them die, and the UTF-8
//! sequences those walks follow.

use super::dfa::{ASCII_BITS, CHART, DEAD};
use super::walker::SetWalker;
use crate::error::MatchError;
use crate::grammar::Grammar;
use crate::hash::{FastMap, FastSet};

impl SetWalker<'_, '_> {
    /// How far every string of the characters of `seqs` (a class as
    /// [`byte_sequences`]) keeps set `id` alive: every such string of at
    /// most the returned number `d` of characters, and every byte prefix of
    /// one, takes each byte through DFA sets (`usize::MAX`: every string
    /// does). Also whether it is closed there: no character of the class may
    /// follow where `d` of them end, and the rule ends nowhere before, so
    /// no string with more of them lives, in the rule or after it. Explores
    /// the sets such strings reach level by level, up to `max_chars` levels
    /// and [`MAX_REACHED`] sets. `seqs` is the whole slice (for the links).
    pub(super) fn alive_depth(&mut self, id: u32, seqs: &[ByteSequence], max_chars: usize) -> Result<(usize, bool), MatchError> {
        // The sets met, with the level where they were first met.
        let mut seen: FastMap<u32, usize> = FastMap::default();
        seen.insert(id, 0);
        // No set met on two levels and no rule end so far (else not closed).
        let mut simple = !self.dfa.end(id);
        let (mut level, mut reached) = (vec![id], Vec::new());
        let (mut at, mut next) = (Vec::new(), Vec::new());
        let mut depth = 0;
        while !level.is_empty() {
            if depth == max_chars {
                return Ok((depth, false));
            }
            if let [from] = level[..]
                && let Some(&to) = self.dfa.links.get(&from)
            {
                level.clear();
                match meet(&mut seen, &mut simple, to, depth + 1) {
                    None => return Ok((depth, false)),
                    Some(true) => level.push(to),
                    Some(false) => {}
                }
                depth += 1;
                continue;
            }
            reached.clear();
            // Whether a character's first byte lived, or died, at this level;
            // whether a rule ended at it; the one set its characters lead to.
            let (mut lived, mut died, mut ended) = (false, false, false);
            let mut succ: Option<Option<u32>> = None;
            for &from in &level {
                for seq in seqs {
                    at.clear();
                    at.push(from);
                    for (k, bytes) in seq.bytes.iter().enumerate() {
                        next.clear();
                        for &s in &at {
                            for &b in bytes {
                                let to = self.dfa.next(&mut self.inner, s, b)?;
                                if to == DEAD && k == 0 {
                                    died = true;
                                    continue;
                                }
                                if to == DEAD || to == CHART {
                                    return Ok((depth, false));
                                }
                                lived |= k == 0;
                                ended |= self.dfa.end(to);
                                if !next.contains(&to) {
                                    next.push(to);
                                }
                            }
                        }
                        std::mem::swap(&mut at, &mut next);
                    }
                    if died && lived {
                        return Ok((depth, false));
                    }
                    for &to in &at {
                        succ = match succ {
                            None => Some(Some(to)),
                            Some(Some(t)) if t == to => Some(Some(t)),
                            _ => Some(None),
                        };
                        match meet(&mut seen, &mut simple, to, depth + 1) {
                            None => return Ok((depth, false)),
                            Some(true) => reached.push(to),
                            Some(false) => {}
                        }
                    }
                }
            }
            simple &= !ended;
            if died {
                return Ok((depth, simple));
            }
            if let ([from], Some(Some(to)), false) = (&level[..], succ, ended) {
                self.dfa.bytes += 16;
                self.dfa.links.insert(*from, to);
            }
            std::mem::swap(&mut level, &mut reached);
            depth += 1;
        }
        Ok((usize::MAX, false))
    }

    /// Where some characters of the slice die right after set `id`: how far
    /// every string of the others keeps it alive, and the bits of the dying
    /// ones as [`Slice::bytes`] marks them: the characters that live at
    /// once, less each that leads to a set where a kept character dies (a
    /// pattern's `@` that lives only as the `.` of `.gov`), for good or, when
    /// they too die at last, up to the deepest level explored (a bounded
    /// string; a hostname's label of at most 63 letters, once the `.` and `-`
    /// that may not come twice in a row are dropped). Explores the sets
    /// such strings reach level by level, up to `max_chars` levels and
    /// [`MAX_FEWER`] sets; the depth is at least one character, at most
    /// `u8::MAX - 1`. `None` when no string of them lives.
    ///
    /// [`Slice::bytes`]: crate::trie::Slice::bytes
    pub(super) fn fewer_characters(&mut self, id: u32, seqs: &[ByteSequence], max_chars: usize) -> Result<Option<(u8, u128)>, MatchError> {
        // Per sequence, per first byte: still kept.
        let mut kept: Vec<Vec<bool>> = seqs.iter().map(|seq| vec![true; seq.bits.len()]).collect();
        let mut dying = 0u128;
        // Whether a kept character died past the first level yet.
        let mut bounded = false;
        // Per set met and not yet explored: the characters leading to it.
        let mut entered: FastMap<u32, Vec<(usize, usize)>> = FastMap::default();
        // Sets explored, and whether a kept character died there.
        let mut explored: FastMap<u32, bool> = FastMap::default();
        // The answer at the start of the deepest level explored: the
        // characters kept then live for that many (a string of bounded
        // length, whose characters all die at its end).
        let mut deepest: Option<(usize, u128)> = None;
        let (mut level, mut reached, mut after) = (vec![id], Vec::new(), Vec::new());
        let mut depth = 0;
        let lasting = 'explore: loop {
            if level.is_empty() {
                break max_chars;
            }
            if depth == max_chars {
                break depth;
            }
            deepest = Some((depth, dying));
            reached.clear();
            for &from in &level {
                let entries = entered.remove(&from).unwrap_or_default();
                if from != id && !entries.iter().any(|&(k, j)| kept[k][j]) {
                    continue;
                }
                explored.insert(from, false);
                // The kept characters that die here (past the first set, one
                // is enough), and where the others lead.
                let (mut died, mut lead) = (Vec::new(), Vec::new());
                'check: for (k, seq) in seqs.iter().enumerate() {
                    for (j, &b) in seq.bytes[0].iter().enumerate() {
                        if !kept[k][j] {
                            continue;
                        }
                        match self.dfa.after_char(&mut self.inner, from, b, &seq.bytes[1..], &mut after)? {
                            Some(_) => lead.extend(after.iter().map(|&to| (k, j, to))),
                            None if from == id => died.push((k, j)),
                            None => {
                                died.push((k, j));
                                break 'check;
                            }
                        }
                    }
                }
                if !died.is_empty() && depth > 0 && !bounded {
                    bounded = true;
                    // Few ASCII characters make few tokens, cheap to walk
                    // (a number's digits): not worth exploring further.
                    if (!dying & ASCII_BITS).count_ones() < MANY_CHARACTERS {
                        break 'explore 0;
                    }
                }
                // Past the first set, the characters that led here go instead.
                let bad = !died.is_empty() && from != id;
                let gone = if bad { &entries } else { &died };
                for &(k, j) in gone {
                    kept[k][j] = false;
                    dying |= seqs[k].bits[j];
                }
                if bad {
                    explored.insert(from, true);
                    continue;
                }
                for (k, j, to) in lead {
                    match explored.get(&to) {
                        // Into a set where a character died: this one goes.
                        Some(true) => {
                            kept[k][j] = false;
                            dying |= seqs[k].bits[j];
                        }
                        Some(false) => {}
                        None => {
                            if !entered.contains_key(&to) {
                                if entered.len() + explored.len() >= MAX_FEWER {
                                    break 'explore depth;
                                }
                                reached.push(to);
                            }
                            entered.entry(to).or_default().push((k, j));
                        }
                    }
                }
            }
            if !kept.iter().flatten().any(|&k| k) {
                break 0;
            }
            std::mem::swap(&mut level, &mut reached);
            depth += 1;
        };
        let lasting = kept.iter().flatten().any(|&k| k).then_some((lasting, dying));
        // The deepest, and of two as deep the one with fewer dying.
        let best = [deepest, lasting].into_iter().flatten().max_by_key(|&(d, dying)| (d, u32::MAX - dying.count_ones()));
        // Below `u8::MAX`, which [`Slice::reach`] gives subtrees with a token
        // out of the slice.
        Ok(best.filter(|b| b.0 > 0).map(|(d, dying)| (d.min(u8::MAX as usize - 1) as u8, dying)))
    }

    /// Whether the slice's tokens go from set `id` by their characters
    /// alone, as [`SetWalker::fewer_characters`] found them (`dying`, as
    /// [`Slice::bytes`] marks them, and `d`): from each set that at most `d`
    /// of the other characters lead to, every dying character dies at its
    /// first byte, every other one leads through DFA sets where the rule
    /// does not end, and, where `d` is below `max_chars`, every character
    /// dies at its first byte past `d` of them. Then a token of the slice
    /// lives exactly when it holds no dying character and at most `d`
    /// characters, and none ends the rule on the way (an end at `id`
    /// itself is the callers' items, in groups of their own). Explores at
    /// most [`MAX_BY_CHARACTERS`] sets.
    ///
    /// [`Slice::bytes`]: crate::trie::Slice::bytes
    pub(super) fn by_characters(&mut self, id: u32, seqs: &[ByteSequence], dying: u128, d: usize, max_chars: usize) -> Result<bool, MatchError> {
        let lasting = d >= max_chars;
        // Sets met: where characters live for good, each is explored once.
        let mut seen: FastSet<u32> = FastSet::default();
        let (mut level, mut next, mut after) = (vec![id], Vec::new(), Vec::new());
        let mut explored = 0;
        for depth in 0.. {
            if level.is_empty() {
                break;
            }
            let closing = !lasting && depth == d;
            next.clear();
            for &from in &level {
                explored += 1;
                if explored > MAX_BY_CHARACTERS {
                    return Ok(false);
                }
                for seq in seqs {
                    for (j, &b) in seq.bytes[0].iter().enumerate() {
                        if closing || seq.bits[j] & dying != 0 {
                            if self.dfa.next(&mut self.inner, from, b)? != DEAD {
                                return Ok(false);
                            }
                            continue;
                        }
                        if self.dfa.after_char(&mut self.inner, from, b, &seq.bytes[1..], &mut after)? != Some(false) {
                            return Ok(false);
                        }
                        for &to in &after {
                            if !next.contains(&to) && (!lasting || seen.insert(to)) {
                                next.push(to);
                            }
                        }
                    }
                }
            }
            if closing {
                break;
            }
            std::mem::swap(&mut level, &mut next);
        }
        Ok(true)
    }
}

/// Records set `to` as met on `level` in [`SetWalker::alive_depth`]:
/// `Some(true)` when it is new (to explore next), `Some(false)` when it was
/// met before (and `simple` turns false if on another level), `None` when
/// more than [`MAX_REACHED`] sets have been met.
fn meet(seen: &mut FastMap<u32, usize>, simple: &mut bool, to: u32, level: usize) -> Option<bool> {
    let known = seen.len();
    if *seen.entry(to).or_insert(level) != level {
        *simple = false;
        return Some(false);
    }
    if seen.len() == known {
        return Some(false);
    }
    (seen.len() <= MAX_REACHED).then_some(true)
}

/// One UTF-8 sequence of a character class.
#[derive(Debug)]
pub(super) struct ByteSequence {
    /// Per byte: one byte of each byte class of the grammar in its range
    /// (the others go the same way).
    pub(super) bytes: Vec<Vec<u8>>,
    /// Per first byte: the bits of the first bytes it stands for, as
    /// [`Slice::bytes`] marks them.
    ///
    /// [`Slice::bytes`]: crate::trie::Slice::bytes
    pub(super) bits: Vec<u128>,
}

/// The UTF-8 sequences of the characters of `class`, for the walks that
/// follow characters rather than bytes ([`SetWalker::alive_depth`],
/// [`SetWalker::fewer_characters`], [`SetDfa::strays`]).
///
/// [`SetDfa::strays`]: super::dfa::SetDfa::strays
pub(super) fn byte_sequences(g: &Grammar, class: &[(char, char)]) -> Vec<ByteSequence> {
    class
        .iter()
        .flat_map(|&(lo, hi)| regex_syntax::utf8::Utf8Sequences::new(lo, hi))
        .map(|seq| {
            let reps = |r: &regex_syntax::utf8::Utf8Range| -> Vec<u8> {
                (r.start..=r.end).filter(|&b| b == r.start || g.class(b) != g.class(b - 1)).collect()
            };
            let bytes: Vec<Vec<u8>> = seq.as_slice().iter().map(reps).collect();
            let last = seq.as_slice()[0].end;
            let firsts = &bytes[0];
            let bits = (0..firsts.len())
                .map(|k| {
                    let end = firsts.get(k + 1).map_or(last, |&b| b - 1);
                    (firsts[k]..=end).fold(0, |m, b| m | crate::trie::byte_bit(b))
                })
                .collect();
            ByteSequence { bytes, bits }
        })
        .collect()
}

/// Most outer sets [`SetWalker::alive_depth`] explores before it stops
/// (and the walk takes more of the trie).
const MAX_REACHED: usize = 256;

/// Most sets [`SetWalker::fewer_characters`] explores. Every kept
/// character is tried from each, where a pattern's product with a length
/// bound holds a dozen sets per level; the few tokens longer than the
/// levels explored within it are walked.
const MAX_FEWER: usize = 128;

/// Fewest ASCII characters kept alive whose tokens are worth exploring
/// further than walking them ([`SetWalker::fewer_characters`]) or asking
/// whether they go by their characters ([`SetWalker::by_characters`]).
pub(super) const MANY_CHARACTERS: u32 = 32;

/// Most sets [`SetWalker::by_characters`] explores (a string of bounded
/// length holds one per level).
const MAX_BY_CHARACTERS: usize = 512;
