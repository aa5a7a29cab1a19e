//! Shared by the fuzz targets: a small byte-level vocabulary, tight limits
//! and a driver that runs a matcher through a stream of operations and
//! checks that the mask and `accept_token` agree.

use sieve_core::{Constraint, Limits, Matcher, Vocabulary};
use std::sync::Arc;

pub fn vocab() -> Arc<Vocabulary> {
    static V: std::sync::OnceLock<Arc<Vocabulary>> = std::sync::OnceLock::new();
    V.get_or_init(build_vocab).clone()
}

fn build_vocab() -> Arc<Vocabulary> {
    let mut toks: Vec<Option<Vec<u8>>> = (0..=255u8).map(|b| Some(vec![b])).collect();
    for t in ["\",", "\"]", "{\"", "ab", "abc", "é", "中", "😀", "12", "true", "null", " ", "\": ", "]}", "a\"b"] {
        toks.push(Some(t.as_bytes().to_vec()));
    }
    toks.push(None);
    let eos = toks.len() as u32 - 1;
    Arc::new(Vocabulary::from_token_bytes(toks).with_eos_ids(&[eos]).expect("eos in range"))
}

pub fn limits() -> Limits {
    Limits { max_regex_bytes: 1 << 20, max_dfa_states: 2_000, max_grammar_states: 50_000, mask_fuel: 2_000_000, ..Limits::default() }
}

/// Drives a matcher with `ops`; panics when the mask and accept_token disagree.
pub fn drive(c: &Constraint, vocab: &Arc<Vocabulary>, ops: &[u8]) {
    let mut m = Matcher::new(c, vocab);
    let mut mask = vec![0u32; vocab.mask_words()];
    for chunk in ops.chunks(2) {
        let arg = *chunk.get(1).unwrap_or(&0) as u32;
        match chunk[0] % 6 {
            0 | 1 => {
                if m.fill_next_token_bitmask(&mut mask).is_err() {
                    return;
                }
                let t = arg % vocab.width() as u32;
                let allowed = mask[(t / 32) as usize] >> (t % 32) & 1 == 1;
                let ok = m.accept_token(t).is_ok();
                assert!(m.is_terminated() || allowed == ok, "mask says {allowed}, accept_token says {ok} for {t}");
            }
            2 => {
                // Take the k-th allowed token, if any.
                if m.fill_next_token_bitmask(&mut mask).is_err() {
                    return;
                }
                let allowed: Vec<u32> = (0..vocab.width() as u32).filter(|&t| mask[(t / 32) as usize] >> (t % 32) & 1 == 1).collect();
                if let Some(&t) = allowed.get(arg as usize % allowed.len().max(1)) {
                    assert!(m.accept_token(t).is_ok(), "allowed token {t} refused");
                }
            }
            3 => {
                let _ = m.rollback(arg as usize % 4);
            }
            4 => {
                let _ = m.jump_forward(|b| Some(b.iter().map(|&x| x as u32).collect()));
            }
            _ => {
                let _ = m.validate_tokens(&[arg, arg / 2, arg / 3]);
            }
        }
    }
}
