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
//! states of a string of bounded length (patterned, or the copies of a
//! repetition), far from its bound, make the same sets at every count.
//! Nearer the bound a state stands in for another only for strings shorter
//! than some tokens: the tokens that short go as they do in the other's
//! analysis, shared by every count, and the walk takes only the subtrees of
//! the trie that hold a longer one (of those, the slice's tokens go by
//! their characters where no string of more than the bound lives).
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
//! that surely live are allowed by whole subtrees of the trie; where those
//! characters die wherever the others lead, and the others live up to a
//! bound and no further (a string of one class, of bounded length), the
//! slice's tokens go by their characters alone: those without a dying one,
//! up to the bound, come from a list made once per class, and only the
//! other tokens are walked. Where a
//! walk of the whole trie reaches a set that some characters lead back to
//! (a key past the declared names, a pattern's `[^-]*`), the subtrees of
//! tokens whose rest is made of them are allowed whole too, while none of
//! the others is on the path since. Where only some sequences of
//! characters kill a set (a second match of exactly one of several
//! unanchored patterns), its kills are found once: per class of killing
//! strings, the fewest characters and the characters they need. Below it,
//! a subtree is allowed whole when no string of the characters its tokens
//! hold past the set, of no more than they have, needs no other: the long
//! tokens' last bytes, and the tokens without some letter of each killing
//! word. (Where the kills are too many to find, every string longer than
//! those explored stands for them.) Where a walk of
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
//!
//! [`TokenCache`] and [`Analysis`] are here; each job has a file of its
//! own: `analyze` (the walk of the token trie from a group's set), `dfa`
//! (the lazily built DFA over outer and open sets), `walker` (the trie
//! walker that follows it), `characters` (walks by the string slice's
//! characters rather than bytes), `kills` (what kills a set) and `living`
//! (the same question asked of the rule's automaton).

mod analyze;
mod characters;
mod dfa;
mod kills;
mod living;
mod walker;

use analyze::{analyze, CharacterLists, Follow, Walked};
use characters::{byte_sequences, ByteSequence};
use dfa::SetDfa;
use crate::error::MatchError;
use crate::grammar::{Chart, ChartWalker, FollowSets, Grammar, ShapeScratch};
use crate::trie::{byte_bit, Slice, TokenTrie};
use crate::vocab::Vocabulary;
use crate::hash::FastMap;
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
    /// Per set of dying characters: the slice's tokens without them, for
    /// the analyses that decide the slice by characters (made on first use).
    lists: CharacterLists,
    /// The local chart of the analyses, kept between them: it grows a
    /// mark per automaton state it meets, once.
    local: Option<Chart>,
    /// Scratch of [`Grammar::shape`].
    shape: ShapeScratch,
    bytes: usize,
}

impl TokenCache {
    /// Approximate heap bytes held.
    pub fn memory(&self) -> usize {
        self.bytes
            + self.dfa.memory()
            + self.local.as_ref().map_or(0, Chart::memory)
            + self.shape.memory()
            + self.lists.memory()
    }

    /// The analyses of the groups of byte items in the newest set of
    /// `chart`, each with its rule and origin: cached, or made here. `fuel`
    /// bounds the Earley items created by analyses. The caller holds the
    /// cache only for this; [`fill`] applies the analyses to the chart alone,
    /// so that matchers sharing a cache fill their masks at the same time.
    pub fn analyses(
        &mut self,
        g: &Grammar,
        vocab: &Vocabulary,
        chart: &Chart,
        fuel: &mut usize,
        limit: usize,
    ) -> Result<Vec<(Arc<Analysis>, u32, u32)>, MatchError> {
        let mut items: Vec<(u32, u32, u32)> = chart.byte_items(g).collect();
        items.sort_unstable();
        let mut out = Vec::new();
        let mut i = 0;
        while i < items.len() {
            let (rule, origin, _) = items[i];
            let j = i + items[i..].iter().take_while(|x| x.0 == rule && x.1 == origin).count();
            let states: Vec<u32> = items[i..j].iter().map(|x| x.2).collect();
            i = j;
            out.push((self.analysis(g, vocab, rule, states, fuel, limit)?, rule, origin));
        }
        Ok(out)
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
        let whole = g.shape(&states, &mut self.shape);
        let shared = whole.then(|| self.shapes.get(self.shape.out.as_slice())).flatten().and_then(|same| {
            same.iter().find(|a| a.follow.is_none_or(|f| f == follow.get(g))).cloned()
        });
        // (Kept apart: the analyses made below write shapes of their own.)
        let shape: Option<Box<[u32]>> = (whole && shared.is_none()).then(|| self.shape.out.as_slice().into());
        let a = match shared {
            Some(a) => a,
            None => {
                // States that others stand in for, for strings shorter than
                // the longest tokens (a string near its length bound): the
                // tokens that short go as they do from those others, whose
                // analysis serves every count; the walk takes the longer,
                // few when they are longer than `Slice::SHORT` (nearer the
                // bound the walk is short and takes every token).
                let asked_here = follow.set;
                let short = match g.stand_in_bound(&states) {
                    Some(b) if b as usize >= Slice::SHORT => {
                        let twins = g.stand_in(&states, b).unwrap_or_default();
                        Some((b, self.analysis(g, vocab, rule, twins, fuel, limit)?))
                    }
                    _ => None,
                };
                let mut follow = Follow { sets: self.follow.get_or_insert_with(|| g.follow_sets()), rule, set: asked_here };
                let local = self.local.get_or_insert_with(Chart::local);
                let longer_than = short.as_ref().map_or(0, |s| s.0);
                let walked = analyze(g, vocab, &mut self.dfa, local, &self.slice_seqs, &mut self.lists, &states, longer_than, &mut follow, fuel, limit);
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
                if let Some((b, twins)) = short {
                    let fits = |t: u32| vocab.token_bytes(t).is_some_and(|x| x.len() as u32 <= b);
                    twins.allowed.add_up_to(&mut allowed, vocab, b);
                    pending.extend(twins.suffix_ends(vocab).filter(|&(t, _)| fits(t)));
                    asked = asked.or(twins.follow);
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

/// Fills `mask` for the newest set of `chart` from its [`TokenCache::analyses`]:
/// each group's cached tokens, then its suffixes walked through the chart.
/// `fuel` bounds the Earley items created.
pub(crate) fn fill(
    analyses: &[(Arc<Analysis>, u32, u32)],
    g: &Grammar,
    chart: &mut Chart,
    mask: &mut [u32],
    fuel: &mut usize,
    limit: usize,
) -> Result<(), MatchError> {
    for (a, rule, origin) in analyses {
        a.allowed.add_to(mask);
        if !a.suffixes.nodes.is_empty() && chart.push_end_of(g, *rule, *origin, fuel)? {
            let mut w = ChartWalker { g, chart: &mut *chart, fuel: *fuel, limit };
            let r = a.suffixes.walk(&mut w, mask);
            *fuel = w.fuel;
            chart.pop();
            r?;
        }
    }
    Ok(())
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

/// Words of a bitmask checked together for being empty (one vector OR).
const ZERO_CHUNK: usize = 16;

impl Tokens {
    /// The set of the tokens whose bits `bits` has.
    fn new(bits: Box<[u32]>) -> Tokens {
        let mut tokens = Vec::new();
        // Most words of a sparse set are empty: they are skipped a chunk
        // at a time.
        for (c, chunk) in bits.chunks(ZERO_CHUNK).enumerate() {
            if chunk.iter().fold(0, |a, &w| a | w) == 0 {
                continue;
            }
            for (j, &w) in chunk.iter().enumerate() {
                let mut w = w;
                while w != 0 {
                    if tokens.len() == SPARSE_MAX {
                        return Tokens::Dense(bits);
                    }
                    tokens.push((c * ZERO_CHUNK + j) as u32 * 32 + w.trailing_zeros());
                    w &= w - 1;
                }
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

    /// Adds to bitmask `mask` the tokens of the set of at most `bytes`
    /// bytes (at least [`Slice::SHORT`]): the whole set, less the few
    /// longer tokens it adds.
    fn add_up_to(&self, mask: &mut [u32], vocab: &Vocabulary, bytes: u32) {
        let bit = |mask: &[u32], t: u32| mask[(t / 32) as usize] >> (t % 32) & 1 == 1;
        let added: Vec<u32> = vocab.longer_than(bytes).filter(|&t| self.contains(t) && !bit(mask, t)).collect();
        self.add_to(mask);
        for t in added {
            mask[(t / 32) as usize] &= !(1 << (t % 32));
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

#[cfg(test)]
mod tests {
    use super::*;
    use super::living::Living;
    use super::walker::SetWalker;

    /// A class's tokens of at most a count of characters are those of the
    /// slice, with that many characters or fewer, and none of the dying ones.
    #[test]
    fn character_lists_hold_the_tokens_of_the_class_up_to_a_count() {
        use crate::trie::{byte_bit, TokenTrie};
        let mut rng = crate::rng::Rng::new(3);
        let letters = ["a", "b", ".", "-", "é", "中", "\"", "\\"];
        let toks: Vec<Option<Box<[u8]>>> =
            (0..400).map(|_| Some((0..1 + rng.below(20)).flat_map(|_| letters[rng.below(letters.len())].bytes()).collect())).collect();
        let slice = Slice::string_body(&toks, &TokenTrie::new(&toks));
        let mut lists = CharacterLists::default();
        let dying_sets = [0, byte_bit(b'.'), byte_bit(b'.') | byte_bit(b'-'), byte_bit("é".as_bytes()[0]) | byte_bit(b'a')];
        for dying in dying_sets {
            for chars in [0u8, 1, 3, 15, 16, 17, 30] {
                let mut mask = vec![0u32; slice.mask.len()];
                lists.write_up_to(&slice, dying, chars, &mut mask);
                for (t, b) in toks.iter().enumerate() {
                    let b = b.as_deref().unwrap_or_default();
                    let count = b.iter().filter(|&&c| c & 0xC0 != 0x80).count();
                    let want = slice.mask[t / 32] >> (t % 32) & 1 == 1 && count <= chars as usize && b.iter().all(|&c| byte_bit(c) & dying == 0);
                    assert_eq!(mask[t / 32] >> (t % 32) & 1 == 1, want, "{:?}, dying {dying:#x}, {chars} characters", String::from_utf8_lossy(b));
                }
            }
        }
    }

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
    /// bound) and near the bound, where they may not but for tokens short
    /// enough, whose longer ones (past [`Slice::SHORT`] bytes) are walked
    /// alone. Every fourth walk takes the last token allowed: one character
    /// at a time.
    #[test]
    fn bounded_patterns_match_the_parser() {
        use crate::Vocabulary;
        let tokens = [
            &b"\""[..], b"a", b"b", b"ab", b"abc", b"abcab", b"aaaaaaaa", b"@", b"a@b", b"b@", b".", b".uk", b"a.b", b"b.uk",
            b"a\"", b"b.uk\"", b"uk", b"u", b"k", b" ", b"a b", b"\\n", "é".as_bytes(), "aé".as_bytes(), "中".as_bytes(),
            b"\xe4", b"\xb8\xad", "é@".as_bytes(), b"\"a", b"\"ab@", b"abcabcabcabcabcabcab", b"a b c a b c a b c a b", b" abcabcabcabcabcabc",
            b"abc abc abc abc abc abc", b"ab@ab.ab.ab.ab.ab.ab.uk", b"a b",
        ];
        let vocab = std::sync::Arc::new(Vocabulary::from_token_bytes(tokens.iter().map(|b| Some(b.to_vec())).collect()));
        let schemas = [
            serde_json::json!({"type": "string", "pattern": "^[a-c]+@[a-c]+(\\.[a-c]+)*$", "minLength": 3, "maxLength": 40}),
            serde_json::json!({"type": "string", "pattern": "^[^@\\s]+@[^@.\\s]+(\\.[^@.\\s]*)*\\.uk", "minLength": 5, "maxLength": 30}),
            serde_json::json!({"type": "string", "pattern": "^[a-c]+(?: [a-c]+){0,7}$", "maxLength": 50}),
        ];
        stand_ins_match_the_parser(&schemas, &vocab, 72, 60, 11, 4);
    }

    /// Masks inside plain strings of bounded length (the copies of a
    /// repetition: optional ones, required ones before them, blocks of a
    /// thousand), whose counts far from the bound stand in for one another,
    /// equal taking each token on the parser, near the bounds too.
    #[test]
    fn bounded_repetitions_match_the_parser() {
        use crate::Vocabulary;
        let tokens = [
            &b"\""[..], b"a", b"b", b"ab", b"abc", b"abcab", b"aaaaaaaa", b" ", b"a b", b"\\n", b"a\\n", b"\\u00e9", b"a\\u",
            "é".as_bytes(), "aé".as_bytes(), "中".as_bytes(), b"\xe4", b"\xb8\xad", b"a\"", b"abc\"", b"\"a", b"abcabcabcabcabcabcab",
            b"a b c a b c a b c a b", b"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"",
        ];
        let vocab = std::sync::Arc::new(Vocabulary::from_token_bytes(tokens.iter().map(|b| Some(b.to_vec())).collect()));
        let schemas = [
            serde_json::json!({"type": "string", "maxLength": 60}),
            serde_json::json!({"type": "string", "minLength": 45, "maxLength": 70}),
            serde_json::json!({"type": "string", "minLength": 1001, "maxLength": 2600}),
            serde_json::json!({"type": "array", "items": {"type": "string", "maxLength": 50}}),
        ];
        stand_ins_match_the_parser(&schemas, &vocab, 80, 70, 17, 5);
    }

    /// Masks inside strings of counted words (a pattern's repetition of
    /// words and spaces, optional copies and required ones), whose copies
    /// far from the count's bound stand in for one another inside words
    /// too, for as many bytes as the copies left take at least, equal
    /// taking each token on the parser, near the bounds too. Every fourth
    /// walk takes the last token allowed: the one with the most words.
    #[test]
    fn counted_words_match_the_parser() {
        use crate::Vocabulary;
        let tokens = [
            &b"\""[..], b"[", b"]", b",", b"\",", b"a", b"b", b"ab", b"abc", b" ", b"  ", b"a ", b" a", b"a b", b"\\n", b"a\\n", b"\\u00e9",
            "é".as_bytes(), "é ".as_bytes(), b"\xc3", b"\xa9 ", b"a\"", b"a,", b"a,b", b"a b\"", b"a b c a", b"abc abc abc abc",
            b"a,b,c,a,b,c,", b"a b c a b c a b c a b",
        ];
        // Words of one letter, as many as a token of each length holds.
        let words = (1..16).flat_map(|k| [" a".repeat(k), "a,".repeat(k), "a ".repeat(k)]);
        let tokens = tokens.iter().map(|b| Some(b.to_vec())).chain(words.map(|w| Some(w.into_bytes())));
        let vocab = std::sync::Arc::new(Vocabulary::from_token_bytes(tokens.collect()));
        let schemas = [
            serde_json::json!({"type": "string", "pattern": "^(?:[a-c]+ +){0,24}[a-c]+$"}),
            serde_json::json!({"type": "string", "pattern": "^(?:\\S+\\s+){3,30}\\S+$"}),
            serde_json::json!({"type": "array", "items": {"type": "string", "pattern": "^(?:[a-c]+,){20}[a-c]$"}}),
        ];
        stand_ins_match_the_parser(&schemas, &vocab, 60, 60, 23, 4);
    }

    /// Masks inside strings that only some sequences of characters kill
    /// (exactly one of two unanchored patterns: a string dies once it holds
    /// both), where tokens short enough past the path surely live and the
    /// walk allows their subtrees whole, equal taking each token on the
    /// parser.
    #[test]
    fn strings_killed_by_sequences_match_the_parser() {
        use crate::{Constraint, Vocabulary};
        let tokens = [
            &b"["[..], b"]", b",", b"\"", b"\",", b"\"]", b"a", b"b", b"c", b"x", b"xx", b"xxxx", b"xxxxxxxx", b"ab", b"ca", b"cab",
            b"abx", b"xxab", b"xcxx", b"x\"", b"ab\"", b"ca\"]", b"cxxxxxxxa", b"xxxxxxxca", b"xxxxxxxxab", b"bxxxxxxxxxc", b"xaxbxc",
            "é".as_bytes(), "éab".as_bytes(), "xxé".as_bytes(), b"\xc3", b"\xa9ab", b"a\\n", b"\\n",
        ];
        let vocab = std::sync::Arc::new(Vocabulary::from_token_bytes(tokens.iter().map(|b| Some(b.to_vec())).collect()));
        let schema = serde_json::json!({"type": "array", "items": {"type": "string", "oneOf": [{"pattern": "ab"}, {"pattern": "ca"}]}});
        let (c, _) = Constraint::json_schema(&schema, &Default::default()).unwrap();
        let mut seed = 3u64;
        for i in 0..60 {
            walk_matches_parser(&c, &vocab, 40, &mut seed, i % 5 == 4);
        }
    }

    /// Masks inside strings that only words of several characters kill
    /// (exactly one of three unanchored patterns), over random tokens of a
    /// few letters, some holding every letter of a killing word and some
    /// not, equal taking each token on the parser: the walk allows whole the
    /// subtrees whose characters past a set cannot spell what kills it.
    #[test]
    fn strings_killed_by_words_match_the_parser() {
        use crate::{Constraint, Vocabulary};
        let mut rng = crate::rng::Rng::new(11);
        let letters = ["a", "b", "c", "d", "e", "x", "é"];
        let mut tokens: Vec<Vec<u8>> = [&b"["[..], b"]", b",", b"\"", b"\",", b"\"]", b"x\"", b"ab\""].iter().map(|t| t.to_vec()).collect();
        tokens.extend(letters.iter().map(|l| l.as_bytes().to_vec()));
        for _ in 0..400 {
            let n = 2 + rng.below(10);
            tokens.push((0..n).flat_map(|_| letters[rng.below(letters.len())].bytes()).collect());
        }
        tokens.sort();
        tokens.dedup();
        let vocab = std::sync::Arc::new(Vocabulary::from_token_bytes(tokens.into_iter().map(Some).collect()));
        let schema = serde_json::json!({"type": "array", "items": {"type": "string", "oneOf": [{"pattern": "abc"}, {"pattern": "cd"}, {"pattern": "eéa"}]}});
        let (c, _) = Constraint::json_schema(&schema, &Default::default()).unwrap();
        let mut seed = 7u64;
        for i in 0..40 {
            walk_matches_parser(&c, &vocab, 30, &mut seed, i % 5 == 4);
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

    /// Takes `walks` walks of at most `steps` tokens (see
    /// [`walk_matches_parser`]), each on a fresh compile of the next of
    /// `schemas`, whose grammars must have states standing in for others;
    /// every `last`-th walk takes the last token allowed.
    fn stand_ins_match_the_parser(schemas: &[serde_json::Value], vocab: &std::sync::Arc<crate::Vocabulary>, walks: usize, steps: usize, mut seed: u64, last: usize) {
        for i in 0..walks {
            let (c, _) = crate::Constraint::json_schema(&schemas[i % schemas.len()], &Default::default()).unwrap();
            let crate::constraint::Program::Grammar(g) = c.program() else { panic!("a schema compiles to a grammar") };
            assert!(g.stand_in_count() > 0);
            walk_matches_parser(&c, vocab, steps, &mut seed, i % last == last - 1);
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

    /// Masks in rules of the slice's characters that may end part-way
    /// through a token and be followed by more of them (words of bounded
    /// and unbounded length between spaces or dots, outside any string,
    /// inline or called), on tokens that cross from one word into the
    /// next, equal taking each token on the parser: such a rule's tokens
    /// are not decided by their characters alone.
    #[test]
    fn words_that_end_their_rule_match_the_parser() {
        let tokens = [
            &b"a"[..], b"b", b"ab", b"abc", b"abcd", b"abcde", b" ", b"a b", b"ab c", b"abc d", b" ab", b"b ", b"ab ", b".",
            b"a.b", b"ab.", b"a..", b"ba b", b"aaaa", b"aaaaa", b" a b",
        ];
        // (Left recursion keeps a word a rule of its own.)
        let grammars = [
            "root ::= w (\" \" w)*\nw ::= [a-c]{1,4}\n",
            "root ::= w (\" \" w)*\nw ::= w [a-c] | [a-c]\n",
            "root ::= w (\".\" w){0,3}\nw ::= w [ab] | [ab] [ab]\n",
        ];
        grammars_match_the_parser(&tokens, &grammars, 60, 5);
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
