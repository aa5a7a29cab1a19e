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
        let mut trie = TokenTrie { nodes: Vec::with_capacity(1 << 16), tokens: Vec::with_capacity(1 << 16) };
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
        }
        for open in path {
            trie.nodes[open].end = trie.nodes.len() as u32;
        }
        trie
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
    }
}
