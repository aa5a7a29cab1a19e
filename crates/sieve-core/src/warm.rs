//! A warm-up for JIT-compiled builds. V8 first runs WebAssembly as baseline
//! code and optimises a function only once it has run for a while, so in a
//! fresh page the first few hundred masks take two to three times as long as
//! the rest. [`warm_up`] computes the masks along a few sample documents so
//! the optimised code is in place before the first real request; sieve-web
//! runs it while the model loads. Natively it is not needed.

use crate::json_schema::JsonSchemaOptions;
use crate::{Constraint, Matcher, Vocabulary};
use std::sync::Arc;

/// A schema of the usual shape: required and optional members, a bounded
/// string, a format, a number range, an enum, an array and a nested object
/// with a pattern.
const SCHEMA: &str = r#"{"type": "object", "properties": {
  "id": {"type": "integer", "minimum": 1},
  "name": {"type": "string", "minLength": 1, "maxLength": 40},
  "email": {"type": "string", "format": "email"},
  "score": {"type": "number", "minimum": 0, "maximum": 100},
  "status": {"enum": ["active", "inactive", "pending"]},
  "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 5},
  "address": {"type": "object", "properties": {"city": {"type": "string"},
    "zip": {"type": "string", "pattern": "^[0-9]{5}$"}}, "required": ["city"]}},
  "required": ["id", "name", "status"]}"#;

/// A document valid under [`SCHEMA`].
const SCHEMA_DOC: &str = r#"{"id": 42, "name": "Ada Lovelace", "email": "ada@example.com", "score": 97.5, "status": "active", "tags": ["math", "engines"], "address": {"city": "London", "zip": "12345"}}"#;

/// A document for "any JSON value": nesting, literals, escapes, exponents.
const ANY_DOC: &str = r#"[{"a": 1, "b": [true, false, null], "c": "text with \"quotes\" and \u00e9"}, -3.25e2, {}]"#;

/// How many times each document is walked: enough masks (about 600 with a
/// 128k vocabulary) for V8 to optimise the mask code.
const ROUNDS: usize = 4;

/// Computes the masks along the sample documents, tokenized greedily (the
/// longest token at each point), and returns how many it computed. Takes a
/// few milliseconds once the analyses are cached.
pub fn warm_up(vocab: &Arc<Vocabulary>) -> usize {
    let schema = serde_json::from_str(SCHEMA).ok();
    let typed = schema.and_then(|s| Constraint::json_schema(&s, &JsonSchemaOptions::default()).ok()).map(|(c, _warnings)| c);
    let mut mask = vec![0u32; vocab.mask_words()];
    let mut masks = 0;
    for _ in 0..ROUNDS {
        for (constraint, doc) in [(typed.clone(), SCHEMA_DOC), (Some(Constraint::any_json()), ANY_DOC)] {
            if let Some(constraint) = constraint {
                masks += walk(Matcher::new(&constraint, vocab), doc.as_bytes(), &mut mask);
            }
        }
    }
    masks
}

/// Fills the mask before every token of `doc` and once after the last;
/// stops at the first byte no token covers or the matcher refuses.
fn walk(mut matcher: Matcher, mut doc: &[u8], mask: &mut [u32]) -> usize {
    let mut masks = 0;
    loop {
        if matcher.fill_next_token_bitmask(mask).is_err() {
            return masks;
        }
        masks += 1;
        let Some(token) = matcher.vocabulary().trie().longest_prefix(doc) else { return masks };
        let len = matcher.vocabulary().token_bytes(token).map_or(0, <[u8]>::len);
        if matcher.accept_token(token).is_err() {
            return masks;
        }
        doc = doc.get(len..).unwrap_or_default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_sample_document_is_walked_to_its_end() {
        // One token per byte: the walk takes one mask per byte and one after the end.
        let bytes = Vocabulary::from_token_bytes((0..=255u8).map(|b| Some(vec![b])).collect());
        let per_round = SCHEMA_DOC.len() + 1 + ANY_DOC.len() + 1;
        assert_eq!(warm_up(&Arc::new(bytes)), ROUNDS * per_round);
    }
}
