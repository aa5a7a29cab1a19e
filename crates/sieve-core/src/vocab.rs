//! Token id -> exact bytes, from a tokenizer.json, plus the token trie every
//! mask walks.

use crate::error::VocabError;
use crate::trie::{Slice, TokenTrie};
use serde::Deserialize;
use std::borrow::Cow;

/// Token names that are taken as end-of-sequence when the caller does not
/// choose (see [`Vocabulary::with_eos_ids`]).
const EOS_NAMES: &[&str] = &["</s>", "<|endoftext|>", "<|end_of_text|>", "<|eot_id|>", "<|im_end|>", "<eos>"];

/// A tokenizer's vocabulary as bytes: what each token id writes into the
/// output. Built once per tokenizer and shared (wrap it in an `Arc`) by every
/// constraint and matcher.
///
/// Special tokens (BOS, EOS, chat markers) have no bytes and are never allowed
/// by a mask, except the end-of-sequence ids when the constraint accepts.
/// Ids from `len()` up to `width()` are padding and never allowed.
#[derive(Debug)]
pub struct Vocabulary {
    tokens: Vec<Option<Box<[u8]>>>,
    eos: Vec<u32>,
    width: usize,
    trie: TokenTrie,
    /// Built with the trie (vocabulary preparation), not by the first
    /// grammar mask, which would take milliseconds longer.
    string_slice: Slice,
    /// The tokens of more than [`Slice::SHORT`] bytes, longest first, with
    /// their lengths: the few a set of tokens of at most some length leaves
    /// out.
    longest: Box<[(u32, u32)]>,
}

/// How the vocabulary strings of a tokenizer.json encode bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenEncoding {
    /// GPT-2 style: each byte is one printable char (`Ġ` for space).
    ByteLevel,
    /// SentencePiece: `▁` for space, `<0xNN>` byte fallback, else UTF-8.
    SentencePiece,
}

impl Vocabulary {
    /// Builds a vocabulary from explicit token bytes (`None` = special token).
    /// The logits width is the number of tokens; no end-of-sequence id is set.
    pub fn from_token_bytes(tokens: Vec<Option<Vec<u8>>>) -> Vocabulary {
        Self::assemble(tokens.into_iter().map(|t| t.map(Vec::into_boxed_slice)).collect(), Vec::new())
    }

    /// Parses a Hugging Face tokenizer.json (BPE byte-level or SentencePiece
    /// style). End-of-sequence ids default to the special tokens named
    /// `</s>`, `<|endoftext|>`, `<|end_of_text|>`, `<|eot_id|>`, `<|im_end|>`
    /// or `<eos>` that the file has.
    pub fn from_tokenizer_json(json: &str) -> Result<Vocabulary, VocabError> {
        let file: TokenizerFile<'_> =
            serde_json::from_str(json).map_err(|e| VocabError::Json { message: e.to_string() })?;
        let kind = file.model.kind.as_deref().unwrap_or("BPE");
        if kind != "BPE" {
            return Err(VocabError::Unsupported { model: kind.to_string() });
        }
        let encoding = TokenEncoding::of(file.decoder.as_ref(), file.pre_tokenizer.as_ref());
        let n = file
            .model
            .vocab
            .iter()
            .map(|(_, id)| id)
            .chain(file.added_tokens.iter().map(|a| &a.id))
            .map(|&id| id as usize + 1)
            .max()
            .unwrap_or(0);
        if n > 1 << 24 {
            return Err(VocabError::BadId { id: n as u32 - 1, reason: "ids above 2^24 are not supported" });
        }
        let mut tokens: Vec<Option<Box<[u8]>>> = vec![None; n];
        let mut seen = vec![false; n];
        for (tok, id) in &file.model.vocab {
            let id = *id;
            if std::mem::replace(&mut seen[id as usize], true) {
                return Err(VocabError::BadId { id, reason: "used twice" });
            }
            let bytes = encoding
                .decode(tok)
                .ok_or_else(|| VocabError::BadToken { id, token: tok.to_string(), reason: "not a byte-level string" })?;
            tokens[id as usize] = Some(bytes.into_boxed_slice());
        }
        let mut eos = Vec::new();
        for a in &file.added_tokens {
            // Added tokens override the model's entry for the same id.
            tokens[a.id as usize] = if a.special {
                if EOS_NAMES.contains(&a.content.as_ref()) {
                    eos.push(a.id);
                }
                None
            } else {
                Some(a.content.as_bytes().into())
            };
        }
        Ok(Self::assemble(tokens, eos))
    }

    fn assemble(tokens: Vec<Option<Box<[u8]>>>, mut eos: Vec<u32>) -> Vocabulary {
        eos.sort_unstable();
        eos.dedup();
        let trie = TokenTrie::new(&tokens);
        let width = tokens.len();
        let string_slice = Slice::string_body(&tokens, &trie);
        let mut longest: Vec<(u32, u32)> = (0u32..)
            .zip(&tokens)
            .filter_map(|(t, b)| b.as_ref().map(|b| (b.len() as u32, t)))
            .filter(|&(n, _)| n as usize > Slice::SHORT)
            .collect();
        longest.sort_unstable_by(|a, b| b.cmp(a));
        Vocabulary { tokens, eos, width, trie, string_slice, longest: longest.into_boxed_slice() }
    }

    /// Sets the end-of-sequence ids (one or several; may be empty).
    pub fn with_eos_ids(mut self, ids: &[u32]) -> Result<Vocabulary, VocabError> {
        if let Some(&id) = ids.iter().find(|&&id| id as usize >= self.tokens.len()) {
            return Err(VocabError::Eos { id });
        }
        self.eos = ids.to_vec();
        self.eos.sort_unstable();
        self.eos.dedup();
        Ok(self)
    }

    /// Sets the logits width (at least `len()`); ids past `len()` are padding.
    pub fn with_width(mut self, width: usize) -> Result<Vocabulary, VocabError> {
        if width < self.tokens.len() {
            return Err(VocabError::Width { width, vocab: self.tokens.len() });
        }
        self.width = width;
        Ok(self)
    }

    /// Number of token ids the tokenizer defines.
    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    /// True when the vocabulary has no tokens.
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    /// Logits width: the number of bits a mask covers.
    pub fn width(&self) -> usize {
        self.width
    }

    /// Words in one mask: `ceil(width / 32)`.
    pub fn mask_words(&self) -> usize {
        self.width.div_ceil(32)
    }

    /// The bytes token `id` writes, or `None` for special, unknown and padding ids.
    pub fn token_bytes(&self, id: u32) -> Option<&[u8]> {
        self.tokens.get(id as usize).and_then(|t| t.as_deref())
    }

    /// The tokens of more than `bytes` bytes, longest first; `bytes` is at
    /// least [`Slice::SHORT`] (the tokens up to it are not listed).
    pub(crate) fn longer_than(&self, bytes: u32) -> impl Iterator<Item = u32> + '_ {
        debug_assert!(bytes as usize >= Slice::SHORT);
        self.longest.iter().take_while(move |x| x.0 > bytes).map(|x| x.1)
    }

    /// The end-of-sequence ids.
    pub fn eos_ids(&self) -> &[u32] {
        &self.eos
    }

    /// True when `id` is an end-of-sequence id.
    pub fn is_eos(&self, id: u32) -> bool {
        self.eos.binary_search(&id).is_ok()
    }

    /// Concatenated bytes of a token sequence (special tokens write nothing).
    pub fn decode(&self, ids: &[u32]) -> Vec<u8> {
        ids.iter().filter_map(|&id| self.token_bytes(id)).flatten().copied().collect()
    }

    pub(crate) fn trie(&self) -> &TokenTrie {
        &self.trie
    }

    /// The tokens that stay inside a JSON string body, split from the rest
    /// (see [`Slice::string_body`]).
    pub(crate) fn string_slice(&self) -> &Slice {
        &self.string_slice
    }
}

/// The parts of a tokenizer.json that sieve reads (merges are skipped).
#[derive(Deserialize)]
struct TokenizerFile<'a> {
    #[serde(borrow)]
    model: ModelPart<'a>,
    #[serde(default, borrow)]
    added_tokens: Vec<AddedToken<'a>>,
    #[serde(default)]
    decoder: Option<serde_json::Value>,
    #[serde(default)]
    pre_tokenizer: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct ModelPart<'a> {
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(borrow, deserialize_with = "entries")]
    vocab: Vec<(Cow<'a, str>, u32)>,
}

/// Reads the vocab object as a list of entries (no hashing).
fn entries<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<(Cow<'de, str>, u32)>, D::Error> {
    struct V;
    impl<'de> serde::de::Visitor<'de> for V {
        type Value = Vec<(Cow<'de, str>, u32)>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("an object of token -> id")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut out = Vec::with_capacity(map.size_hint().unwrap_or(0));
            while let Some((k, v)) = map.next_entry::<Cow<'de, str>, u32>()? {
                out.push((k, v));
            }
            Ok(out)
        }
    }
    d.deserialize_map(V)
}

#[derive(Deserialize)]
struct AddedToken<'a> {
    id: u32,
    #[serde(borrow)]
    content: Cow<'a, str>,
    #[serde(default)]
    special: bool,
}

impl TokenEncoding {
    /// The encoding a tokenizer.json's decoder and pre-tokenizer imply: byte-level where either
    /// is (or holds) `ByteLevel`, SentencePiece's otherwise.
    pub fn of(decoder: Option<&serde_json::Value>, pre_tokenizer: Option<&serde_json::Value>) -> Self {
        let text = |v: Option<&serde_json::Value>| v.map(|v| v.to_string()).unwrap_or_default();
        if text(decoder).contains("ByteLevel") || text(pre_tokenizer).contains("ByteLevel") {
            Self::ByteLevel
        } else {
            Self::SentencePiece
        }
    }

    /// The bytes a vocabulary string stands for; `None` for a string that is not byte-level
    /// in a byte-level vocabulary.
    pub fn decode(self, token: &str) -> Option<Vec<u8>> {
        match self {
            Self::ByteLevel => decode_byte_level(token),
            Self::SentencePiece => Some(decode_sentencepiece(token)),
        }
    }
}

/// GPT-2's byte <-> printable char table: printable Latin-1 bytes map to
/// themselves, the other 68 bytes to U+0100.. in byte order. Indexed by
/// char; 0xFFFF marks chars that are no byte.
const BYTE_LEVEL: [u16; 324] = {
    let mut t = [0xFFFFu16; 324];
    let mut b = 0usize;
    let mut extra = 256usize;
    while b < 256 {
        let printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
        if printable {
            t[b] = b as u16;
        } else {
            t[extra] = b as u16;
            extra += 1;
        }
        b += 1;
    }
    t
};

fn byte_level_char_to_byte(c: char) -> Option<u8> {
    BYTE_LEVEL.get(c as usize).and_then(|&b| u8::try_from(b).ok())
}

fn decode_byte_level(tok: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(tok.len());
    for c in tok.chars() {
        out.push(byte_level_char_to_byte(c)?);
    }
    Some(out)
}

fn decode_sentencepiece(tok: &str) -> Vec<u8> {
    let b = tok.as_bytes();
    if b.len() == 6
        && tok.starts_with("<0x")
        && tok.ends_with('>')
        && let Ok(v) = u8::from_str_radix(&tok[3..5], 16)
    {
        return vec![v];
    }
    tok.replace('\u{2581}', " ").into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_level_table_is_a_bijection() {
        let mut seen = [false; 256];
        for c in (0u32..=0x143).filter_map(char::from_u32) {
            if let Some(b) = byte_level_char_to_byte(c) {
                assert!(!seen[b as usize], "byte {b} mapped twice");
                seen[b as usize] = true;
            }
        }
        assert!(seen.iter().all(|&s| s));
        assert_eq!(byte_level_char_to_byte('Ġ'), Some(b' '));
        assert_eq!(byte_level_char_to_byte('Ċ'), Some(b'\n'));
    }

    #[test]
    fn sentencepiece_tokens() {
        assert_eq!(decode_sentencepiece("▁the"), b" the");
        assert_eq!(decode_sentencepiece("<0x0A>"), b"\n");
        assert_eq!(decode_sentencepiece("<0xZZ>"), b"<0xZZ>");
    }
}
