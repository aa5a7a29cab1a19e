//! sieve-core: the constraint engine of sieve.
//!
//! It turns a tokenizer's vocabulary and a constraint (a regex, a GBNF grammar,
//! a JSON Schema, a list of choices) into exact token bitmasks: bit `i % 32` of
//! word `i / 32` is set when token `i` may come next. It does no I/O, needs no
//! threads and no GPU, and builds for `wasm32-unknown-unknown`.
//!
//! # Map
//!
//! - [`Vocabulary`] (`vocab.rs`): token id -> bytes from a tokenizer.json
//!   (byte-level BPE and SentencePiece), end-of-sequence ids, logits width,
//!   and the token trie (`trie.rs`) every mask walks.
//! - [`Constraint`] (`constraint.rs`): a compiled, immutable, shareable
//!   constraint; [`ConstraintCache`] keys them by [`ConstraintSource`];
//!   [`Limits`] bounds their work. Regexes (`regex.rs`) run on a lazy DFA
//!   over regex-automata's NFA; GBNF grammars (`gbnf.rs`, `grammar.rs`) run
//!   on a byte-level Earley parser whose masks come from a cache of
//!   context-independent tokens (`tokencache.rs`); "any JSON value" is a
//!   built-in grammar (`json.rs`).
//! - [`Matcher`] (`matcher.rs`): the per-sequence state.
//! - Errors (`error.rs`): [`VocabError`], [`CompileError`], [`MatchError`].
//!
//! # The decode loop
//!
//! 1. Build a [`Vocabulary`] once per tokenizer and put it in an `Arc`.
//! 2. Compile a [`Constraint`] once per source (or get it from a cache).
//! 3. Per sequence, create a [`Matcher`].
//! 4. Each step: [`Matcher::fill_next_token_bitmask`], mask the logits,
//!    sample, then [`Matcher::accept_token`] with the sampled id.
//! 5. Stop when [`Matcher::is_terminated`] (an end-of-sequence token was
//!    taken); [`Matcher::jump_forward`] may append forced text without sampling.
//!
//! ```
//! use std::sync::Arc;
//! use sieve_core::{Constraint, Matcher, Vocabulary};
//!
//! let toks = ["a", "b", "ab", "<eos>"];
//! let vocab = Vocabulary::from_token_bytes(
//!     toks.iter().map(|t| (*t != "<eos>").then(|| t.as_bytes().to_vec())).collect(),
//! ).with_eos_ids(&[3]).unwrap();
//! let vocab = Arc::new(vocab);
//! let c = Constraint::regex("a+b").unwrap();
//! let mut m = Matcher::new(&c, &vocab);
//! let mut mask = vec![0u32; vocab.mask_words()];
//! m.fill_next_token_bitmask(&mut mask).unwrap();
//! assert_eq!(mask[0], 0b0101); // "a" and "ab"
//! m.accept_token(2).unwrap();
//! assert!(m.is_accepting());
//! m.accept_token(3).unwrap();
//! assert!(m.is_terminated());
//! ```

mod constraint;
mod error;
mod gbnf;
mod grammar;
mod json;
pub mod json_schema;
mod matcher;
mod regex;
mod tokencache;
mod trie;
mod vocab;

pub use constraint::{Constraint, ConstraintCache, ConstraintSource, Limits};
pub use error::{CompileError, CompileErrorKind, MatchError, VocabError};
pub use json::ANY_JSON_GBNF;
pub use matcher::{JumpForward, Matcher, fill_next_token_bitmasks};
pub use vocab::Vocabulary;
