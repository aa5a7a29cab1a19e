//! Shared test helpers: tokenizers, a seeded RNG and an independent
//! byte-level oracle built on regex-automata's dense DFA.

#![allow(dead_code)]

use regex_automata::dfa::{Automaton, dense};
pub use regex_automata::util::primitives::StateID;
use regex_automata::{Anchored, MatchKind, util::start};
use sieve_core::Vocabulary;
use std::collections::HashMap;
#[cfg(not(target_family = "wasm"))]
use std::path::PathBuf;
use std::sync::Arc;

pub use sieve_core::rng::Rng;

/// The repository's root, from the package folder cargo names when it runs the tests (not the
/// one the binary was built from: a shared target folder may hold it from another clone).
#[cfg(not(target_family = "wasm"))]
fn repo_root() -> PathBuf {
    PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("tests run under cargo")).join("../..")
}

/// A toy byte-level vocabulary: all 256 single bytes, some multi-byte
/// tokens that cross syntax boundaries, an EOS, and padding to width 320.
pub fn toy() -> Arc<Vocabulary> {
    let mut toks: Vec<Option<Vec<u8>>> = (0..=255u8).map(|b| Some(vec![b])).collect();
    for t in [
        "\",", "\", \"", "\"]", "\"}", ", \"", "{\"", "[\"", "ab", "abc", "é", "中", "😀", "\"é", "é\"", "12", "123",
        "3,", "0.", "e+", "true", "false", "null", "\": ", "\":", "]}", "}]", " ", "  ", "\n", "yes", "no", "@a",
        ".com", "a@", "(1", "+2)", "*(", ")*", "2+", " + ", "b\"", "c\", \"",
    ] {
        toks.push(Some(t.as_bytes().to_vec()));
    }
    toks.push(Some("é".as_bytes()[..1].to_vec()));
    toks.push(Some("😀".as_bytes()[1..].to_vec()));
    toks.push(None);
    let eos = toks.len() as u32 - 1;
    let n = toks.len();
    Arc::new(Vocabulary::from_token_bytes(toks).with_eos_ids(&[eos]).unwrap().with_width(n + 37).unwrap())
}

/// SmolLM2's tokenizer, committed as a fixture (embedded: the browser has no file system).
pub fn smollm2() -> Arc<Vocabulary> {
    let text = include_str!("../../fixtures/smollm2.json");
    Arc::new(Vocabulary::from_tokenizer_json(text).expect("smollm2 parses"))
}

/// A real tokenizer from assets/ (fetched by scripts/fetch-assets.sh).
#[cfg(not(target_family = "wasm"))]
pub fn asset(name: &str) -> Arc<Vocabulary> {
    let path = repo_root().join(format!("assets/tokenizers/{name}.json"));
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}; run `bash scripts/fetch-assets.sh` first", path.display()));
    Arc::new(Vocabulary::from_tokenizer_json(&text).expect("tokenizer parses"))
}

/// A real tokenizer from assets/, embedded in the test binary: the browser has no file system,
/// so building the wasm tests needs `bash scripts/fetch-assets.sh` first.
#[cfg(target_family = "wasm")]
pub fn asset(name: &str) -> Arc<Vocabulary> {
    let text = match name {
        "llama2" => include_str!("../../../../../assets/tokenizers/llama2.json"),
        "llama3" => include_str!("../../../../../assets/tokenizers/llama3.json"),
        "qwen3" => include_str!("../../../../../assets/tokenizers/qwen3.json"),
        other => panic!("no embedded tokenizer {other}"),
    };
    Arc::new(Vocabulary::from_tokenizer_json(text).expect("tokenizer parses"))
}

/// Every vocabulary the oracle tests run over.
pub fn all_vocabs() -> Vec<(&'static str, Arc<Vocabulary>)> {
    vec![
        ("toy", toy()),
        ("smollm2", smollm2()),
        ("llama2", asset("llama2")),
        ("llama3", asset("llama3")),
        ("qwen3", asset("qwen3")),
    ]
}

/// Prefix viability by an independent route: a fully built dense DFA and a
/// reachability search for states from which end-of-input matches.
pub struct Oracle {
    dfa: dense::DFA<Vec<u32>>,
    start: StateID,
    viable: HashMap<StateID, bool>,
}

impl Oracle {
    pub fn new(pattern: &str) -> Oracle {
        let dfa = dense::Builder::new()
            .configure(dense::Config::new().match_kind(MatchKind::All).start_kind(regex_automata::dfa::StartKind::Anchored))
            .build(pattern)
            .expect("oracle regex builds");
        let start = dfa.start_state(&start::Config::new().anchored(Anchored::Yes)).expect("start state");
        Oracle { dfa, start, viable: HashMap::new() }
    }

    fn run(&self, bytes: &[u8]) -> StateID {
        bytes.iter().fold(self.start, |s, &b| self.dfa.next_state(s, b))
    }

    /// The state before any byte.
    pub fn start(&self) -> StateID {
        self.start
    }

    /// The state after `s` reads `b`.
    pub fn next(&self, s: StateID, b: u8) -> StateID {
        self.dfa.next_state(s, b)
    }

    /// Whether the bytes that led to `s` are a match.
    pub fn accepts(&self, s: StateID) -> bool {
        self.dfa.is_match_state(self.dfa.next_eoi_state(s))
    }

    pub fn full_match(&self, bytes: &[u8]) -> bool {
        self.accepts(self.run(bytes))
    }

    pub fn viable(&mut self, bytes: &[u8]) -> bool {
        let s = self.run(bytes);
        self.live(s)
    }

    /// Whether some match goes on from `s`.
    pub fn live(&mut self, s: StateID) -> bool {
        if let Some(&v) = self.viable.get(&s) {
            return v;
        }
        let mut seen = vec![s];
        let mut stack = vec![s];
        let mut found = false;
        while let Some(x) = stack.pop() {
            if self.accepts(x) {
                found = true;
                break;
            }
            for b in 0..=255u8 {
                let y = self.dfa.next_state(x, b);
                if !self.dfa.is_dead_state(y) && !seen.contains(&y) {
                    seen.push(y);
                    stack.push(y);
                }
            }
        }
        self.viable.insert(s, found);
        found
    }
}

pub fn bit(mask: &[u32], t: u32) -> bool {
    mask[(t / 32) as usize] >> (t % 32) & 1 == 1
}

/// Splits `text` into vocabulary tokens at random (any tokenization must be
/// accepted by a byte-level engine). Returns None if some byte has no token.
pub fn random_tokenization(vocab: &Vocabulary, text: &[u8], rng: &mut Rng) -> Option<Vec<u32>> {
    let mut by_bytes: HashMap<&[u8], u32> = HashMap::new();
    for id in 0..vocab.len() as u32 {
        if let Some(b) = vocab.token_bytes(id)
            && !b.is_empty() {
                by_bytes.entry(b).or_insert(id);
            }
    }
    let mut out = Vec::new();
    let mut i = 0;
    while i < text.len() {
        let opts: Vec<(usize, u32)> =
            (1..=24.min(text.len() - i)).filter_map(|l| by_bytes.get(&text[i..i + l]).map(|&t| (l, t))).collect();
        if opts.is_empty() {
            return None;
        }
        // Prefer long tokens, as real tokenizers do, but not always.
        let (l, t) = if rng.below(3) == 0 { opts[rng.below(opts.len())] } else { opts[opts.len() - 1] };
        out.push(t);
        i += l;
    }
    Some(out)
}
