//! Mask timing inside WebAssembly: built for wasm32 and driven from Node by
//! `benches/wasm-bench.sh`, which times each `mask` call with
//! `performance.now()`. [`Walks`] takes the walks `sieve bench --any-json`
//! takes for the same seed (same RNG, same choices); [`Replay`] replays the
//! token ids `sieve bench --texts .. --emit-tokens` wrote. Either way native
//! and wasm time the same masks.

use sieve_core::rng::Rng;
use sieve_core::{Constraint, Matcher, Vocabulary};
use std::sync::Arc;
use wasm_bindgen::prelude::*;

/// Seeded random walks over the allowed tokens of "any JSON value".
#[wasm_bindgen]
pub struct Walks {
    vocab: Arc<Vocabulary>,
    constraint: Constraint,
    matcher: Matcher,
    mask: Vec<u32>,
    rng: Rng,
}

#[wasm_bindgen]
impl Walks {
    /// Prepares the vocabulary and compiles the grammar.
    #[wasm_bindgen(constructor)]
    pub fn new(tokenizer_json: &str, seed: u64) -> Result<Walks, JsError> {
        let vocab = Arc::new(Vocabulary::from_tokenizer_json(tokenizer_json)?);
        let constraint = Constraint::any_json();
        let matcher = Matcher::new(&constraint, &vocab);
        let mask = vec![0u32; vocab.mask_words()];
        Ok(Walks { vocab, constraint, matcher, mask, rng: Rng::new(seed) })
    }

    /// Runs `sieve_core::warm_up` (as sieve-web does while the model loads); returns its
    /// number of masks.
    #[wasm_bindgen(js_name = warmUp)]
    pub fn warm_up(&self) -> usize {
        sieve_core::warm_up(&self.vocab)
    }

    /// Starts a new walk.
    pub fn start(&mut self) {
        self.matcher = Matcher::new(&self.constraint, &self.vocab);
    }

    /// Computes one mask (the part to time).
    pub fn mask(&mut self) -> Result<(), JsError> {
        Ok(self.matcher.fill_next_token_bitmask(&mut self.mask)?)
    }

    /// Takes a uniformly random allowed token (end of sequence excluded);
    /// false when nothing is allowed.
    pub fn advance(&mut self) -> Result<bool, JsError> {
        let allowed: Vec<u32> = (0..self.vocab.len() as u32)
            .filter(|&t| self.mask[(t / 32) as usize] >> (t % 32) & 1 == 1 && !self.vocab.is_eos(t))
            .collect();
        if allowed.is_empty() {
            return Ok(false);
        }
        self.matcher.accept_token(allowed[self.rng.below(allowed.len())])?;
        Ok(true)
    }
}

/// Replays given token ids through "any JSON value" (or a GBNF grammar).
#[wasm_bindgen]
pub struct Replay {
    vocab: Arc<Vocabulary>,
    constraint: Constraint,
    matcher: Matcher,
    mask: Vec<u32>,
}

#[wasm_bindgen]
impl Replay {
    /// Prepares the vocabulary and compiles `gbnf` (empty: any JSON value).
    #[wasm_bindgen(constructor)]
    pub fn new(tokenizer_json: &str, gbnf: &str) -> Result<Replay, JsError> {
        let vocab = Arc::new(Vocabulary::from_tokenizer_json(tokenizer_json)?);
        let constraint = if gbnf.is_empty() { Constraint::any_json() } else { Constraint::gbnf(gbnf)? };
        let matcher = Matcher::new(&constraint, &vocab);
        let mask = vec![0u32; vocab.mask_words()];
        Ok(Replay { vocab, constraint, matcher, mask })
    }

    /// Runs `sieve_core::warm_up` (as sieve-web does while the model loads); returns its
    /// number of masks.
    #[wasm_bindgen(js_name = warmUp)]
    pub fn warm_up(&self) -> usize {
        sieve_core::warm_up(&self.vocab)
    }

    /// Starts a new text.
    pub fn start(&mut self) {
        self.matcher = Matcher::new(&self.constraint, &self.vocab);
    }

    /// Computes one mask (the part to time).
    pub fn mask(&mut self) -> Result<(), JsError> {
        Ok(self.matcher.fill_next_token_bitmask(&mut self.mask)?)
    }

    /// Takes `token`; false when the constraint refuses it.
    pub fn accept(&mut self, token: u32) -> bool {
        self.matcher.accept_token(token).is_ok()
    }
}
