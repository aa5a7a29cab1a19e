//! Shared test helpers: the real model file and a CPU device.
#![allow(dead_code)]

use std::path::PathBuf;

/// This package's folder, as cargo names it when it runs the tests (not the one the binary was
/// built from: a shared target folder may hold it from another clone).
pub fn package_dir() -> PathBuf {
    PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("tests run under cargo"))
}

/// The SmolLM2 GGUF fetched by `scripts/fetch-assets.sh`; panics with the fix when it is missing.
pub fn gguf_bytes() -> Vec<u8> {
    let path = package_dir().join("../../assets/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf");
    std::fs::read(&path).unwrap_or_else(|e| {
        panic!("{}: {e}\nrun `bash scripts/fetch-assets.sh` from the repository root to fetch the model", path.display())
    })
}

/// The reference file of the parity tests.
pub fn reference() -> serde_json::Value {
    let text = include_str!("../../../testdata/smollm2-reference.json");
    serde_json::from_str(text).expect("reference JSON parses")
}

/// Ids of a JSON array of integers.
pub fn ids(v: &serde_json::Value) -> Vec<u32> {
    v.as_array().expect("array").iter().map(|x| x.as_u64().expect("id") as u32).collect()
}

pub fn cpu() -> burn::tensor::Device {
    burn::tensor::Device::flex()
}

use sieve_model::ModelError;
use sieve_model::decode::TokenConstraint;
use sieve_model::Tokenizer;

/// A byte-level test constraint: the output is exactly one of `options`, then end of sequence
/// (or the end, when no option extends the text).
pub struct Choices {
    options: Vec<Vec<u8>>,
    tokens: Vec<Vec<u8>>,
    special: Vec<bool>,
    eos: u32,
    text: Vec<u8>,
    lengths: Vec<usize>,
    ended: bool,
}

impl Choices {
    pub fn new(options: &[&str], tok: &Tokenizer) -> Self {
        let n = tok.vocab_size() as u32;
        Self {
            options: options.iter().map(|o| o.as_bytes().to_vec()).collect(),
            tokens: (0..n).map(|i| tok.token_bytes(i).to_vec()).collect(),
            special: (0..n).map(|i| tok.is_special(i)).collect(),
            eos: tok.eos(),
            text: Vec::new(),
            lengths: Vec::new(),
            ended: false,
        }
    }

    fn complete(&self) -> bool {
        self.options.contains(&self.text)
    }

    fn extends(&self, more: &[u8]) -> bool {
        let mut t = self.text.clone();
        t.extend_from_slice(more);
        self.options.iter().any(|o| o.starts_with(&t))
    }

    fn allowed(&self, token: u32) -> bool {
        let i = token as usize;
        if self.ended || i >= self.tokens.len() {
            return false;
        }
        if self.special[i] {
            return token == self.eos && self.complete();
        }
        !self.tokens[i].is_empty() && self.extends(&self.tokens[i])
    }
}

impl TokenConstraint for Choices {
    fn fill_mask(&mut self, mask: &mut [u32]) -> Result<(), ModelError> {
        for i in 0..self.tokens.len() {
            if self.allowed(i as u32) {
                mask[i / 32] |= 1 << (i % 32);
            }
        }
        Ok(())
    }

    fn accept_token(&mut self, token: u32) -> Result<(), ModelError> {
        if !self.allowed(token) {
            return Err(ModelError::Constraint(format!("token {token} not allowed after {:?}", String::from_utf8_lossy(&self.text))));
        }
        if token == self.eos {
            self.ended = true;
            self.lengths.push(0);
        } else {
            self.text.extend_from_slice(&self.tokens[token as usize]);
            self.lengths.push(self.tokens[token as usize].len());
        }
        Ok(())
    }

    fn rollback(&mut self, n: usize) -> Result<(), ModelError> {
        for _ in 0..n {
            let len = self.lengths.pop().ok_or_else(|| ModelError::Constraint("rollback past the start".into()))?;
            if len == 0 {
                self.ended = false;
            }
            self.text.truncate(self.text.len() - len);
        }
        Ok(())
    }

    fn forced_bytes(&mut self) -> Result<Vec<u8>, ModelError> {
        let live: Vec<&Vec<u8>> = self.options.iter().filter(|o| o.starts_with(&self.text)).collect();
        let Some(first) = live.first() else { return Ok(Vec::new()) };
        if live.iter().any(|o| o.len() == self.text.len()) {
            return Ok(Vec::new());
        }
        let mut n = first.len();
        for o in &live[1..] {
            n = n.min(first.iter().zip(o.iter()).take_while(|(a, b)| a == b).count());
        }
        Ok(first[self.text.len()..n].to_vec())
    }

    fn is_terminated(&self) -> bool {
        self.ended || (self.complete() && !self.options.iter().any(|o| o.len() > self.text.len() && o.starts_with(&self.text)))
    }
}
