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
//!   (byte-level BPE: GPT-2, Llama-3, Qwen3, SmolLM2; SentencePiece: `▁` for
//!   space and `<0xNN>` byte fallback, Llama-2), end-of-sequence ids
//!   ([`Vocabulary::with_eos_ids`]), logits width ([`Vocabulary::with_width`];
//!   padding ids are never allowed), and the token trie (`trie.rs`) every
//!   mask walks: all token byte strings in one depth-first array, so a walk
//!   skips a whole subtree at the first rejected byte.
//! - [`Constraint`] (`constraint.rs`): a compiled, immutable, shareable
//!   constraint (an `Arc` inside) from a [`ConstraintSource`]: a regex, GBNF,
//!   choices, a JSON Schema ([`json_schema`]), "any JSON value", or free
//!   text whose trigger strings open constrained sections such as tool
//!   calls ([`StructuralTag`], `structural.rs`).
//!   [`ConstraintCache`] keys them by source;
//!   [`Limits`] bounds their work; [`Constraint::matches`] checks a whole
//!   byte string without any vocabulary.
//!   - Regexes (`regex.rs`): regex-syntax + regex-automata's Thompson NFA,
//!     walked by our own lazy DFA (states built on demand, never evicted),
//!     with one cached mask per DFA state.
//!   - Grammars (`gbnf.rs` holds rules as expression trees and reads and
//!     writes llama.cpp's GBNF; `grammar.rs` compiles them; the JSON Schema
//!     translator builds the trees directly): per-rule byte automata with
//!     call edges, small rules inlined
//!     (right-linear recursion, such as an automaton written as rules,
//!     becomes loops), parsed by a byte-level Earley parser (left recursion,
//!     ambiguity and empty rules work).
//!   - Grammar masks (`tokencache.rs`): per group of Earley items, the
//!     tokens decided without context are computed once; at mask time only
//!     the bytes after a rule may end are walked through the real parse.
//!   - "Any JSON value" is a built-in grammar (`json.rs`, [`ANY_JSON_GBNF`]).
//! - [`Matcher`] (`matcher.rs`): the per-sequence state: masks, tokens,
//!   bytes, rollback, validation of drafts, jump-forward, and
//!   [`fill_next_token_bitmasks`] for a batch (threads with the `parallel`
//!   feature).
//! - Errors (`error.rs`): [`VocabError`], [`CompileError`] (kind, message,
//!   byte offset, line and column), [`MatchError`].
//!
//! # Masks
//!
//! A mask has `ceil(width / 32)` `u32` words; bit `i % 32` of word `i / 32`
//! is set when token `i` may come next. Special tokens are never set; the
//! end-of-sequence ids are set exactly when the output so far is complete.
//! Every set token keeps the output completable, and every token that does
//! is set: the engine works on bytes, so any tokenization of a valid output
//! is accepted.
//!
//! # GBNF
//!
//! The grammar format (the JSON Schema translator's grammars can be written
//! in it: [`json_schema::SchemaGrammar::gbnf`]). Rules `name ::= ...` (start
//! rule `root`), `|`, `( )`,
//! `*` `+` `?` `{m}` `{m,}` `{m,n}`, string literals and character classes
//! (ranges, `[^...]`) with the escapes `\n \r \t \\ \" \xHH \uHHHH
//! \UHHHHHHHH`, `.`, `#` comments, newlines inside parentheses and after
//! `|`. Characters are Unicode scalar values matched as UTF-8. Recursion,
//! left recursion included, is supported; grammars with thousands of rules
//! compile in milliseconds. Token references (`<...>`) are refused.
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
mod graph;
mod hash;
mod json;
pub mod json_schema;
mod limits;
mod matcher;
mod regex;
pub mod rng;
mod structural;
mod tokencache;
mod trie;
mod vocab;
mod warm;

pub use constraint::{Constraint, ConstraintCache, ConstraintSource};
pub use error::{CompileError, CompileErrorKind, MatchError, VocabError};
pub use json::ANY_JSON_GBNF;
pub use limits::Limits;
pub use matcher::{JumpForward, Matcher, fill_bitmask_rows, fill_next_token_bitmasks};
pub use structural::{StructuralTag, Tag, TagContent};
pub use vocab::{TokenEncoding, Vocabulary};
pub use warm::warm_up;
