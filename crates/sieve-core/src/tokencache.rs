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
//! either decided locally or checked against the full parse. Groups of one
//! shape (the same automaton reachable from their states, in rules that
//! the same bytes may follow, or whose walks never ended the rule: a string
//! value inlined into each of several members) share one analysis.
//!
//! The walks share a lazily built DFA over outer sets (sets whose items all
//! belong to rules called from outside the local chart) and open sets
//! (whose other items belong to rules called in the set itself: after a
//! digit, the member that may follow the number is predicted; or called in
//! one open set below: the inside of that member, or of a called block of a
//! long string): what follows such a set depends on nothing else, so each
//! of its byte transitions is computed by an Earley step once and looked up
//! afterwards. Inside a string or a number nearly every set is one of them,
//! so a walk costs about one table lookup per trie node. Transitions are
//! computed once per run of bytes the set's states take alike; the bytes
//! none of them takes are refused from the start. No walk takes more bytes
//! than the vocabulary's longest token, so a state may stand in for another
//! that takes every string that long alike ([`Grammar::stand_in`]): the
//! states of a patterned string of bounded length, far from its bound,
//! make the same sets at every count.
//!
//! Inside a string body most of the vocabulary is allowed, and walking it
//! all is what costs. When every string of JSON string characters keeps the
//! group's set alive (checked on the rule's automaton where each byte
//! leads to one successor list, as a key past many declared names does,
//! else on the DFA), the vocabulary's string slice
//! (tokens made of such characters) is allowed as a block and only the other
//! tokens are walked; when only strings up to some length surely do (a
//! string of bounded length), the slice's short tokens are. When some
//! characters die at once (a pattern refusing `.`), the tokens without them
//! that surely live are allowed by whole subtrees of the trie. Where a
//! walk of the whole trie reaches a set that some characters lead back to
//! (a key past the declared names, a pattern's `[^-]*`), the subtrees of
//! tokens whose rest is made of them are allowed whole too. Where a walk of
//! the slice's other tokens reaches, past whole characters, a set that every
//! character leads back to (a key past the declared names, once off their
//! prefixes), the tokens below go where their tails do from that set: its
//! own analysis, a walk of the shared trie of tails, decides them. Below a
//! set that every whitespace byte leads back to (between JSON tokens), the
//! subtrees of whitespace runs are allowed whole. Below a set that takes no
//! byte of the slice's tokens (a bounded string at its end), the longer
//! tokens of a subtree of them are refused whole.
//!
//! A token that dies after its rule could have ended is kept for the
//! mask-time walk only when the byte after that end may follow the rule
//! somewhere in the grammar (its FOLLOW set, computed when a walk first
//! asks): inside a string, only the closing quote can end it, not every
//! character before.

use crate::error::MatchError;
use crate::grammar::{Chart, ChartWalker, FollowSets, Grammar, Origin};
use crate::trie::{byte_bit, Slice, TokenTrie, Walker, BLANKS};
use crate::vocab::Vocabulary;
use crate::hash::{FastMap, FastSet};
use std::sync::Arc;

/// What a group of states decides on its own.
#[derive(Debug)]
pub(crate) struct Analysis {
    /// Tokens allowed whatever the context.
    allowed: Tokens,
    /// For tokens that may end the rule part-way: the bytes left after each
    /// place it may end, in a trie whose tokens are the owners of the suffixes.
    suffixes: TokenTrie,
    /// The FOLLOW set of the rule that the walk asked for (to keep the
    /// suffixes whose first byte may follow), if it asked: a group of the
    /// same shape in another rule shares the analysis only with the same.
    follow: Option<[u64; 4]>,
}

/// Analyses per group of states, for one grammar and one vocabulary, and
/// the DFA their walks share.
#[derive(Debug, Default)]
pub(crate) struct TokenCache {
    groups: FastMap<Box<[u32]>, Arc<Analysis>>,
    /// The same analyses by the shape of the group ([`Grammar::shape`]):
    /// groups of one shape in different rules (a string in each of several
    /// members) share one where the bytes that may follow their rules are
    /// the same, or the walk never asked ([`Analysis::follow`]).
    shapes: FastMap<Box<[u32]>, Vec<Arc<Analysis>>>,
    dfa: SetDfa,
    /// Per rule, the bytes that may follow its end (set up on first use).
    follow: Option<FollowSets>,
    /// The vocabulary's string-slice characters as [`byte_sequences`] for
    /// this grammar (computed on first use).
    slice_seqs: Vec<ByteSequence>,
    /// The local chart of the analyses, kept between them: it grows a
    /// mark per automaton state it meets, once.
    local: Option<Chart>,
    /// Scratch of [`Grammar::shape`].
    shape_index: Vec<u32>,
    bytes: usize,
}

impl TokenCache {
    /// Approximate heap bytes held.
    pub fn memory(&self) -> usize {
        self.bytes + self.dfa.memory() + self.local.as_ref().map_or(0, Chart::memory) + self.shape_index.len() * 4
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
            let a = self.analysis(g, vocab, rule, states, fuel, limit)?;
            a.allowed.add_to(mask);
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

    /// The analysis of the group of `states` of `rule`: cached, shared with
    /// a group of the same shape, or made.
    fn analysis(&mut self, g: &Grammar, vocab: &Vocabulary, rule: u32, states: Vec<u32>, fuel: &mut usize, limit: usize) -> Result<Arc<Analysis>, MatchError> {
        if self.slice_seqs.is_empty() {
            self.slice_seqs = byte_sequences(g, vocab.string_slice().class);
            self.dfa.horizon = vocab.trie().longest;
            let bits = vocab.string_slice().class_bits;
            for b in (b' '..=255).filter(|&b| b >= 0x80 || byte_bit(b) & bits != 0) {
                self.dfa.slice_bytes[(b / 64) as usize] |= 1 << (b % 64);
            }
        }
        let states = g.stand_in(&states, self.dfa.horizon).unwrap_or(states);
        if let Some(a) = self.groups.get(states.as_slice()) {
            return Ok(a.clone());
        }
        let mut follow = Follow { sets: self.follow.get_or_insert_with(|| g.follow_sets()), rule, set: None };
        let shape = g.shape(&states, &mut self.shape_index).map(Vec::into_boxed_slice);
        let shared = shape.as_ref().and_then(|k| self.shapes.get(k)).and_then(|same| {
            same.iter().find(|a| a.follow.is_none_or(|f| f == follow.get(g))).cloned()
        });
        let a = match shared {
            Some(a) => a,
            None => {
                let local = self.local.get_or_insert_with(Chart::local);
                let walked = analyze(g, vocab, &mut self.dfa, local, &self.slice_seqs, &states, &mut follow, fuel, limit);
                let mut asked = follow.set;
                // A failed walk may leave sets open.
                if local.bytes() != 0 {
                    self.local = None;
                }
                let Walked { mut allowed, mut pending, mut cuts } = walked?;
                // Each cut subtree's tokens go where their tails do from its
                // set: that set's analysis (of the tails) says.
                cuts.sort_unstable_by_key(|c| c.1);
                let rest = &vocab.string_slice().rest;
                let mut below = if cuts.is_empty() { Vec::new() } else { vec![0u32; allowed.len()] };
                for run in cuts.chunk_by(|a, b| a.1 == b.1) {
                    let states = self.dfa.sets[run[0].1 as usize].to_vec();
                    let tails = self.analysis(g, vocab, rule, states, fuel, limit)?;
                    below.fill(0);
                    for &t in run.iter().flat_map(|c| rest.subtree_tokens(c.0 as usize)) {
                        let (w, bit) = ((t / 32) as usize, 1 << (t % 32));
                        below[w] |= bit;
                        if tails.allowed.contains(t) {
                            allowed[w] |= bit;
                        }
                    }
                    let has = |t: u32| below[(t / 32) as usize] >> (t % 32) & 1 == 1;
                    pending.extend(tails.suffix_ends(vocab).filter(|&(t, _)| has(t)));
                    asked = asked.or(tails.follow);
                }
                let a = Arc::new(Analysis::new(vocab, allowed, &pending, asked));
                self.bytes += a.allowed.memory() + a.suffixes.nodes.len() * 20 + a.suffixes.roots.len() * 8 + a.suffixes.tokens.len() * 4 + 64;
                if let Some(k) = shape {
                    self.bytes += k.len() * 4 + 8;
                    self.shapes.entry(k).or_default().push(a.clone());
                }
                a
            }
        };
        self.groups.insert(states.into_boxed_slice(), a.clone());
        Ok(a)
    }
}

impl Analysis {
    /// The analysis of the tokens `allowed` and of those that die after
    /// their rule could end, as `(token, depth of the end)`, made with
    /// `follow` where the walk asked for it.
    fn new(vocab: &Vocabulary, allowed: Box<[u32]>, pending: &[(u32, u32)], follow: Option<[u64; 4]>) -> Analysis {
        let mut sorted: Vec<(&[u8], u32)> = pending
            .iter()
            .filter_map(|&(t, k)| vocab.token_bytes(t).and_then(|b| b.get(k as usize..)).map(|s| (s, t)))
            .filter(|(s, _)| !s.is_empty())
            .collect();
        sorted.sort_unstable();
        sorted.dedup();
        let suffixes = TokenTrie::from_sorted(sorted.into_iter().map(|(s, t)| (t, s)));
        Analysis { allowed: Tokens::new(allowed), suffixes, follow }
    }

    /// The `(token, depth of the end)` pairs of [`Analysis::suffixes`].
    fn suffix_ends<'a>(&'a self, vocab: &'a Vocabulary) -> impl Iterator<Item = (u32, u32)> + 'a {
        let nodes = self.suffixes.nodes.iter();
        nodes.flat_map(move |n| {
            let tokens = &self.suffixes.tokens[n.tok_start as usize..n.tok_end as usize];
            tokens.iter().map(move |&t| (t, (vocab.token_bytes(t).map_or(0, |b| b.len()) as u32).saturating_sub(n.depth)))
        })
    }
}

/// A set of tokens: a bitmask over the vocabulary, or its tokens in order
/// when they are few (a key's name, a closing brace): a mask adds those
/// one by one instead of reading the whole bitmask.
#[derive(Debug)]
enum Tokens {
    Dense(Box<[u32]>),
    Sparse(Box<[u32]>),
}

/// Most tokens of a [`Tokens::Sparse`] set: setting a bit costs about
/// as much as ORing a few words of a bitmask.
const SPARSE_MAX: usize = 256;

impl Tokens {
    /// The set of the tokens whose bits `bits` has.
    fn new(bits: Box<[u32]>) -> Tokens {
        let mut tokens = Vec::new();
        for (i, &w) in bits.iter().enumerate().filter(|x| *x.1 != 0) {
            let mut w = w;
            while w != 0 {
                if tokens.len() == SPARSE_MAX {
                    return Tokens::Dense(bits);
                }
                tokens.push(i as u32 * 32 + w.trailing_zeros());
                w &= w - 1;
            }
        }
        Tokens::Sparse(tokens.into_boxed_slice())
    }

    /// Adds the set to bitmask `mask`.
    fn add_to(&self, mask: &mut [u32]) {
        match self {
            Tokens::Dense(bits) => mask.iter_mut().zip(bits.iter()).for_each(|(m, &w)| *m |= w),
            Tokens::Sparse(tokens) => tokens.iter().for_each(|&t| mask[(t / 32) as usize] |= 1 << (t % 32)),
        }
    }

    fn contains(&self, t: u32) -> bool {
        match self {
            Tokens::Dense(bits) => bits[(t / 32) as usize] >> (t % 32) & 1 == 1,
            Tokens::Sparse(tokens) => tokens.binary_search(&t).is_ok(),
        }
    }

    /// Heap bytes held.
    fn memory(&self) -> usize {
        match self {
            Tokens::Dense(w) | Tokens::Sparse(w) => w.len() * 4,
        }
    }
}

/// What [`analyze`] finds: the tokens allowed, those that die after the
/// rule could end at some depth (`(token, depth)`), and the subtrees of
/// the string slice's `rest` it left to the analysis of a set that every
/// character of the slice leads back to (`(node, set)`).
struct Walked {
    allowed: Box<[u32]>,
    pending: Vec<(u32, u32)>,
    cuts: Vec<(u32, u32)>,
}

/// The FOLLOW set of a rule (the bytes that may come right after it ends),
/// computed when first asked: most walks end no rule part-way through a
/// token, and a rule called from hundreds of places takes a while.
struct Follow<'a> {
    sets: &'a mut FollowSets,
    rule: u32,
    set: Option<[u64; 4]>,
}

impl Follow<'_> {
    fn get(&mut self, g: &Grammar) -> [u64; 4] {
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
#[allow(clippy::too_many_arguments)]
fn analyze(
    g: &Grammar,
    vocab: &Vocabulary,
    dfa: &mut SetDfa,
    chart: &mut Chart,
    slice_seqs: &[ByteSequence],
    states: &[u32],
    follow: &mut Follow,
    fuel: &mut usize,
    limit: usize,
) -> Result<Walked, MatchError> {
    let mut allowed = vec![0u32; vocab.mask_words()].into_boxed_slice();
    let seed = dfa.intern(g, states, false);
    let mut walker = SetWalker {
        inner: ChartWalker { g, chart, fuel: *fuel, limit },
        dfa,
        frames: vec![(seed, 0)],
    };
    // Where every string of the slice's characters keeps the seed set
    // alive, the slice's tokens are allowed (none can die) and only the
    // other tokens are walked. Where those of at most `d` characters do,
    // their tokens are allowed, and the walk takes only the other tokens
    // when no longer one lives (closed), those of more than `SHORT` bytes
    // and the other tokens when `d` is at least `SHORT`, else the whole
    // trie but the subtrees of allowed tokens only.
    let slice = vocab.string_slice();
    // Subtrees of the vocabulary's trie whose tokens are all allowed as a
    // block (see [`Slice::reach`]) are skipped: `(reach, d)`.
    let mut skip: Option<(&[u8], u8)> = None;
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
    // Asked of the rule's automaton first, where it is cheaper (the set
    // may still be its own link, which the split below takes).
    let depth = if walker.dfa.living.lives(g, states, slice_seqs) {
        walker.loop_set(slice_seqs).map(|_| (usize::MAX, false))
    } else {
        walker.alive_depth(seed, slice_seqs, slice.max_chars)
    };
    let trie = match depth {
        Ok((d, _)) if d >= slice.max_chars => {
            allowed.iter_mut().zip(slice.mask.iter()).for_each(|(a, &m)| *a = m);
            if walker.dfa.links.get(&seed) == Some(&seed) {
                split = Some(&slice.split);
                &slice.tails
            } else {
                cuts = Some(Vec::new());
                &slice.rest
            }
        }
        Ok((d, closed)) if closed || d >= Slice::SHORT => {
            slice.up_to(d, &mut allowed);
            if closed { &slice.rest } else { &slice.long_rest }
        }
        Ok((d, _)) if d > 0 => {
            slice.up_to(d, &mut allowed);
            skip = Some((&slice.reach, d as u8));
            vocab.trie()
        }
        Ok(_) => match walker.fewer_characters(seed, slice_seqs, slice.max_chars) {
            Ok(Some((d, dying))) => {
                without = Some((d, dying));
                vocab.trie()
            }
            Ok(None) => vocab.trie(),
            Err(e) => {
                *fuel = walker.inner.fuel;
                return Err(e);
            }
        },
        Err(e) => {
            *fuel = walker.inner.fuel;
            return Err(e);
        }
    };
    let mut ends: Vec<u32> = Vec::new(); // depths where the rule could end, on the current path
    let mut path: Vec<u8> = Vec::new(); // the bytes of the current path
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
    let mut free: Vec<(u32, u128)> = Vec::new();
    // The seed's own (a first character that leads into a string's loop).
    if full {
        match walker.strays(slice_seqs) {
            Ok(u128::MAX) => {}
            Ok(strays) => free.push((0, strays)),
            Err(e) => {
                *fuel = walker.inner.fuel;
                return Err(e);
            }
        }
    }
    // The root's children whose byte the seed set may take: no end is on
    // the path yet, so the others die before anything could be kept.
    let roots: Vec<usize> = trie.roots.iter().filter(|&&(b, _)| walker.known(b) != DEAD).map(|&(_, r)| r as usize).collect();
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
        while free.last().is_some_and(|&(f, _)| node.depth <= f) {
            free.pop();
        }
        while depth >= node.depth {
            walker.pop();
            depth -= 1;
        }
        while ends.last().is_some_and(|&d| d > depth) {
            ends.pop();
        }
        path.truncate(depth as usize);
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
        let whole = |&(f, strays): &(u32, u128)| {
            let from = slice.class_from[i];
            (strays & slice.class_bits == 0 && from < u8::MAX && from as u32 <= f)
                || (slice.reach[i] != u8::MAX && slice.bytes[i] & strays == 0)
        };
        let surely_lives = |(d, dying): (u8, u128)| slice.reach[i] <= d && slice.bytes[i] & dying == 0;
        if free.iter().any(whole) || without.is_some_and(surely_lives) {
            for &t in trie.subtree_tokens(i) {
                allowed[(t / 32) as usize] |= 1 << (t % 32);
            }
            i = node.end as usize;
            continue;
        }
        if skip.is_some_and(|(reach, d)| reach[i] <= d) {
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
                // subtrees only; once known for the set, below any. (A set
                // past a cut character takes no character's first byte:
                // `f` ends a character.)
                if full && node.end as usize - i > 1 {
                    let strays = if node.end as usize - i > FREE_MIN_NODES { walker.strays(slice_seqs).map(Some) } else { Ok(walker.known_strays()) };
                    match strays {
                        Ok(None | Some(u128::MAX)) => {}
                        Ok(Some(strays)) => free.push((depth, strays)),
                        Err(e) => break Err(e),
                    }
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
    *fuel = walker.inner.fuel;
    result?;
    Ok(Walked { allowed, pending, cuts: cuts.unwrap_or_default() })
}

/// Fewest nodes below a node of the vocabulary's trie for which an
/// analysis's walk looks for characters that lead its set back to itself
/// (every node in tests, whose vocabularies are small). Looking costs a
/// transition per byte class of every set the closure meets, more than
/// a subtree of a few hundred nodes takes to walk.
const FREE_MIN_NODES: usize = if cfg!(test) { 0 } else { 1024 };

/// No DFA set (in a walker frame) or not yet computed (in a transition).
const UNKNOWN: u32 = u32::MAX;
const DEAD: u32 = u32::MAX - 1;
/// A transition to a set that is neither an outer nor an open set: it is
/// taken by an Earley step on the chart.
const CHART: u32 = u32::MAX - 2;
/// Tag of an open set's id (index into `open`).
const OPEN: u32 = 1 << 31;

/// The lazily built DFA over outer and open sets (see the module docs).
#[derive(Debug, Default)]
struct SetDfa {
    ids: FastMap<Box<[u32]>, u32>,
    /// Per outer set: its states.
    sets: Vec<Box<[u32]>>,
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
    links: FastMap<u32, u32>,
    /// Outer sets checked by [`SetWalker::loop_set`].
    looped: FastSet<u32>,
    /// What [`Living::lives`] learnt of the grammar's successor lists.
    living: Living,
    /// Per outer set and per open set: its [`SetDfa::strays`] for the
    /// string slice, once computed.
    strays: [Vec<Option<u128>>; 2],
    /// Approximate heap bytes held.
    bytes: usize,
    /// Scratch for the states after a byte ([`SetDfa::next`]).
    scratch: Vec<u32>,
    /// The vocabulary's longest token, in bytes: no walk takes more, so
    /// a set may hold the states that stand in for its own for that long
    /// ([`Grammar::stand_in`]). 0 (none does) until the first analysis.
    horizon: u32,
    /// The bytes of the string slice's tokens (the ASCII bytes of its
    /// characters, and every byte from 0x80) as a 256-bit set, set up with
    /// [`SetDfa::horizon`].
    slice_bytes: [u64; 4],
    /// Per outer set, then per open set: whether it takes none of those
    /// bytes (its tokens die on their next byte).
    refuses: [Vec<bool>; 2],
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
const ASCII_BITS: u128 = !0xFFFF_FFFF;

/// An open set's items as `(state, origin)` ([`Origin::Below`]: its anchor).
type OpenItems = Box<[(u32, Origin)]>;

/// An open set: its items and its anchor (`NO_ANCHOR` when none).
type OpenSet = (OpenItems, u32);

const NO_ANCHOR: u32 = u32::MAX;

impl SetDfa {
    fn intern(&mut self, g: &Grammar, states: &[u32], end: bool) -> u32 {
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

    fn memory(&self) -> usize {
        self.bytes + self.living.memory()
    }

    /// The bytes whose characters may not keep set `id` alive, as
    /// [`Slice::bytes`] marks them: every bit but those of the characters of
    /// `seqs` (a class as [`byte_sequences`]) that lead every set of a
    /// closure of `id` back into it through DFA sets. Every string of the
    /// others lives from the set. Of two closures, the one keeping more
    /// ASCII characters: `id` alone (a string's loop), or up to
    /// [`MAX_CLOSURE`] sets (a first character that leads into the loop).
    /// Computed once per set.
    fn strays(&mut self, w: &mut ChartWalker, id: u32, seqs: &[ByteSequence]) -> Result<u128, MatchError> {
        let (known, i) = (&mut self.strays[(id >> 31) as usize], (id & !OPEN) as usize);
        if i >= known.len() {
            self.bytes += (i + 1 - known.len()) * std::mem::size_of::<Option<u128>>();
            known.resize(i + 1, None);
        }
        if let Some(strays) = known[i] {
            return Ok(strays);
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
    fn after_char(&mut self, w: &mut ChartWalker, from: u32, first: u8, rest: &[Vec<u8>], after: &mut Vec<u32>) -> Result<Option<bool>, MatchError> {
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
    fn known(&self, id: u32, class: u8) -> u32 {
        self.trans[(id >> 31) as usize].get(self.width, (id & !OPEN) as usize, class as usize)
    }

    /// True when the outer rule ended in set `id`.
    fn end(&self, id: u32) -> bool {
        self.ends[(id >> 31) as usize][(id & !OPEN) as usize]
    }

    /// Opens set `id` (outer or open) on the chart, on its anchor if it
    /// has one; returns how many sets it opened.
    fn open_on(&self, chart: &mut Chart, id: u32) -> u8 {
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
    fn next(&mut self, w: &mut ChartWalker, from: u32, byte: u8) -> Result<u32, MatchError> {
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
    fn classify(&mut self, g: &Grammar, chart: &Chart, anchor: Option<(usize, u32)>) -> u32 {
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

/// A trie walker that follows the DFA while it stays on outer and open sets
/// and falls back to Earley steps on a local chart where it does not.
struct SetWalker<'a, 'c> {
    inner: ChartWalker<'c>,
    dfa: &'a mut SetDfa,
    /// Per set on the path: its DFA set id (`UNKNOWN` when it is not one)
    /// and how many sets its step opened on the chart.
    frames: Vec<(u32, u8)>,
}

impl SetWalker<'_, '_> {
    /// The newest set's [`SetDfa::strays`] (every bit when it is no DFA set).
    fn strays(&mut self, seqs: &[ByteSequence]) -> Result<u128, MatchError> {
        match self.frames.last() {
            Some(&(id, _)) if id != UNKNOWN => self.dfa.strays(&mut self.inner, id, seqs),
            _ => Ok(u128::MAX),
        }
    }

    /// [`SetWalker::strays`] when already computed for the newest set.
    fn known_strays(&self) -> Option<u128> {
        match self.frames.last() {
            Some(&(id, _)) if id != UNKNOWN => self.dfa.strays[(id >> 31) as usize].get((id & !OPEN) as usize).copied().flatten(),
            _ => None,
        }
    }

    /// The newest set's known transition on `byte` (`DEAD` where it surely
    /// dies); `UNKNOWN` where it is not yet computed or the set is no DFA set.
    #[inline]
    fn known(&self, byte: u8) -> u32 {
        match self.frames.last() {
            Some(&(id, _)) if id != UNKNOWN => self.dfa.known(id, self.inner.g.class(byte)),
            _ => UNKNOWN,
        }
    }

    /// The newest set when it is an outer set that every character of the
    /// slice (`seqs`) leads back to through DFA sets, ending no rule: then
    /// it is its own link ([`SetDfa::links`]). Checked once per set.
    fn loop_set(&mut self, seqs: &[ByteSequence]) -> Result<Option<u32>, MatchError> {
        let Some(&(id, _)) = self.frames.last() else { return Ok(None) };
        if id == UNKNOWN || id & OPEN != 0 || self.dfa.end(id) {
            return Ok(None);
        }
        if let Some(&to) = self.dfa.links.get(&id) {
            return Ok((to == id).then_some(id));
        }
        if !self.dfa.looped.insert(id) {
            return Ok(None);
        }
        self.dfa.bytes += 8;
        let mut after = Vec::new();
        for seq in seqs {
            for &b in &seq.bytes[0] {
                if self.dfa.after_char(&mut self.inner, id, b, &seq.bytes[1..], &mut after)? != Some(false) || after != [id] {
                    return Ok(None);
                }
            }
        }
        self.dfa.bytes += 16;
        self.dfa.links.insert(id, id);
        Ok(Some(id))
    }

    /// True when the newest set is a DFA set that every JSON whitespace
    /// byte leads back to.
    fn blank_loop(&mut self) -> Result<bool, MatchError> {
        let Some(&(id, _)) = self.frames.last() else { return Ok(false) };
        if id == UNKNOWN {
            return Ok(false);
        }
        for b in BLANKS {
            if self.dfa.next(&mut self.inner, id, b)? != id {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// [`Walker::push`] given [`SetWalker::known`] for `byte`: a known
    /// step to a DFA set is taken at once.
    #[inline]
    fn push_known(&mut self, byte: u8, known: u32) -> Result<bool, MatchError> {
        match known {
            DEAD => Ok(false),
            UNKNOWN | CHART => self.push(byte),
            to => {
                self.frames.push((to, 0));
                Ok(true)
            }
        }
    }

    /// True when the newest set is a DFA set that takes no byte of the
    /// string slice's tokens ([`SetDfa::slice_bytes`]).
    fn refuses_slice(&self) -> bool {
        match self.frames.last() {
            Some(&(id, _)) if id != UNKNOWN => self.dfa.refuses[(id >> 31) as usize][(id & !OPEN) as usize],
            _ => false,
        }
    }

    /// True when the outer rule ended in the newest set.
    fn outer_end(&self) -> bool {
        match self.frames.last() {
            Some(&(id, _)) if id != UNKNOWN => self.dfa.end(id),
            _ => self.inner.chart.outer_end(),
        }
    }

    /// How far every string of the characters of `seqs` (a class as
    /// [`byte_sequences`]) keeps set `id` alive: every such string of at
    /// most the returned number `d` of characters, and every byte prefix of
    /// one, takes each byte through DFA sets (`usize::MAX`: every string
    /// does). Also whether it is closed there: no character of the class may
    /// follow where `d` of them end, and the rule ends nowhere before, so
    /// no string with more of them lives, in the rule or after it. Explores
    /// the sets such strings reach level by level, up to `max_chars` levels
    /// and [`MAX_REACHED`] sets. `seqs` is the whole slice (for the links).
    fn alive_depth(&mut self, id: u32, seqs: &[ByteSequence], max_chars: usize) -> Result<(usize, bool), MatchError> {
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
}

impl SetWalker<'_, '_> {
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
    fn fewer_characters(&mut self, id: u32, seqs: &[ByteSequence], max_chars: usize) -> Result<Option<(u8, u128)>, MatchError> {
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
                    if (!dying & ASCII_BITS).count_ones() < 32 {
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
}

/// What [`Living::lives`] learnt of a grammar's successor lists, for the
/// characters of the string slice (as the DFA's own facts are).
#[derive(Debug, Default)]
struct Living {
    /// Per list (by its start in the grammar's successor lists): `UNSEEN`,
    /// `MET` (in the exploration under way), `LIVES` or `MAY_DIE`.
    known: Vec<u8>,
    /// Per list reached part-way through a character (by its start, the
    /// character's sequence and the place of the byte in it): the one list
    /// the character's remaining bytes lead it to, every byte taken; `None`
    /// where they lead to several. Characters of more than one byte mostly
    /// go where the others of their class go, through the same lists.
    tails: FastMap<(u32, u32, u8), Option<(u32, u32)>>,
}

/// What [`Living::known`] holds for a list.
const UNSEEN: u8 = 0;
const MET: u8 = 1;
const LIVES: u8 = 2;
const MAY_DIE: u8 = 3;

/// Most lists [`Living::lives`] explores.
const MAX_LIVING: usize = 2048;

/// Most lists in a row that [`Living::lives`] follows where each leads
/// to one other list only.
const MAX_CHAIN: usize = 8;

/// The lists characters lead to, as far as seen: none yet, one, several.
#[derive(Clone, Copy, PartialEq)]
enum Sole {
    Unknown,
    One((u32, u32)),
    Several,
}

impl Sole {
    fn add(&mut self, to: (u32, u32)) {
        *self = match *self {
            Sole::Unknown => Sole::One(to),
            Sole::One(t) if t == to => Sole::One(t),
            _ => Sole::Several,
        };
    }
}

impl Living {
    fn memory(&self) -> usize {
        self.known.len() + self.tails.len() * 24
    }

    /// True when every string of the characters of `seqs` keeps the byte
    /// states `states` of one rule alive by themselves, each byte taken by
    /// one state: from `states` and from each successor list such a string
    /// reaches, every byte of the string leads through exactly one list (no
    /// union of several), and every character ends in a list holding a
    /// state that takes each next one. Then every such string keeps the
    /// group alive, as [`SetWalker::alive_depth`] would find set by set, but
    /// here on the rule's automaton, a list at a time, without Earley steps
    /// or DFA sets: cheaper where such strings reach many sets (a key past
    /// many declared names, whose automaton walks their trie).
    ///
    /// Gives up past [`MAX_LIVING`] lists, and on strings that count their
    /// characters (a bounded length), left to [`SetWalker::alive_depth`]'s
    /// links: where every character leads `states`, or [`MAX_CHAIN`] lists
    /// in a row, to one other list. Every list met on the way to a no is
    /// then known as one that may die.
    fn lives(&mut self, g: &Grammar, states: &[u32], seqs: &[ByteSequence]) -> bool {
        self.known.resize(g.list_count(), UNSEEN);
        let mut met: Vec<(u32, u32)> = Vec::new();
        let (mut i, mut chain) = (0, 0);
        let (mut from, mut list) = (states, None);
        let yes = 'explore: loop {
            let mut sole = Sole::Unknown;
            for (k, seq) in seqs.iter().enumerate() {
                if !self.after_chars(g, from, (k as u32, 0), &seq.bytes, &mut met, &mut sole) {
                    break 'explore false;
                }
            }
            match sole {
                Sole::One(to) if Some(to) != list => chain += 1,
                _ => chain = 0,
            }
            if chain > 0 && (list.is_none() || chain > MAX_CHAIN) || met.len() > MAX_LIVING {
                break false;
            }
            let Some(&next) = met.get(i) else { break true };
            i += 1;
            list = Some(next);
            from = g.list(next);
        };
        let mark = if yes { LIVES } else { MAY_DIE };
        met.iter().for_each(|&(a, _)| self.known[a as usize] = mark);
        yes
    }

    /// Adds to `met` the lists that the characters of a UTF-8 sequence
    /// (`at`: its index and the place in it of `bytes`, the bytes left, a
    /// byte of each class) lead the states `from` to, unless known, and
    /// notes them in `sole`; false where a byte leads nowhere, or to several
    /// lists, or to a list known to die.
    fn after_chars(&mut self, g: &Grammar, from: &[u32], at: (u32, u8), bytes: &[Vec<u8>], met: &mut Vec<(u32, u32)>, sole: &mut Sole) -> bool {
        let Some((first, rest)) = bytes.split_first() else { return true };
        let mut past = None;
        for &b in first {
            if past.is_some_and(|p| b <= p) {
                continue;
            }
            let (to, alike) = g.sole_step(from, b);
            past = Some(*alike.end());
            let Some(to) = to else { return false };
            if rest.is_empty() {
                if !self.reach(to, met, sole) {
                    return false;
                }
                continue;
            }
            let key = (to.0, at.0, at.1 + 1);
            match self.tails.get(&key) {
                Some(&Some(end)) => {
                    if !self.reach(end, met, sole) {
                        return false;
                    }
                }
                known => {
                    let new = known.is_none();
                    let mut ends = Sole::Unknown;
                    if !self.after_chars(g, g.list(to), (at.0, at.1 + 1), rest, met, &mut ends) {
                        return false;
                    }
                    match ends {
                        Sole::One(end) => sole.add(end),
                        _ => *sole = Sole::Several,
                    }
                    if new {
                        self.tails.insert(key, if let Sole::One(end) = ends { Some(end) } else { None });
                    }
                }
            }
        }
        true
    }

    /// Notes list `to`, where a character ends, in `sole` and, unless
    /// known, in `met`; false when it is known to die.
    fn reach(&mut self, to: (u32, u32), met: &mut Vec<(u32, u32)>, sole: &mut Sole) -> bool {
        sole.add(to);
        match self.known[to.0 as usize] {
            UNSEEN => {
                self.known[to.0 as usize] = MET;
                met.push(to);
                true
            }
            MAY_DIE => false,
            _ => true,
        }
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
struct ByteSequence {
    /// Per byte: one byte of each byte class of the grammar in its range
    /// (the others go the same way).
    bytes: Vec<Vec<u8>>,
    /// Per first byte: the bits of the first bytes it stands for, as
    /// [`Slice::bytes`] marks them.
    bits: Vec<u128>,
}

/// The UTF-8 sequences of the characters of `class`, for the walks that
/// follow characters rather than bytes ([`SetWalker::alive_depth`],
/// [`SetWalker::fewer_characters`], [`SetDfa::strays`]).
fn byte_sequences(g: &Grammar, class: &[(char, char)]) -> Vec<ByteSequence> {
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

impl Walker for SetWalker<'_, '_> {
    fn push(&mut self, byte: u8) -> Result<bool, MatchError> {
        let from = self.frames.last().map_or(UNKNOWN, |f| f.0);
        if from == UNKNOWN {
            if !self.inner.push(byte)? {
                return Ok(false);
            }
            let id = match self.dfa.classify(self.inner.g, self.inner.chart, None) {
                CHART => UNKNOWN,
                id => id,
            };
            self.frames.push((id, 1));
            return Ok(true);
        }
        match self.dfa.next(&mut self.inner, from, byte)? {
            DEAD => Ok(false),
            CHART => {
                // The step was taken once already: open `from` and take it again.
                let opened = self.dfa.open_on(self.inner.chart, from);
                match self.inner.push(byte) {
                    Ok(true) => {
                        self.frames.push((UNKNOWN, opened + 1));
                        Ok(true)
                    }
                    other => {
                        for _ in 0..opened {
                            self.inner.chart.pop();
                        }
                        other
                    }
                }
            }
            to => {
                self.frames.push((to, 0));
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

    /// The grammar of `src`, its chart after `text`, and the states of the
    /// byte items there, in order.
    fn chart_after(src: &str, text: &[u8]) -> (Grammar, Chart, Vec<u32>) {
        let g = Grammar::new(src, 10_000).unwrap();
        let mut chart = Chart::new(&g);
        let mut fuel = usize::MAX;
        for &b in text {
            assert!(chart.push(&g, b, &mut fuel).unwrap());
        }
        let mut states: Vec<u32> = chart.byte_items(&g).map(|x| x.2).collect();
        states.sort_unstable();
        (g, chart, states)
    }

    /// Whether the group after the first byte of `text` keeps alive on
    /// every string of JSON string characters.
    fn keeps_alive_after(src: &str, text: &[u8]) -> bool {
        let (g, _, states) = chart_after(src, text);
        let fuel = usize::MAX;
        let mut dfa = SetDfa::default();
        let mut local = Chart::local();
        let seed = dfa.intern(&g, &states, false);
        let mut w = SetWalker { inner: ChartWalker { g: &g, chart: &mut local, fuel, limit: fuel }, dfa: &mut dfa, frames: vec![] };
        let seqs = byte_sequences(&g, &[(' ', '!'), ('#', '['), (']', char::MAX)]);
        w.alive_depth(seed, &seqs, 64).unwrap().0 == usize::MAX
    }

    /// [`Living::lives`] for the byte items after `text`; where it holds,
    /// every string of up to three characters of the slice (of one, two and
    /// three bytes) is checked to keep the parser alive after `text`.
    fn lives_after(src: &str, text: &[u8]) -> bool {
        let (g, mut chart, states) = chart_after(src, text);
        let mut fuel = usize::MAX;
        let seqs = byte_sequences(&g, &[(' ', '!'), ('#', '['), (']', char::MAX)]);
        let lives = Living::default().lives(&g, &states, &seqs);
        if lives {
            let alphabet = ["a", "b", "c", "x", " ", "é", "中"];
            let mut strings = vec![String::new()];
            for _ in 0..3 {
                strings = strings.iter().flat_map(|s| alphabet.iter().map(move |c| format!("{s}{c}"))).collect();
                for s in &strings {
                    let pushed = s.bytes().take_while(|&b| chart.push(&g, b, &mut fuel).unwrap()).count();
                    (0..pushed).for_each(|_| chart.pop());
                    assert_eq!(pushed, s.len(), "{src}: {s:?} dies after {text:?}");
                }
            }
        }
        lives
    }

    /// Groups that every string of the slice keeps alive on their rule's
    /// automaton alone are found so: a key past declared names (its
    /// automaton walks their trie, then takes any string), before and
    /// inside a name; and no others: a bounded string, a class short of
    /// the slice, names whose other keys are bounded.
    #[test]
    fn groups_live_by_themselves_where_every_string_lives() {
        let c = r#"[^"\\\x00-\x1F]"#;
        let key = format!(r#"root ::= "\"" ("a" ("b" ("c" {c}+ | [^"\\\x00-\x1Fc] {c}*) | [^"\\\x00-\x1Fb] {c}* | "") | [^"\\\x00-\x1Fa] {c}*)? "\"""#);
        assert!(lives_after(&key, b"\""));
        assert!(lives_after(&key, b"\"ab"));
        assert!(lives_after(&format!(r#"root ::= "\"" ("x" {c}* | [^"\\\x00-\x1Fx] {c}*) "\"""#), b"\""));
        // A loop, where every character leads to one list: left to
        // `alive_depth`, which takes it in one step.
        assert!(!lives_after(&format!(r#"root ::= "\"" {c}* "\"""#), b"\""));
        assert!(!lives_after(&format!(r#"root ::= "\"" {c}{{0,30}} "\"""#), b"\""));
        assert!(!lives_after(r#"root ::= "\"" [a-z]* "\"""#, b"\""));
        assert!(!lives_after(&format!(r#"root ::= "\"" ("ab" | [^"\\\x00-\x1Fa] {c}{{0,3}}) "\"""#), b"\""));
    }

    /// Masks inside a string of bounded length, on a vocabulary with
    /// tokens longer than [`Slice::SHORT`] and multi-byte characters, equal
    /// taking each token on the parser at every position.
    #[test]
    fn bounded_strings_match_the_parser() {
        use crate::{Constraint, Vocabulary};
        let mut tokens: Vec<Option<Vec<u8>>> = Vec::new();
        for n in 1..=24 {
            for unit in ["a", "é", "中"] {
                let s = unit.repeat(n);
                tokens.push(Some(s.clone().into_bytes()));
                tokens.push(Some(format!("{s}\"").into_bytes()));
                tokens.push(Some(format!("\"{s}").into_bytes()));
            }
        }
        tokens.extend([&b"\""[..], b"\xe4", b"\xe4\xb8", b"\xb8\xad", b"\xad", b"\\n"].map(|b| Some(b.to_vec())));
        let vocab = std::sync::Arc::new(Vocabulary::from_token_bytes(tokens));
        // A string of bounded length, and one of two bounded parts in a
        // called rule (it ends inside the string: tokens go on after it).
        let grammars = [
            r#"root ::= "\"" ([^"\\\x00-\x1F] | "\\n"){3,40} "\"""#,
            "root ::= \"\\\"\" b b \"\\\"\"\nb ::= ([^\"\\\\\\x00-\\x1F] | \"\\\\n\"){2,9} | \"(\" b \")\"",
        ];
        let mut seed = 7u64;
        for i in 0..60 {
            let c = Constraint::gbnf(grammars[i % 2]).unwrap();
            // Every fourth walk takes the last token allowed (`"`, then
            // `\n`): one character at a time from the string's start.
            walk_matches_parser(&c, &vocab, usize::MAX, &mut seed, i % 4 == 3);
        }
    }

    /// Masks inside strings of a pattern and bounded length (the pattern's
    /// product with the count) equal taking each token on the parser, where
    /// the states at one count stand in for those at another (far from the
    /// bound) and near the bound, where they may not. Every fourth walk
    /// takes the last token allowed: one character at a time.
    #[test]
    fn bounded_patterns_match_the_parser() {
        use crate::{Constraint, Vocabulary};
        let tokens = [
            &b"\""[..], b"a", b"b", b"ab", b"abc", b"abcab", b"aaaaaaaa", b"@", b"a@b", b"b@", b".", b".uk", b"a.b", b"b.uk",
            b"a\"", b"b.uk\"", b"uk", b"u", b"k", b" ", b"a b", b"\\n", "é".as_bytes(), "aé".as_bytes(), "中".as_bytes(),
            b"\xe4", b"\xb8\xad", "é@".as_bytes(), b"\"a", b"\"ab@",
        ];
        let vocab = std::sync::Arc::new(Vocabulary::from_token_bytes(tokens.iter().map(|b| Some(b.to_vec())).collect()));
        let schemas = [
            serde_json::json!({"type": "string", "pattern": "^[a-c]+@[a-c]+(\\.[a-c]+)*$", "minLength": 3, "maxLength": 40}),
            serde_json::json!({"type": "string", "pattern": "^[^@\\s]+@[^@.\\s]+(\\.[^@.\\s]*)*\\.uk", "minLength": 5, "maxLength": 30}),
        ];
        let mut seed = 11u64;
        for i in 0..48 {
            let (c, _) = Constraint::json_schema(&schemas[i % 2], &Default::default()).unwrap();
            let crate::constraint::Program::Grammar(g) = c.program() else { panic!("a schema compiles to a grammar") };
            assert!(g.stand_in_count() > 0);
            walk_matches_parser(&c, &vocab, 60, &mut seed, i % 4 == 3);
        }
    }

    /// Takes at most `steps` tokens from the start of `c`, each a random one
    /// of those allowed (or the last, with `last`), and checks at every step
    /// that the mask equals taking each token on the parser.
    fn walk_matches_parser(c: &crate::Constraint, vocab: &std::sync::Arc<crate::Vocabulary>, steps: usize, seed: &mut u64, last: bool) {
        let mut m = crate::Matcher::new(c, vocab);
        let mut mask = vec![0u32; vocab.mask_words()];
        for _ in 0..steps {
            let allowed = crate::matcher::mask_equals_parser(&mut m, &mut mask)
                .unwrap_or_else(|t| panic!("the mask and the parser disagree on token {t} after {} bytes", m.bytes_len()));
            if allowed.is_empty() {
                break;
            }
            *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let pick = if last { allowed.len() - 1 } else { (*seed >> 33) as usize % allowed.len() };
            m.accept_token(allowed[pick]).unwrap();
        }
    }

    /// Masks inside strings whose characters lead back to the same set (the
    /// walk takes the tails of tokens past their characters), on tokens
    /// whose tails start at a quote, a backslash, a control character or
    /// a byte that cannot follow, equal taking each token on the parser.
    /// The string is a called rule (recursive, so not inlined): tokens that
    /// end it go on through the chart from their tails' ends.
    #[test]
    fn string_tails_match_the_parser() {
        use crate::{Constraint, Vocabulary};
        let tokens = [
            &b"["[..], b"]", b",", b"\"", b"a", "é".as_bytes(), "中".as_bytes(), b"\xe4", b"\xb8\xad", b"ab", b"\"a",
            b"a\"", b"ab\"", b"ab\",", b"ab\"]", "é\",".as_bytes(), b"a\"]", b"\",", b"\"]", b"\", \"", b"a\\n", b"a\\n\"",
            b"\\", b"a\\", b"a\\x", b"a\n", b"a\xb8\"", b"\xe4\xb8\"", b"aa\"],",
        ];
        let vocab = std::sync::Arc::new(Vocabulary::from_token_bytes(tokens.iter().map(|b| Some(b.to_vec())).collect()));
        let c = Constraint::gbnf("root ::= \"[\" s (\",\" \" \"? s)* \"]\"\ns ::= \"\\\"\" ([^\"\\\\\\x00-\\x1F] | \"\\\\n\")* \"\\\"\" | \"<\" s \">\"\n").unwrap();
        let mut seed = 5u64;
        for _ in 0..40 {
            walk_matches_parser(&c, &vocab, 30, &mut seed, false);
        }
    }

    /// Takes `walks` walks of at most 30 tokens (see [`walk_matches_parser`]),
    /// each on a fresh compile of the next of `grammars`, over a vocabulary
    /// of `tokens`.
    fn grammars_match_the_parser(tokens: &[&[u8]], grammars: &[&str], walks: usize, mut seed: u64) {
        let vocab = std::sync::Arc::new(crate::Vocabulary::from_token_bytes(tokens.iter().map(|b| Some(b.to_vec())).collect()));
        for i in 0..walks {
            let c = crate::Constraint::gbnf(grammars[i % grammars.len()]).unwrap();
            walk_matches_parser(&c, &vocab, 30, &mut seed, false);
        }
    }

    /// Masks inside strings that refuse some characters of the slice (an
    /// ASCII punctuation mark, every character of more than one byte, all
    /// but one of them, one that lives only before another; first bytes
    /// that share a bit with one that dies; labels of bounded length that a
    /// `.` may end but not two in a row), of bounded and unbounded length,
    /// equal taking each token on the parser:
    /// the walk allows the subtrees of tokens without those characters.
    #[test]
    fn strings_of_fewer_characters_match_the_parser() {
        let tokens = [
            &b"["[..], b"]", b",", b"\"", b"a", b"ab", b"abc", b"abcd", b"a b", b".", b"#", b"a.b", b"ab#", b"a\"", b"ab\",",
            "é".as_bytes(), "aé".as_bytes(), "中".as_bytes(), b"\xe4", b"a\xe4", b"\xb8\xad", b"\",", b"\"]", b"a\"]", b"aaaa",
            b"aaaaaaaa", b"a.", b"..", b"a\\n", "ü".as_bytes(), "a¢".as_bytes(), b"#a", b"a#b", b"##",
        ];
        let grammars = [
            "root ::= \"[\" s (\",\" s)* \"]\"\ns ::= \"\\\"\" [^\"\\\\\\x00-\\x1F.#]* \"\\\"\" | \"<\" s \">\"\n",
            "root ::= \"[\" s (\",\" s)* \"]\"\ns ::= \"\\\"\" [a-d ]{0,6} \"\\\"\" | \"<\" s \">\"\n",
            "root ::= \"[\" s (\",\" s)* \"]\"\ns ::= \"\\\"\" [^\"\\\\\\x00-\\x1F#]{1,5} \".\"? \"\\\"\" | \"<\" s \">\"\n",
            "root ::= \"[\" s (\",\" s)* \"]\"\ns ::= \"\\\"\" [^\"\\\\\\x00-\\x1Fé]* \"\\\"\" | \"<\" s \">\"\n",
            "root ::= \"[\" s (\",\" s)* \"]\"\ns ::= \"\\\"\" ([^\"\\\\\\x00-\\x1F#.] | \"#a\")* \"\\\"\" | \"<\" s \">\"\n",
            "root ::= \"[\" s (\",\" s)* \"]\"\ns ::= \"\\\"\" [a-d]{1,6} (\".\" [a-d]{1,6}){0,3} \"\\\"\" | \"<\" s \">\"\n",
        ];
        grammars_match_the_parser(&tokens, &grammars, 96, 3);
    }

    /// Masks where tokens enter strings whose sets lead some characters
    /// back to themselves, or into a loop after a first character (any key
    /// but `ab`, a pattern whose `-` moves on, a called recursive string,
    /// segments that a `-` may end but no two in a row, a string whose first
    /// character is one of three), on tokens that go on past a quote, a
    /// dash, a cut character or a byte that cannot follow, equal taking
    /// each token on the parser: the walk allows the subtrees of tokens
    /// whose rest is such characters.
    #[test]
    fn looping_strings_match_the_parser() {
        let tokens = [
            &b"["[..], b"]", b",", b"\"", b"\"a", b"\"ab", b"\"abc", b"\"x", b"\"xy\"", b"\"a-b", b"-", b"--", b"a-", b"-a",
            b"a", b"b", b"ab", b"abc", b"a b", b" ", b"\" ", "\"é".as_bytes(), "é".as_bytes(), "中".as_bytes(), b"\xe4",
            b"\xb8\xad", b"\"\xe4", b"\"a\xe4", b"\"],", b"\"]", b"\",\"", b"a\"", b"ab\"", b"xy\",", b"\"ab\"", b"\\n", b"\"\\",
            b"\"a-", b"\"-", b"\"--a", "\"a中".as_bytes(), b"\"b-c-d", b"\"\"", b"a\xb8", b"\"a\xb8", b"\xb8", b"b\xe4\xb8",
        ];
        let grammars = [
            "root ::= \"[\" k (\",\" k)* \"]\"\nk ::= \"\\\"\" (\"a\" (\"b\" [^\"\\\\]+ | [^\"\\\\b] [^\"\\\\]* | \"\") | [^\"\\\\a] [^\"\\\\]*)? \"\\\"\"\n",
            "root ::= \"[\" k (\",\" k)* \"]\"\nk ::= \"\\\"\" [^\"\\\\-]* (\"-\" [^\"\\\\-]+){0,2} \"\\\"\"\n",
            "root ::= \"[\" k (\",\" k)* \"]\"\nk ::= \"\\\"\" t \"\\\"\"\nt ::= \"\" | [^\"\\\\] t\n",
            "root ::= \"[\" k (\",\" k)* \"]\"\nk ::= \"\\\"\" \"-\"? ([^\"\\\\-]+ \"-\"?)+ \"\\\"\"\n",
            "root ::= \"[\" k (\",\" k)* \"]\"\nk ::= \"\\\"\" [a-c] [^\"\\\\]* \"\\\"\"\n",
        ];
        grammars_match_the_parser(&tokens, &grammars, 150, 13);
    }

    /// Masks where whitespace may run on (unbounded, bounded, spaces only,
    /// inside a string), on tokens of whitespace runs and of runs followed
    /// by more, equal taking each token on the parser: the walk allows the
    /// subtrees of runs whole only below a set that whitespace keeps.
    #[test]
    fn blank_runs_match_the_parser() {
        let tokens = [
            &b" "[..], b"  ", b"   ", b"\t", b"\t\t", b"\t\t\t", b"\n", b"\n ", b"\n  ", b"\n\t", b"\n\n", b"\r\n", b"\r\n\t",
            b" \t\n\r", b" x", b"\n:", b"\n\t\"", b"  \"", b":", b": ", b"\"", b"\"a", b"a", b"x", b"{", b"}", b",", b", ", b"{\n",
            b"\" ", b"a ",
        ];
        let grammars = [
            "root ::= \"{\" ws (k ws \":\" ws k ws (\",\" ws k ws \":\" ws k ws)*)? \"}\"\nk ::= \"\\\"\" [a x]* \"\\\"\"\nws ::= [ \\t\\n\\r]*\n",
            "root ::= \"{\" ws (k ws \":\" ws k ws)? \"}\"\nk ::= \"\\\"\" [a x]* \"\\\"\"\nws ::= [ \\t\\n\\r]{0,2}\n",
            "root ::= \"{\" \" \"* (k \" \"* \":\" \" \"* k)? \" \"* \"}\"\nk ::= \"\\\"\" [a x ]* \"\\\"\"\n",
        ];
        grammars_match_the_parser(&tokens, &grammars, 120, 29);
    }

    /// Masks inside keys past declared names (any key but `ab` or `abc`,
    /// then a member's value; a called rule, recursive so not inlined), on
    /// tokens whose characters lead into the key's loop and whose tails
    /// close the key and go on past its rule through the chart,
    /// equal taking each token on the parser: the walk leaves such subtrees
    /// to the analysis of the loop's set.
    #[test]
    fn keys_past_declared_names_match_the_parser() {
        let tokens = [
            &b"{"[..], b"}", b",", b"\"", b":", b"1", b"x", b"a", b"b", b"ab", b"xy", b"\"x", b"x\"", b"xy\":", b"xy\":1",
            b"xy\":1,", b"x\":1}", b"a\":", b"ab\":", b"abc\":1", b"abd\":1,", b"b\":1,\"", "\u{e9}\":".as_bytes(),
            "x\u{e9}\":1}".as_bytes(), b"x\\n\":", b"\\n", b"xy\"", b"\":1", b"\":1,\"", b"\xe4", b"\xb8\xad\":", b"<", b">",
            b"<\"", b"x\">", b"x\">:1",
        ];
        let key = "k ::= \"\\\"\" (\"a\" (\"b\" (\"c\" c+ | [^\"\\\\\\x00-\\x1Fc] c*) | [^\"\\\\\\x00-\\x1Fb] c* | \"\") | [^\"\\\\\\x00-\\x1Fa] c*)? \"\\\"\" | \"<\" k \">\"\nc ::= [^\"\\\\\\x00-\\x1F] | \"\\\\n\"\n";
        let grammars = [format!("root ::= \"{{\" (m (\",\" m)*)? \"}}\"\nm ::= k \":\" \"1\"\n{key}")];
        let grammars: Vec<&str> = grammars.iter().map(String::as_str).collect();
        grammars_match_the_parser(&tokens, &grammars, 120, 21);
    }

    /// Masks where a number that may end inside a token is followed by a
    /// called rule (predicted in the set after each digit: open sets, and
    /// sets that are neither open nor outer after the call takes a byte)
    /// equal taking each token on the parser.
    #[test]
    fn open_sets_match_the_parser() {
        use crate::Constraint;
        let vocab = crate::matcher::short_strings_vocab(b"01;x[],");
        let c = Constraint::gbnf("root ::= v | \"[\" v (\",\" v)* \"]\"\nv ::= [0-1]+ (\"\" | v \";\" | \"[\" v \"]\") | \"x\"\n").unwrap();
        let mut seed = 11u64;
        for _ in 0..40 {
            walk_matches_parser(&c, &vocab, 12, &mut seed, false);
        }
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
