//! What kills a set: the characters of the strings of the slice that kill
//! it, and how many a string needs, so that a walk may allow the subtrees
//! of tokens that lack some of them whole.

use super::characters::ByteSequence;
use super::dfa::{SetDfa, OPEN, UNKNOWN};
use super::walker::SetWalker;
use crate::error::MatchError;
use crate::hash::FastMap;
use crate::trie::{marks, Slice};
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

/// The tokens of `slice` that a string of one of `kills` may be (a token
/// whose own characters [`Kill::may`] be of a class), as a mask over the
/// vocabulary: from a set with these kills, every other token of the
/// slice keeps it alive. `None` where they are not few (a kill needs no
/// character, or they are more than half the vocabulary), or past
/// [`MAX_WAYS`] kills (a pass over the vocabulary's mask each). (A few
/// more than exactly those where a class has many marks: see
/// [`MAX_ANY_MARKS`].)
pub(super) fn candidates(kills: &[Kill], slice: &Slice) -> Option<Box<[u32]>> {
    if kills.len() > MAX_WAYS || kills.iter().any(|k| k.all == 0 && !k.any.iter().any(|g| g.count_ones() <= MAX_ANY_MARKS)) {
        return None;
    }
    let words = slice.mask.len();
    let (mut out, mut short, mut short_of) = (vec![0u32; words], vec![0u32; words], None);
    for k in kills {
        // The slice's tokens of fewer characters than `k.chars` (kept for the next kill).
        let fewer = k.chars.saturating_sub(1) as usize;
        if short_of != Some(fewer) {
            slice.up_to(fewer, &mut short);
            short_of = Some(fewer);
        }
        // Rarest mark first: most words of the mask are left without a
        // token after it.
        let mut needs: Vec<usize> = marks(k.all).collect();
        needs.sort_by_key(|&m| slice.marked_counts[m]);
        let needs: Vec<&[u32]> = needs.into_iter().map(|m| &slice.marked[m][..]).collect();
        let groups: Vec<u128> = k.any.iter().copied().filter(|g| g.count_ones() <= MAX_ANY_MARKS).collect();
        for w in 0..words {
            let mut c = slice.mask[w] & !short[w];
            for m in &needs {
                if c == 0 {
                    break;
                }
                c &= m[w];
            }
            for &group in &groups {
                if c == 0 {
                    break;
                }
                c &= marks(group).fold(0, |a, m| a | slice.marked[m][w]);
            }
            out[w] |= c;
        }
    }
    let count: usize = out.iter().map(|w| w.count_ones() as usize).sum();
    (count <= words * 16).then(|| out.into_boxed_slice())
}

/// Most marks of one of a kill's `any` classes that [`candidates`] asks
/// for: a class of many characters rules out few tokens, and each mark
/// costs a read of its mask at every word still holding a token.
const MAX_ANY_MARKS: u32 = 8;

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

#[cfg(test)]
mod tests {
    use super::{candidates, Kill};
    use crate::trie::{byte_bit, Slice, TokenTrie};

    /// The tokens [`candidates`] picks out are exactly those whose own
    /// characters may be of a kill's class ([`Kill::may`]), for random
    /// kills over a vocabulary of random strings.
    #[test]
    fn candidates_are_the_tokens_kills_may_be() {
        let mut rng = crate::rng::Rng::new(5);
        let letters = ["a", "b", "c", "d", "\"", "é", "ü"];
        let tokens: Vec<Option<Box<[u8]>>> = (0..300)
            .map(|_| Some((0..1 + rng.below(6)).flat_map(|_| letters[rng.below(letters.len())].bytes()).collect()))
            .collect();
        let slice = Slice::string_body(&tokens, &TokenTrie::new(&tokens));
        let marks: Vec<u128> = ["a", "b", "c", "d", "é", "ü"].iter().map(|l| byte_bit(l.as_bytes()[0])).collect();
        let mut tested = 0;
        for _ in 0..200 {
            let pick = |rng: &mut crate::rng::Rng| (0..rng.below(3)).fold(0, |m, _| m | marks[rng.below(marks.len())]);
            let kills: Vec<Kill> = (0..1 + rng.below(3))
                .map(|_| {
                    let any: Vec<u128> = (0..rng.below(2)).map(|_| pick(&mut rng) | marks[rng.below(marks.len())]).collect();
                    Kill { chars: 1 + rng.below(5) as u32, all: pick(&mut rng), any: any.into() }
                })
                .collect();
            let Some(may) = candidates(&kills, &slice) else { continue };
            tested += 1;
            for (t, bytes) in tokens.iter().enumerate() {
                let bytes = bytes.as_deref().unwrap_or_default();
                let own = bytes.iter().fold(0, |m, &b| m | byte_bit(b));
                let chars = bytes.iter().filter(|&&b| b & 0xC0 != 0x80).count() as u32;
                let in_slice = slice.mask[t / 32] >> (t % 32) & 1 == 1;
                let expected = in_slice && kills.iter().any(|k| k.may(own, chars));
                assert_eq!(may[t / 32] >> (t % 32) & 1 == 1, expected, "token {:?}, kills {kills:?}", String::from_utf8_lossy(bytes));
            }
        }
        assert!(tested > 50, "only {tested} lists of kills were few enough");
    }
}
