//! Token id -> exact bytes, from a tokenizer.json, plus the token trie every
//! mask walks.

use crate::error::VocabError;
use crate::trie::TokenTrie;
use serde_json::Value;
use std::sync::atomic::{AtomicU64, Ordering};

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

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
    id: u64,
    tokens: Vec<Option<Box<[u8]>>>,
    names: Vec<String>,
    eos: Vec<u32>,
    width: usize,
    trie: TokenTrie,
}

/// How vocabulary strings encode bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Encoding {
    /// GPT-2 style: each byte is one printable char (`Ġ` for space).
    ByteLevel,
    /// SentencePiece: `▁` for space, `<0xNN>` byte fallback, else UTF-8.
    SentencePiece,
}

impl Vocabulary {
    /// Builds a vocabulary from explicit token bytes (`None` = special token).
    /// The logits width is the number of tokens; no end-of-sequence id is set.
    pub fn from_token_bytes(tokens: Vec<Option<Vec<u8>>>) -> Vocabulary {
        let names = tokens
            .iter()
            .map(|t| t.as_ref().map_or(String::new(), |b| String::from_utf8_lossy(b).into_owned()))
            .collect();
        Self::assemble(tokens.into_iter().map(|t| t.map(Vec::into_boxed_slice)).collect(), names, Vec::new())
    }

    /// Parses a Hugging Face tokenizer.json (BPE byte-level or SentencePiece
    /// style). End-of-sequence ids default to the special tokens named
    /// `</s>`, `<|endoftext|>`, `<|end_of_text|>`, `<|eot_id|>`, `<|im_end|>`
    /// or `<eos>` that the file has.
    pub fn from_tokenizer_json(json: &str) -> Result<Vocabulary, VocabError> {
        let root: Value = serde_json::from_str(json).map_err(|e| VocabError::Json { message: e.to_string() })?;
        let model = root.get("model").ok_or(VocabError::Json { message: "no \"model\" field".into() })?;
        let kind = model.get("type").and_then(Value::as_str).unwrap_or("BPE");
        if kind != "BPE" {
            return Err(VocabError::Unsupported { model: kind.to_string() });
        }
        let vocab = model
            .get("vocab")
            .and_then(Value::as_object)
            .ok_or(VocabError::Json { message: "no \"model.vocab\" object".into() })?;
        let encoding = detect_encoding(&root);
        let mut entries: Vec<(u32, String, Option<Box<[u8]>>)> = Vec::with_capacity(vocab.len());
        for (tok, id) in vocab {
            let id = id
                .as_u64()
                .and_then(|i| u32::try_from(i).ok())
                .ok_or(VocabError::Json { message: format!("token {tok:?} has no integer id") })?;
            let bytes = match encoding {
                Encoding::ByteLevel => decode_byte_level(tok),
                Encoding::SentencePiece => Some(decode_sentencepiece(tok)),
            }
            .ok_or_else(|| VocabError::BadToken { id, token: tok.clone(), reason: "not a byte-level string" })?;
            entries.push((id, tok.clone(), Some(bytes.into_boxed_slice())));
        }
        let mut special_names = Vec::new();
        if let Some(added) = root.get("added_tokens").and_then(Value::as_array) {
            for a in added {
                let id = a
                    .get("id")
                    .and_then(Value::as_u64)
                    .and_then(|i| u32::try_from(i).ok())
                    .ok_or(VocabError::Json { message: "added token without id".into() })?;
                let content = a.get("content").and_then(Value::as_str).unwrap_or_default().to_string();
                let special = a.get("special").and_then(Value::as_bool).unwrap_or(false);
                let bytes = if special { None } else { Some(content.as_bytes().to_vec().into_boxed_slice()) };
                if special {
                    special_names.push((id, content.clone()));
                }
                entries.retain(|e| e.0 != id);
                entries.push((id, content, bytes));
            }
        }
        entries.sort_by_key(|e| e.0);
        let n = entries.last().map_or(0, |e| e.0 as usize + 1);
        let mut tokens: Vec<Option<Box<[u8]>>> = vec![None; n];
        let mut names = vec![String::new(); n];
        let mut seen = vec![false; n];
        for (id, name, bytes) in entries {
            let i = id as usize;
            if std::mem::replace(&mut seen[i], true) {
                return Err(VocabError::BadId { id, reason: "used twice" });
            }
            tokens[i] = bytes;
            names[i] = name;
        }
        let eos = special_names
            .iter()
            .filter(|(_, name)| EOS_NAMES.contains(&name.as_str()))
            .map(|(id, _)| *id)
            .collect();
        Ok(Self::assemble(tokens, names, eos))
    }

    fn assemble(tokens: Vec<Option<Box<[u8]>>>, names: Vec<String>, mut eos: Vec<u32>) -> Vocabulary {
        eos.sort_unstable();
        eos.dedup();
        let trie = TokenTrie::new(&tokens);
        let width = tokens.len();
        Vocabulary { id: NEXT_ID.fetch_add(1, Ordering::Relaxed), tokens, names, eos, width, trie }
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

    /// The token's string as the tokenizer.json spells it (empty when unknown).
    pub fn token_name(&self, id: u32) -> &str {
        self.names.get(id as usize).map_or("", String::as_str)
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

    /// A process-unique id; caches key on it.
    pub(crate) fn uid(&self) -> u64 {
        self.id
    }
}

fn detect_encoding(root: &Value) -> Encoding {
    let text = |k: &str| root.get(k).map(Value::to_string).unwrap_or_default();
    if text("decoder").contains("ByteLevel") || text("pre_tokenizer").contains("ByteLevel") {
        Encoding::ByteLevel
    } else {
        Encoding::SentencePiece
    }
}

/// GPT-2's byte <-> printable char table: printable Latin-1 bytes map to
/// themselves, the other 68 bytes to U+0100.. in byte order.
fn byte_level_char_to_byte(c: char) -> Option<u8> {
    let c = c as u32;
    let printable = |b: u32| (0x21..=0x7E).contains(&b) || (0xA1..=0xAC).contains(&b) || (0xAE..=0xFF).contains(&b);
    if c < 256 && printable(c) {
        return Some(c as u8);
    }
    let n = c.checked_sub(256)?;
    (0u32..256).filter(|&b| !printable(b)).nth(n as usize).map(|b| b as u8)
}

fn decode_byte_level(tok: &str) -> Option<Vec<u8>> {
    tok.chars().map(byte_level_char_to_byte).collect()
}

fn decode_sentencepiece(tok: &str) -> Vec<u8> {
    let b = tok.as_bytes();
    if b.len() == 6 && tok.starts_with("<0x") && tok.ends_with('>') {
        if let Ok(v) = u8::from_str_radix(&tok[3..5], 16) {
            return vec![v];
        }
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
