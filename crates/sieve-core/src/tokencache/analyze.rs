//! The analysis of a group: a walk of the token trie from its set, through
//! the set DFA, that allows whole blocks of the string slice where it can.

use super::characters::{ByteSequence, MANY_CHARACTERS};
use super::dfa::{SetDfa, ASCII_BITS, DEAD};
use super::kills::{candidates, spares};
use super::walker::SetWalker;
use crate::error::MatchError;
use crate::grammar::{Chart, ChartWalker, FollowSets, Grammar};
use crate::hash::FastMap;
use crate::trie::{byte_bit, Slice, Walker};
use crate::vocab::Vocabulary;

/// What [`analyze`] finds: the tokens allowed, those that die after the
/// rule could end at some depth (`(token, depth)`), and the subtrees of
/// the string slice's `rest` it left to the analysis of a set that every
/// character of the slice leads back to (`(node, set)`).
pub(super) struct Walked {
    pub(super) allowed: Box<[u32]>,
    pub(super) pending: Vec<(u32, u32)>,
    pub(super) cuts: Vec<(u32, u32)>,
}

/// The FOLLOW set of a rule (the bytes that may come right after it ends),
/// computed when first asked: most walks end no rule part-way through a
/// token, and a rule called from hundreds of places takes a while.
pub(super) struct Follow<'a> {
    pub(super) sets: &'a mut FollowSets,
    pub(super) rule: u32,
    pub(super) set: Option<[u64; 4]>,
}

impl Follow<'_> {
    pub(super) fn get(&mut self, g: &Grammar) -> [u64; 4] {
        *self.set.get_or_insert_with(|| self.sets.of(g, self.rule))
    }

    /// Whether `b` may follow the rule.
    fn has(&mut self, g: &Grammar, b: u8) -> bool {
        self.get(g)[(b / 64) as usize] >> (b % 64) & 1 == 1
    }
}

/// Walks every token from the set of `states` (one rule, caller outside).
/// Tokens alive at their end are allowed; tokens that die after the rule
/// could have ended at depth `k` get the suffix `bytes[k..]` when its first
/// byte is in `follow` (the bytes that may come after the rule's end).
/// With `longer_than` (0: none), it walks only the subtrees of the
/// vocabulary's trie that hold a longer token (some of the shorter tokens
/// may still be decided). `fuel` bounds the Earley items its steps create,
/// and is left with what they did not use, whether the walk ends or fails.
#[allow(clippy::too_many_arguments)]
pub(super) fn analyze(
    g: &Grammar,
    vocab: &Vocabulary,
    dfa: &mut SetDfa,
    chart: &mut Chart,
    slice_seqs: &[ByteSequence],
    lists: &mut CharacterLists,
    states: &[u32],
    longer_than: u32,
    follow: &mut Follow,
    fuel: &mut usize,
    limit: usize,
) -> Result<Walked, MatchError> {
    let seed = dfa.intern(g, states, false);
    let mut walker = SetWalker {
        inner: ChartWalker { g, chart, fuel: *fuel, limit },
        dfa,
        frames: vec![(seed, 0)],
    };
    let walked = walk(&mut walker, vocab, slice_seqs, lists, states, longer_than, follow);
    *fuel = walker.inner.fuel;
    walked
}

/// [`analyze`]'s walk from `walker`'s seed set (its only frame).
fn walk(
    walker: &mut SetWalker,
    vocab: &Vocabulary,
    slice_seqs: &[ByteSequence],
    lists: &mut CharacterLists,
    states: &[u32],
    longer_than: u32,
    follow: &mut Follow,
) -> Result<Walked, MatchError> {
    let g = walker.inner.g;
    let seed = walker.frames[0].0;
    let mut allowed = vec![0u32; vocab.mask_words()].into_boxed_slice();
    // Where every string of the slice's characters keeps the seed set
    // alive, the slice's tokens are allowed (none can die) and only the
    // other tokens are walked. Where those of at most `d` characters do,
    // their tokens are allowed, and the walk takes only the other tokens
    // when no longer one lives (closed), those of more than `SHORT` bytes
    // and the other tokens when `d` is at least `SHORT`, else the whole
    // trie but the subtrees of allowed tokens only.
    let slice = vocab.string_slice();
    // Subtrees of the vocabulary's trie whose tokens are all decided as a
    // block by their characters (see [`Slice::reach`]), or left to another
    // analysis by their length (see [`Slice::deepest`]), are skipped.
    let mut skip: Option<Skip> = None;
    // Where a character of the slice dies at once, the tokens of at most
    // `d` characters without any that die (see [`SetWalker::fewer_characters`])
    // are allowed by subtrees: `(d, the dying bytes as in Slice::bytes)`.
    let mut without: Option<(u8, u128)> = None;
    // Where every character of the slice leads the seed set back to itself
    // (see [`Slice::tails`]), the rest's tails are walked instead: the
    // tokens' splits, added to depths on the tails' trie.
    let mut split: Option<&[u8]> = None;
    // Elsewhere, where the rest is walked, below a node whose path is
    // whole characters of the slice ([`Slice::whole`]) and whose set they
    // all lead back to, its subtree is cut: `(node, set)`, for that set's
    // analysis (of the tails) to decide.
    let mut cuts: Option<Vec<(u32, u32)>> = None;
    // Left the tokens of at most `longer_than` bytes, the walk takes the
    // others' subtrees only; of those, the slice's tokens are decided by
    // their characters where strings of them live up to some number (a
    // string of bounded length: all up to its bound, none past it where
    // it is closed), and only the other tokens are walked.
    let trie = if longer_than > 0 {
        let (d, closed) = walker.alive_depth(seed, slice_seqs, slice.max_chars)?;
        if d > 0 {
            slice.up_to(d, &mut allowed);
        }
        let chars = if closed { Skip::EVERY_CHARS } else { d.min(Skip::EVERY_CHARS.into()) as u8 };
        skip = Some(Skip { bytes: longer_than.min(u32::from(u8::MAX) - 1) as u8, chars });
        vocab.trie()
    } else {
        // Asked of the rule's automaton first, where it is cheaper (the set
        // may still be its own link, which the split below takes).
        let depth = if walker.dfa.living.lives(g, states, slice_seqs) {
            walker.loop_set(slice_seqs).map(|_| (usize::MAX, false))
        } else {
            walker.alive_depth(seed, slice_seqs, slice.max_chars)
        };
        match depth? {
            (d, _) if d >= slice.max_chars => {
                allowed.iter_mut().zip(slice.mask.iter()).for_each(|(a, &m)| *a = m);
                if walker.dfa.links.get(&seed) == Some(&seed) {
                    split = Some(&slice.split);
                    &slice.tails
                } else {
                    cuts = Some(Vec::new());
                    &slice.rest
                }
            }
            (d, closed) if closed || d >= Slice::SHORT => {
                slice.up_to(d, &mut allowed);
                if closed { &slice.rest } else { &slice.long_rest }
            }
            (d, _) if d > 0 => {
                slice.up_to(d, &mut allowed);
                skip = Some(Skip { bytes: 0, chars: d as u8 });
                vocab.trie()
            }
            _ => match walker.fewer_characters(seed, slice_seqs, slice.max_chars)? {
                Some((d, dying)) => {
                    // Few kept ASCII characters make few tokens, cheap to
                    // walk (a key's next letter, a number's digits): not
                    // worth the question.
                    let many = (!dying & ASCII_BITS).count_ones() >= MANY_CHARACTERS;
                    if many && walker.by_characters(seed, slice_seqs, dying, d.into(), slice.max_chars)? {
                        // The slice's tokens go by their characters: those
                        // decided by the list, only the others are walked.
                        lists.write_up_to(slice, dying, d, &mut allowed);
                        skip = Some(Skip { bytes: 0, chars: Skip::EVERY_CHARS });
                    } else {
                        without = Some((d, dying));
                    }
                    vocab.trie()
                }
                None => vocab.trie(),
            },
        }
    };
    let mut ends: Vec<u32> = Vec::new(); // depths where the rule could end, on the current path
    let mut path: Vec<u8> = Vec::new(); // the bytes of the current path
    let mut path_chars: Vec<u32> = Vec::new(); // per byte of the path: the characters begun up to it
    let mut follows = |b: u8| follow.has(g, b);
    let mut pending: Vec<(u32, u32)> = Vec::new(); // (token, depth of the end)
    let mut kept: Vec<u32> = Vec::new();
    let mut depth = 0u32;
    let mut i = 0usize;
    // Below a node of the vocabulary's trie at depth `f`, at a character's
    // end, whose set some characters of the slice keep alive for good
    // (`strays` the others, see [`SetDfa::strays`]), these subtrees are
    // allowed whole: those of strings of such characters (see [`Slice::bytes`]),
    // and where every character of the slice does, those of tokens
    // that are strings of the slice past `f` bytes (see [`Slice::class_from`]).
    let full = std::ptr::eq(trie, vocab.trie());
    let mut free: Vec<Free> = Vec::new();
    // The sets on the path whose kills are known (see `outlived` below),
    // after whole characters: `(depth, list, characters on the path)`.
    let mut spans: Vec<(u32, u32, u32)> = Vec::new();
    // Whether a set of the walk spares some strings (else no set's kills
    // are worth looking up on the way).
    let mut lasting = false;
    // Where the seed's kills are known, the tokens of the slice a string of
    // them may be, by their place in the trie's `tokens`: every other token
    // of the slice keeps the seed alive and is allowed at once, and the walk
    // takes only the subtrees that hold one of these or a token of another
    // slice (the tokens that may hold a killing string are few: a word of a
    // pattern, in the many long tokens of a vocabulary).
    let mut killers: Option<Vec<u64>> = None;
    // The seed's own (a first character that leads into a string's loop).
    if full {
        match walker.strays(slice_seqs)? {
            u128::MAX => {}
            strays => {
                free.push(Free::new(0, strays));
                if strays != 0 && longer_than == 0 {
                    let list = walker.kills(slice_seqs, slice.max_chars)?;
                    lasting |= list.is_some();
                    if let Some(k) = list {
                        // (Where they are many, the kills tell subtrees apart on the way.)
                        if let Some(may) = candidates(&walker.dfa.kill_lists[k as usize], slice) {
                            allowed.iter_mut().zip(slice.mask.iter().zip(may.iter())).for_each(|(a, (&m, &c))| *a |= m & !c);
                            killers = Some(places(&may, slice, trie.tokens.len()));
                        } else {
                            spans.push((0, k, 0));
                        }
                    }
                }
            }
        }
    }
    // The root's children whose byte the seed set may take (found by the
    // ranges its states take, the roots being in byte order): no end is
    // on the path yet, so the others die before anything could be kept.
    let mut roots: Vec<usize> = Vec::new();
    g.byte_ranges(walker.dfa.sets[seed as usize].iter().copied(), |lo, hi| {
        let from = trie.roots.partition_point(|r| r.0 < lo);
        roots.extend(trie.roots[from..].iter().take_while(|r| r.0 <= hi).map(|r| r.1 as usize));
    });
    roots.sort_unstable();
    roots.dedup();
    let mut roots = roots.into_iter();
    let mut root_end = 0;
    let result = loop {
        if i >= root_end {
            let Some(r) = roots.next() else { break Ok(()) };
            i = r;
        }
        let Some(node) = trie.nodes.get(i) else { break Ok(()) };
        if node.depth == 1 {
            root_end = node.end as usize;
        }
        // Tokens allowed as a block already, or left to another analysis:
        // nothing below needs the walk (the stacks catch up at the next
        // node walked).
        // (Or allowed already: of the slice and past the seed's kills, see `killers`.)
        if skip.is_some_and(|k| slice.deepest[i] <= k.bytes || slice.reach[i] <= k.chars)
            || killers.as_deref().is_some_and(|at| slice.reach[i] != u8::MAX && !any_in(at, trie.subtree_range(i)))
        {
            i = node.end as usize;
            continue;
        }
        while free.last().is_some_and(|f| node.depth <= f.depth) {
            free.pop();
        }
        while spans.last().is_some_and(|s| node.depth <= s.0) {
            spans.pop();
        }
        if depth >= node.depth {
            while depth >= node.depth {
                walker.pop();
                depth -= 1;
            }
            while ends.last().is_some_and(|&d| d > depth) {
                ends.pop();
            }
            path.truncate(depth as usize);
            path_chars.truncate(depth as usize);
            for f in &mut free {
                if f.stray_at > depth {
                    f.stray_at = u32::MAX;
                }
            }
        }
        // Most bytes kill most sets: skip them before any other work
        // where no end on the path could keep a suffix of their tokens
        // (as below, where a push fails).
        let known = walker.known(node.byte);
        if known == DEAD && !ends.iter().any(|&k| follows(path.get(k as usize).copied().unwrap_or(node.byte))) {
            i = node.end as usize;
            continue;
        }
        // (Entries are only pushed on the vocabulary's trie, whose nodes
        // the slice's arrays describe.)
        let whole = |f: &Free| {
            let from = slice.class_from[i];
            (f.strays & slice.class_bits == 0 && from < u8::MAX && from as u32 <= f.depth)
                || (f.stray_at == u32::MAX && slice.reach[i] != u8::MAX && slice.bytes[i] & f.strays == 0)
        };
        // (Whether none of the path's bytes is dying is asked last: the
        // subtree's own bytes rule out most.)
        let surely_lives = |(d, dying): (u8, u128)| {
            slice.reach[i] <= d && slice.bytes[i] & dying == 0 && path.iter().all(|&b| byte_bit(b) & dying == 0)
        };
        // Below a set on the path whose kills are known, a subtree is
        // allowed whole where no string of the characters its tokens hold
        // past that set, no longer than they are, may kill it (in a string
        // that only some sequences of characters kill: long tokens' last
        // bytes, and the tokens without the characters of such a sequence).
        let outlived = || {
            slice.reach[i] != u8::MAX
                && node.byte & 0xC0 != 0x80
                && spans.last().is_some_and(|&(at, list, chars)| {
                    let marks = path[at as usize..].iter().fold(slice.bytes[i], |m, &b| m | byte_bit(b));
                    spares(&walker.dfa.kill_lists[list as usize], marks, u32::from(slice.reach[i]).saturating_sub(chars))
                })
        };
        if free.iter().any(whole) || without.is_some_and(surely_lives) || outlived() {
            for &t in trie.subtree_tokens(i) {
                allowed[(t / 32) as usize] |= 1 << (t % 32);
            }
            i = node.end as usize;
            continue;
        }
        match walker.push_known(node.byte, known) {
            Ok(true) => {
                if let Some(cuts) = cuts.as_mut()
                    && slice.whole[i]
                    && ends.is_empty()
                {
                    match walker.loop_set(slice_seqs) {
                        Ok(Some(set)) => {
                            cuts.push((i as u32, set));
                            walker.pop();
                            i = node.end as usize;
                            continue;
                        }
                        Ok(None) => {}
                        Err(e) => break Err(e),
                    }
                }
                // Below a set that whitespace keeps as it is, runs of it live.
                if full && slice.blank_below[i] && node.end as usize - i > 1 {
                    match walker.blank_loop() {
                        Ok(true) => {
                            for &t in trie.subtree_tokens(i) {
                                allowed[(t / 32) as usize] |= 1 << (t % 32);
                            }
                            walker.pop();
                            i = node.end as usize;
                            continue;
                        }
                        Ok(false) => {}
                        Err(e) => break Err(e),
                    }
                }
                depth += 1;
                path.push(node.byte);
                path_chars.push(path_chars.last().copied().unwrap_or(0) + u32::from(node.byte & 0xC0 != 0x80));
                let bit = byte_bit(node.byte);
                for f in &mut free {
                    if f.stray_at == u32::MAX && f.strays & bit != 0 {
                        f.stray_at = depth;
                    }
                }
                for &t in &trie.tokens[node.tok_start as usize..node.tok_end as usize] {
                    allowed[(t / 32) as usize] |= 1 << (t % 32);
                }
                if walker.outer_end() {
                    ends.push(depth);
                }
                // Below a set that refuses every byte of the string slice's
                // tokens, where no rule could end on the way, the longer
                // tokens of a subtree of such tokens all die (a string of
                // bounded length at its end, a key's name once written).
                if full && walker.refuses_slice() && ends.is_empty() && slice.reach[i] != u8::MAX && node.end as usize - i > 1 {
                    i = node.end as usize;
                    continue;
                }
                // Worth its cost (a transition per byte class) above large
                // subtrees only, and not past the seed's kills (the walk
                // takes few subtrees of the slice's tokens there); once known
                // for the set, below any. (A set past a cut character takes
                // no character's first byte: `f` ends a character.)
                if full && node.end as usize - i > 1 {
                    let large = node.end as usize - i > FREE_MIN_NODES && killers.is_none();
                    let strays = if large { walker.strays(slice_seqs).map(Some) } else { Ok(walker.known_strays()) };
                    // A set that some characters keep alive for good and
                    // others (strays) may kill, after a few: its lifespan
                    // allows the subtrees short enough (elsewhere it is
                    // not worth its exploration: a string of bounded length
                    // lives as long as its bound, or dies at once; nor is
                    // it where the walk takes only the tokens longer than
                    // `longer_than`, for which a few characters are too few).
                    let some_stray = matches!(strays, Ok(Some(s)) if s != 0 && s != u128::MAX);
                    match strays {
                        Ok(None | Some(u128::MAX)) => {}
                        // One above with fewer strays, and none on the path
                        // since, allows every subtree this one would.
                        Ok(Some(strays))
                            if free.last().is_some_and(|f| {
                                f.stray_at == u32::MAX && f.strays & !strays == 0 && strays & slice.class_bits != 0
                            }) => {}
                        Ok(Some(strays)) => free.push(Free::new(depth, strays)),
                        Err(e) => break Err(e),
                    }
                    if some_stray && longer_than == 0 && spans.is_empty() && killers.is_none() && node.end as usize - i > FREE_MIN_NODES {
                        match walker.kills(slice_seqs, slice.max_chars) {
                            Ok(list) => lasting |= list.is_some(),
                            Err(e) => break Err(e),
                        }
                    }
                }
                // (Only after an ASCII byte, where a character surely ends:
                // kills are of strings of whole characters.)
                if lasting
                    && node.byte < 0x80
                    && let Some(list) = walker.known_kills()
                {
                    spans.push((depth, list, path_chars.last().copied().unwrap_or(0)));
                }
                i += 1;
            }
            Ok(false) => {
                // Ends whose next byte (on the path, or this node's) may follow the rule.
                let next = |k: u32| path.get(k as usize).copied().unwrap_or(node.byte);
                kept.clear();
                kept.extend(ends.iter().copied().filter(|&k| follows(next(k))));
                if !kept.is_empty() {
                    for &t in trie.subtree_tokens(i) {
                        let at = split.map_or(0, |s| s[t as usize] as u32);
                        pending.extend(kept.iter().map(|&k| (t, at + k)));
                    }
                }
                i = node.end as usize;
            }
            Err(e) => break Err(e),
        }
    };
    result?;
    Ok(Walked { allowed, pending, cuts: cuts.unwrap_or_default() })
}

/// The places in the vocabulary trie's `tokens` (of `len`) of the tokens
/// of mask `tokens`, as a bitmask.
fn places(tokens: &[u32], slice: &Slice, len: usize) -> Vec<u64> {
    let mut at = vec![0u64; len.div_ceil(64)];
    for (w, &bits) in tokens.iter().enumerate() {
        let mut bits = bits;
        while bits != 0 {
            let p = slice.positions[w * 32 + bits.trailing_zeros() as usize] as usize;
            at[p / 64] |= 1 << (p % 64);
            bits &= bits - 1;
        }
    }
    at
}

/// Whether a bit of `bits` lies in `range`.
fn any_in(bits: &[u64], range: std::ops::Range<usize>) -> bool {
    let (from, to) = (range.start, range.end);
    if from >= to {
        return false;
    }
    let (first, last) = (from / 64, (to - 1) / 64);
    let word = |w: usize| {
        let lo = if w == first { !0u64 << (from % 64) } else { !0 };
        let hi = if w == last { !0u64 >> (63 - (to - 1) % 64) } else { !0 };
        bits[w] & lo & hi != 0
    };
    (first..=last).any(word)
}

/// Per set of dying characters (a pattern's class leaves them out), the
/// slice's tokens without them, for sets where such tokens live by their
/// characters alone ([`SetWalker::by_characters`]): made once per set,
/// used at each count of a bounded string of the class; and the heap bytes
/// they hold.
#[derive(Debug, Default)]
pub(super) struct CharacterLists {
    lists: FastMap<u128, Box<[u32]>>,
    bytes: usize,
}

impl CharacterLists {
    /// Writes into `mask` (empty) the slice's tokens of at most `chars`
    /// characters without one that `dying` marks.
    pub(super) fn write_up_to(&mut self, slice: &Slice, dying: u128, chars: u8, mask: &mut [u32]) {
        let bytes = &mut self.bytes;
        let without = self.lists.entry(dying).or_insert_with(|| {
            *bytes += slice.mask.len() * 4;
            slice.without(dying)
        });
        slice.up_to(chars.into(), mask);
        mask.iter_mut().zip(without.iter()).for_each(|(m, &w)| *m &= w);
    }

    /// Heap bytes held.
    pub(super) fn memory(&self) -> usize {
        self.bytes
    }
}

/// The subtrees of the vocabulary's trie an analysis's walk skips: those
/// whose tokens have at most `bytes` bytes ([`Slice::deepest`]), or are all
/// of the slice with at most `chars` characters ([`Slice::reach`]).
#[derive(Clone, Copy)]
struct Skip {
    bytes: u8,
    chars: u8,
}

impl Skip {
    /// `chars` that takes every subtree of only the slice's tokens.
    const EVERY_CHARS: u8 = u8::MAX - 1;
}

/// A set on the walk's path that some characters of the slice keep alive
/// for good: below it, the subtrees of strings of those characters are
/// allowed whole while no other (a stray) is on the path since.
struct Free {
    /// The depth of its node.
    depth: u32,
    /// The other characters, as [`Slice::bytes`] marks them.
    strays: u128,
    /// The depth of the first stray byte on the path below it
    /// (`u32::MAX`: none yet).
    stray_at: u32,
}

impl Free {
    fn new(depth: u32, strays: u128) -> Free {
        Free { depth, strays, stray_at: u32::MAX }
    }
}

/// Fewest nodes below a node of the vocabulary's trie for which an
/// analysis's walk looks for characters that lead its set back to itself
/// (every node in tests, whose vocabularies are small). Looking costs a
/// transition per byte class of every set the closure meets, more than
/// a subtree of a few hundred nodes takes to walk.
const FREE_MIN_NODES: usize = if cfg!(test) { 0 } else { 1024 };
