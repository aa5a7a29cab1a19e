//! The token trie: every token's bytes in one prefix tree, flattened in
//! depth-first order so a walk is a loop over an array that skips a whole
//! subtree the moment its first byte is rejected.

/// One trie node: the byte on the edge into it, its depth (1 = first byte),
/// the index one past its subtree, and the tokens whose bytes end here.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Node {
    pub byte: u8,
    pub depth: u32,
    pub end: u32,
    pub tok_start: u32,
    pub tok_end: u32,
}

/// Flattened prefix tree over token byte strings.
#[derive(Debug, Default, Clone)]
pub(crate) struct TokenTrie {
    pub nodes: Vec<Node>,
    pub tokens: Vec<u32>,
    /// The root's children (the nodes of depth 1) in order, with their
    /// bytes: a walk that knows which first bytes die goes from one live
    /// child to the next without reading the others.
    pub roots: Vec<(u8, u32)>,
    /// The longest token, in bytes.
    pub longest: u32,
}

/// A block of tokens decided together (llguidance's slices): the tokens
/// whose bytes are all characters of one class, as a mask, and a trie of
/// every other token. Where a grammar position takes any string of the
/// class, the block is allowed at once and only the rest is walked; where
/// it takes any such string of at most `c` characters (a bounded length),
/// the block's tokens of at most `c` characters are ([`Slice::up_to`]).
/// Characters are counted as code points, a cut last one included.
#[derive(Debug)]
pub(crate) struct Slice {
    /// The characters, as `char` ranges.
    pub class: &'static [(char, char)],
    /// Tokens whose bytes are a prefix of a string of `class` characters,
    /// at most 255 of them (`ceil(tokens / 32)` words).
    pub mask: Box<[u32]>,
    /// The longest of them, in characters.
    pub max_chars: usize,
    /// Per number of characters below `SHORT_CHARS`: the tokens of `mask`
    /// with at most that many.
    short: Box<[Box<[u32]>]>,
    /// The tokens of `mask` with at least `SHORT_CHARS` characters, as
    /// `(characters, token)`, most characters first.
    long: Box<[(u8, u32)]>,
    /// The other tokens.
    pub rest: TokenTrie,
    /// The tokens of `rest` past their longest prefix of whole characters
    /// of the class, `split` bytes long. From a set that every character
    /// of the class leads back to, a token goes where its tail does: the
    /// walk takes this trie of tails (shared by many tokens) instead.
    pub tails: TokenTrie,
    /// Per token of `rest`: the length of that prefix (0 past 255 bytes
    /// or when it is the whole token).
    pub split: Box<[u8]>,
    /// Per node of `rest`: whether its path is a prefix of whole characters
    /// of the class of every token below (of at most `split` bytes). Below
    /// such a node whose set every character of the class leads back to,
    /// each token goes where its tail does from that set.
    pub whole: Box<[bool]>,
    /// The tokens of `rest` and those of `mask` with more than `SHORT` bytes.
    pub long_rest: TokenTrie,
    /// Per node of the vocabulary's trie: the most characters of a token
    /// in its subtree, `u8::MAX` when one is not in `mask`. A walk that
    /// allows the tokens of at most `c` characters as a block skips the
    /// subtrees of nodes with at most `c`.
    pub reach: Box<[u8]>,
    /// Per node of the vocabulary's trie: the bytes of the tokens in its
    /// subtree from the node's own byte on, as [`byte_bit`] marks them
    /// (with those of the path above, all their bytes). A walk that allows
    /// the tokens without some characters as a block, from the root or
    /// from a node above, skips the subtrees without them.
    pub bytes: Box<[u128]>,
    /// Per node of the vocabulary's trie: the fewest leading bytes past
    /// which every token of its subtree is a string of the class starting
    /// at a character (`u8::MAX` from 255 on). Below a node of that depth
    /// or more whose set every character of the class leads back to, the
    /// subtree's tokens are allowed whole.
    pub class_from: Box<[u8]>,
    /// The bits of the class's bytes as [`Slice::bytes`] marks them.
    pub class_bits: u128,
    /// Per mark of [`Slice::bytes`] (bit `m`, 128 of them): the tokens of
    /// `mask` with a character so marked, as a mask. A set that only some
    /// strings kill picks out by these the few tokens that may hold one.
    pub marked: Box<[Box<[u32]>]>,
    /// Per mark: how many tokens [`Slice::marked`] holds.
    pub marked_counts: Box<[u32]>,
    /// Per token: its index in the vocabulary trie's `tokens` (`u32::MAX`
    /// for a token without bytes).
    pub positions: Box<[u32]>,
    /// Per node of the vocabulary's trie: the most bytes of a token in its
    /// subtree (`u8::MAX` from 255 on). A walk that leaves the tokens of
    /// at most `n` bytes to another analysis skips the subtrees of at most `n`.
    pub deepest: Box<[u8]>,
    /// Per node of the vocabulary's trie: whether every byte below it is
    /// JSON whitespace. Below a node whose set every whitespace byte leads
    /// back to, its subtree's tokens are allowed whole (the many runs of
    /// spaces, tabs and newlines a vocabulary holds).
    pub blank_below: Box<[bool]>,
}

/// The bytes of JSON whitespace.
pub(crate) const BLANKS: [u8; 4] = [b' ', b'\t', b'\n', b'\r'];

/// The bit of byte `b` in [`Slice::bytes`]: bit `b` for ASCII; for the
/// first byte of a longer character, one of bits 0 to 31 per pair of first
/// bytes (no ASCII byte of the slice has those: controls are out of it);
/// none for a continuation byte (a character is marked by its first).
pub(crate) fn byte_bit(b: u8) -> u128 {
    match b {
        0..0x80 => 1 << b,
        0xC0.. => 1 << ((b - 0xC0) >> 1),
        _ => 0,
    }
}

/// The marks set in `m` (bits of [`byte_bit`]), lowest first.
pub(crate) fn marks(mut m: u128) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        (m != 0).then(|| {
            let b = m.trailing_zeros() as usize;
            m &= m - 1;
            b
        })
    })
}

impl Slice {
    /// Longest token of `mask` left out of [`Slice::long_rest`], in bytes.
    pub const SHORT: usize = 16;
    /// Character counts below which [`Slice::up_to`] copies a mask of its
    /// own (the longer tokens, few, are cleared from `mask`).
    const SHORT_CHARS: usize = 16;

    /// Writes into the first words of `out` the tokens of `mask` with at
    /// most `chars` characters.
    pub fn up_to(&self, chars: usize, out: &mut [u32]) {
        let copy = |out: &mut [u32], m: &[u32]| out.iter_mut().zip(m).for_each(|(o, &m)| *o = m);
        match self.short.get(chars) {
            Some(m) => copy(out, m),
            None => {
                copy(out, &self.mask);
                for &(_, t) in self.long.iter().take_while(|&&(c, _)| c as usize > chars) {
                    if let Some(w) = out.get_mut(t as usize / 32) {
                        *w &= !(1 << (t % 32));
                    }
                }
            }
        }
    }

    /// The tokens of `mask` without a character that [`Slice::bytes`]
    /// marks in `dying`, as a mask: those of [`Slice::mask`] in none of the
    /// dying marks' [`Slice::marked`].
    pub fn without(&self, dying: u128) -> Box<[u32]> {
        let mut all = self.mask.clone();
        for m in marks(dying) {
            all.iter_mut().zip(self.marked[m].iter()).for_each(|(a, &m)| *a &= !m);
        }
        all
    }

    /// The characters a JSON string holds unescaped: all but `"`, `\` and
    /// U+0000 to U+001F.
    /// `trie` is the vocabulary's trie (for [`Slice::reach`]).
    pub fn string_body(tokens: &[Option<Box<[u8]>>], trie: &TokenTrie) -> Slice {
        const CLASS: &[(char, char)] = &[(' ', '!'), ('#', '['), (']', char::MAX)];
        let in_class = |b: &[u8]| {
            // A valid prefix of UTF-8 text (a cut last character is fine)
            // whose ASCII bytes are in the class; every non-ASCII character is.
            let whole = match std::str::from_utf8(b) {
                Ok(_) => true,
                Err(e) => e.error_len().is_none(),
            };
            whole && b.iter().all(|&c| c >= 0x80 || (c >= b' ' && c != b'"' && c != b'\\'))
        };
        let mut mask = vec![0u32; tokens.len().div_ceil(32)].into_boxed_slice();
        let mut chars = vec![0u8; tokens.len()].into_boxed_slice();
        let mut rest: Vec<(&[u8], u32)> = Vec::new();
        let mut long_rest: Vec<(&[u8], u32)> = Vec::new();
        let mut tails: Vec<(&[u8], u32)> = Vec::new();
        let mut split = vec![0u8; tokens.len()].into_boxed_slice();
        for (i, t) in tokens.iter().enumerate() {
            let Some(b) = t.as_deref().filter(|b| !b.is_empty()) else { continue };
            // Characters start at every byte but UTF-8 continuation bytes.
            let n = b.iter().filter(|&&c| c & 0xC0 != 0x80).count();
            if !in_class(b) || n > u8::MAX as usize {
                rest.push((b, i as u32));
                long_rest.push((b, i as u32));
                let valid = std::str::from_utf8(b).map_or_else(|e| e.valid_up_to(), str::len);
                let text = std::str::from_utf8(&b[..valid]).unwrap_or_default();
                let k = text.char_indices().find(|&(_, c)| !in_class(c.encode_utf8(&mut [0; 4]).as_bytes())).map_or(valid, |(k, _)| k);
                // Every tail has a byte (a token of only class characters
                // is here when too long to count).
                let k = if k > u8::MAX as usize || k == b.len() { 0 } else { k };
                split[i] = k as u8;
                tails.push((&b[k..], i as u32));
                continue;
            }
            mask[i / 32] |= 1 << (i % 32);
            chars[i] = n as u8;
            if b.len() > Self::SHORT {
                long_rest.push((b, i as u32));
            }
        }
        rest.sort_unstable();
        long_rest.sort_unstable();
        tails.sort_unstable();
        let build = |v: Vec<(&[u8], u32)>| TokenTrie::from_sorted(v.into_iter().map(|(b, i)| (i, b)));
        let max_chars = chars.iter().copied().max().unwrap_or(0) as usize;
        let mut short = vec![vec![0u32; mask.len()].into_boxed_slice(); Self::SHORT_CHARS];
        let mut long: Vec<(u8, u32)> = Vec::new();
        for (t, &c) in chars.iter().enumerate().filter(|&(_, &c)| c != 0) {
            match short.get_mut(c as usize) {
                Some(m) => m[t / 32] |= 1 << (t % 32),
                None => long.push((c, t as u32)),
            }
        }
        for c in 1..short.len() {
            let (below, at) = short.split_at_mut(c);
            at[0].iter_mut().zip(below[c - 1].iter()).for_each(|(m, &b)| *m |= b);
        }
        long.sort_unstable_by(|a, b| b.cmp(a));
        let mut marked = vec![vec![0u32; mask.len()].into_boxed_slice(); 128].into_boxed_slice();
        for (i, t) in tokens.iter().enumerate().filter(|&(i, _)| mask[i / 32] >> (i % 32) & 1 == 1) {
            for m in marks(t.as_deref().unwrap_or_default().iter().fold(0u128, |m, &b| m | byte_bit(b))) {
                marked[m][i / 32] |= 1 << (i % 32);
            }
        }
        let marked_counts = marked.iter().map(|m| m.iter().map(|w| w.count_ones()).sum()).collect();
        let mut positions = vec![u32::MAX; tokens.len()].into_boxed_slice();
        for (p, &t) in trie.tokens.iter().enumerate() {
            positions[t as usize] = p as u32;
        }
        // Children come after their parent: fill from the last node back.
        let mut reach = vec![0u8; trie.nodes.len()].into_boxed_slice();
        let mut bytes = vec![0u128; trie.nodes.len()].into_boxed_slice();
        let mut class_from = vec![0u8; trie.nodes.len()].into_boxed_slice();
        let mut blank_below = vec![true; trie.nodes.len()].into_boxed_slice();
        let mut deepest = vec![0u8; trie.nodes.len()].into_boxed_slice();
        let mut path: Vec<u8> = Vec::new();
        for (i, node) in trie.nodes.iter().enumerate() {
            path.truncate(node.depth as usize - 1);
            path.push(node.byte);
            bytes[i] = byte_bit(node.byte);
            if node.tok_end > node.tok_start {
                // The suffixes of a string of the class that start at a
                // character are strings of the class: the first that is not.
                let starts = (0..path.len()).rev().filter(|&k| path[k] & 0xC0 != 0x80);
                let k = starts.take_while(|&k| in_class(&path[k..])).last().unwrap_or(path.len());
                class_from[i] = k.min(u8::MAX as usize) as u8;
            }
        }
        for (i, node) in trie.nodes.iter().enumerate().rev() {
            let own = &trie.tokens[node.tok_start as usize..node.tok_end as usize];
            let mut r = own.iter().map(|&t| if chars[t as usize] == 0 { u8::MAX } else { chars[t as usize] }).max().unwrap_or(0);
            if !own.is_empty() {
                deepest[i] = node.depth.min(u8::MAX as u32) as u8;
            }
            let mut child = i + 1;
            while child < node.end as usize {
                r = r.max(reach[child]);
                deepest[i] = deepest[i].max(deepest[child]);
                bytes[i] |= bytes[child];
                class_from[i] = class_from[i].max(class_from[child]);
                blank_below[i] &= blank_below[child] && BLANKS.contains(&trie.nodes[child].byte);
                child = trie.nodes[child].end as usize;
            }
            reach[i] = r;
        }
        let (rest, long_rest, tails) = (build(rest), build(long_rest), build(tails));
        let whole = (0..rest.nodes.len())
            .map(|i| rest.subtree_tokens(i).iter().all(|&t| split[t as usize] as u32 >= rest.nodes[i].depth))
            .collect();
        let class_bits = (b' '..0x80).filter(|&b| in_class(&[b])).chain(0xC2..=0xF4).fold(0, |m, b| m | byte_bit(b));
        Slice { class: CLASS, mask, max_chars, short: short.into(), long: long.into(), rest, tails, split, whole, long_rest, reach, bytes, class_from, class_bits, marked, marked_counts, positions, deepest, blank_below }
    }
}

/// One step of a byte-level automaton that a trie walk drives.
pub(crate) trait Walker {
    /// Advances by `byte` from the current state; on success pushes the new
    /// state and returns true; when the byte is rejected pushes nothing.
    fn push(&mut self, byte: u8) -> Result<bool, crate::MatchError>;
    /// Drops the state the last successful `push` added.
    fn pop(&mut self);
}

impl TokenTrie {
    /// The tokens of node `i`'s subtree (the node's own and its
    /// descendants'), which are stored together.
    pub fn subtree_tokens(&self, i: usize) -> &[u32] {
        &self.tokens[self.subtree_range(i)]
    }

    /// Where [`TokenTrie::subtree_tokens`] lie in `tokens`.
    pub fn subtree_range(&self, i: usize) -> std::ops::Range<usize> {
        let node = &self.nodes[i];
        node.tok_start as usize..self.nodes[node.end as usize - 1].tok_end as usize
    }

    /// Builds the trie over tokens that have bytes (special tokens have none).
    pub fn new(tokens: &[Option<Box<[u8]>>]) -> TokenTrie {
        let mut sorted: Vec<(&[u8], u32)> = tokens
            .iter()
            .enumerate()
            .filter_map(|(i, t)| t.as_deref().filter(|b| !b.is_empty()).map(|b| (b, i as u32)))
            .collect();
        sorted.sort_unstable();
        TokenTrie::from_sorted(sorted.into_iter().map(|(b, i)| (i, b)))
    }

    /// Builds a trie from `(token, bytes)` pairs sorted by bytes; the token
    /// list is filled in the same order.
    pub fn from_sorted<'a>(sorted: impl Iterator<Item = (u32, &'a [u8])>) -> TokenTrie {
        let mut trie = TokenTrie::default();
        let mut path: Vec<usize> = Vec::new();
        let mut prev: &[u8] = &[];
        for (tok, b) in sorted {
            let common = prev.iter().zip(b).take_while(|(x, y)| x == y).count();
            for open in path.drain(common..) {
                trie.nodes[open].end = trie.nodes.len() as u32;
            }
            for (d, &byte) in b.iter().enumerate().skip(common) {
                path.push(trie.nodes.len());
                let at = trie.tokens.len() as u32;
                trie.nodes.push(Node { byte, depth: d as u32 + 1, end: 0, tok_start: at, tok_end: at });
            }
            if let Some(&last) = path.last() {
                trie.nodes[last].tok_end += 1;
                trie.tokens.push(tok);
            }
            prev = b;
            trie.longest = trie.longest.max(b.len() as u32);
        }
        for open in path {
            trie.nodes[open].end = trie.nodes.len() as u32;
        }
        let mut i = 0;
        while let Some(node) = trie.nodes.get(i) {
            trie.roots.push((node.byte, i as u32));
            i = node.end as usize;
        }
        trie
    }

    /// The longest token whose bytes begin `text` (the first of equal ones).
    pub fn longest_prefix(&self, text: &[u8]) -> Option<u32> {
        let (mut i, mut matched, mut best) = (0, 0, None);
        while let Some(node) = self.nodes.get(i) {
            // Past the children of the last matched node: no longer a prefix.
            if node.depth as usize <= matched {
                break;
            }
            if text.get(matched) == Some(&node.byte) {
                matched += 1;
                if let Some(&t) = self.tokens.get(node.tok_start as usize..node.tok_end as usize).and_then(<[u32]>::first) {
                    best = Some(t);
                }
                i += 1;
            } else {
                i = node.end as usize;
            }
        }
        best
    }

    /// Walks every token through `walker`, setting the bit of each token whose
    /// bytes are all accepted. Returns the number of nodes visited.
    pub fn walk<W: Walker>(&self, walker: &mut W, mask: &mut [u32]) -> Result<usize, crate::MatchError> {
        let mut depth = 0u32;
        let mut i = 0usize;
        let mut visited = 0usize;
        let result = loop {
            let Some(node) = self.nodes.get(i) else { break Ok(visited) };
            while depth >= node.depth {
                walker.pop();
                depth -= 1;
            }
            visited += 1;
            match walker.push(node.byte) {
                Ok(true) => {
                    depth += 1;
                    for &t in &self.tokens[node.tok_start as usize..node.tok_end as usize] {
                        mask[(t / 32) as usize] |= 1 << (t % 32);
                    }
                    i += 1;
                }
                Ok(false) => i = node.end as usize,
                Err(e) => break Err(e),
            }
        };
        for _ in 0..depth {
            walker.pop();
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trie_shape() {
        let toks: Vec<Option<Box<[u8]>>> =
            ["ab", "a", "b", "abc", "ab"].iter().map(|s| Some(s.as_bytes().into())).collect();
        let t = TokenTrie::new(&toks);
        let shape: Vec<(u8, u32, u32, usize)> =
            t.nodes.iter().map(|n| (n.byte, n.depth, n.end, (n.tok_end - n.tok_start) as usize)).collect();
        assert_eq!(shape, vec![(b'a', 1, 3, 1), (b'b', 2, 3, 2), (b'c', 3, 3, 1), (b'b', 1, 4, 1)]);
        assert_eq!(t.tokens, vec![1, 0, 4, 3, 2]);
        assert_eq!(t.roots, vec![(b'a', 0), (b'b', 3)]);
        let longest = |text: &[u8]| t.longest_prefix(text);
        assert_eq!(longest(b"abd"), Some(0));
        assert_eq!(longest(b"abcx"), Some(3));
        assert_eq!(longest(b"bz"), Some(2));
        assert_eq!(longest(b"a"), Some(1));
        assert_eq!(longest(b"c"), None);
        assert_eq!(longest(b""), None);
    }

    #[test]
    fn string_body_slice() {
        let toks: Vec<&[u8]> = vec![
            b"ab c!",          // 0 in
            "é中".as_bytes(),   // 1 in
            b"\xe4\xb8",       // 2 in: a cut character
            b"a\"",            // 3 out: quote
            b"\\n",            // 4 out: backslash
            b"\n",             // 5 out: control
            b"\xb8",           // 6 out: starts inside a character
            b"\xed\xa0",       // 7 out: a surrogate's start
            b"",               // 8 no bytes
        ];
        let toks: Vec<Option<Box<[u8]>>> = toks.into_iter().map(|b| Some(b.into())).collect();
        let s = Slice::string_body(&toks, &TokenTrie::new(&toks));
        assert_eq!(s.mask[0], 0b111);
        let mut rest = s.rest.tokens.clone();
        rest.sort_unstable();
        assert_eq!(rest, vec![3, 4, 5, 6, 7]);
        // `a"` is `a` then the tail `"`; the others have no such prefix.
        assert_eq!(&s.split[3..8], &[1, 0, 0, 0, 0]);
        assert_eq!(s.tails.nodes.len(), 7);
    }

    #[test]
    fn up_to_counts_characters() {
        // Lengths on both sides of `SHORT_CHARS`, in ASCII and in 2-byte characters.
        let mut toks: Vec<Vec<u8>> = (1..40).map(|n| "a".repeat(n).into_bytes()).collect();
        toks.extend((1..40).map(|n| "é".repeat(n).into_bytes()));
        toks.extend([b"a\"".to_vec(), b"\xe4\xb8".to_vec(), "x中".as_bytes().to_vec()]);
        let chars = |b: &[u8]| b.iter().filter(|&&c| c & 0xC0 != 0x80).count();
        let toks: Vec<Option<Box<[u8]>>> = toks.into_iter().map(|b| Some(b.into())).collect();
        let s = Slice::string_body(&toks, &TokenTrie::new(&toks));
        assert_eq!(s.max_chars, 39);
        for c in 0..45 {
            let mut got = vec![u32::MAX; s.mask.len()];
            s.up_to(c, &mut got);
            let mut want = vec![0u32; s.mask.len()];
            for (t, b) in toks.iter().enumerate() {
                let b = b.as_deref().unwrap();
                if s.mask[t / 32] >> (t % 32) & 1 == 1 && chars(b) <= c {
                    want[t / 32] |= 1 << (t % 32);
                }
            }
            assert_eq!(got, want, "up to {c} characters");
        }
    }

    #[test]
    fn tokens_without_characters_are_the_slice_s_tokens_free_of_them() {
        // Words with and without the dying characters, in every place,
        // runs of one character, cut and whole characters of two and three
        // bytes (`é` and `ê` share a first byte, `中` has one of its own),
        // and tokens out of the slice.
        let mut toks: Vec<Vec<u8>> = ["a", "ab", "ba", "a.b", ".ab", "ab.", "a b", " ", "-", "a-", "é", "aé", "ê", "中", "a中b"]
            .iter()
            .map(|s| s.as_bytes().to_vec())
            .collect();
        toks.extend((1..30).map(|n| "b".repeat(n).into_bytes()));
        toks.extend([b"\xe4\xb8".to_vec(), b"a\xc3".to_vec(), b"a\"".to_vec(), b"\\n".to_vec(), b"\x01".to_vec()]);
        let toks: Vec<Option<Box<[u8]>>> = toks.into_iter().map(|b| Some(b.into())).collect();
        let trie = TokenTrie::new(&toks);
        let s = Slice::string_body(&toks, &trie);
        let dying_sets = [0, byte_bit(b'.'), byte_bit(b'.') | byte_bit(b' ') | byte_bit(b'-'), byte_bit(0xC3), byte_bit(0xE4) | byte_bit(b'a')];
        for dying in dying_sets {
            let all = s.without(dying);
            let got: Vec<u32> = (0..toks.len() as u32).filter(|&t| all[t as usize / 32] >> (t % 32) & 1 == 1).collect();
            let want: Vec<u32> = toks
                .iter()
                .enumerate()
                .filter(|&(t, _)| s.mask[t / 32] >> (t % 32) & 1 == 1)
                .map(|(t, b)| (b.as_deref().unwrap(), t as u32))
                .filter(|(b, _)| b.iter().all(|&c| byte_bit(c) & dying == 0))
                .map(|(_, t)| t)
                .collect();
            assert_eq!(got, want, "without {dying:#x}");
        }
    }

    #[test]
    fn class_from_counts_the_bytes_before_a_string_of_the_class() {
        let toks: Vec<&[u8]> = vec![b"\"ab", b"ab", b"a\"", b"\"\xe4\xb8", b"\xb8", "x\"é".as_bytes(), b"\"a\\b"];
        let toks: Vec<Option<Box<[u8]>>> = toks.into_iter().map(|b| Some(b.into())).collect();
        let trie = TokenTrie::new(&toks);
        let s = Slice::string_body(&toks, &trie);
        // Per token, at the node where it ends (a leaf here).
        let from = |t: u32| {
            let i = trie.nodes.iter().position(|n| trie.tokens[n.tok_start as usize..n.tok_end as usize].contains(&t)).unwrap();
            s.class_from[i]
        };
        assert_eq!((0..7).map(from).collect::<Vec<_>>(), vec![1, 0, 2, 1, 1, 2, 3]);
    }
}
