//! Every code path of the model and the decode loop on a tiny random-weight model (CPU backend):
//! prefill equals step-by-step decoding, the KV cache truncates, constrained output is always
//! valid, jump-forward saves forward passes, sampling is reproducible, limits hold.

use crate::common;

use std::cell::Cell;
use std::sync::OnceLock;
use std::time::Instant;

use common::Choices;
use pollster::block_on;
use sieve_model::decode::{Deferred, GenerateConfig, Picker, StopReason, TokenConstraint, Unconstrained, generate, generate_streaming};
use sieve_model::sampling::Sampling;
use sieve_model::{Gguf, KvCache, Llama, LlamaConfig, Logits, ModelError, Tokenizer};

fn tokenizer() -> &'static Tokenizer {
    static TOK: OnceLock<Tokenizer> = OnceLock::new();
    TOK.get_or_init(|| {
        let bytes = common::gguf_bytes();
        Tokenizer::from_gguf(&Gguf::parse(&bytes).unwrap()).unwrap()
    })
}

fn tiny() -> Llama {
    Llama::random(LlamaConfig::tiny(49152), 7, common::cpu()).unwrap()
}

fn row(logits: Logits) -> Vec<f32> {
    block_on(logits.into_vec()).unwrap()
}

fn max_diff(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
}

fn clock() -> f64 {
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_secs_f64() * 1000.0
}

fn config(jump_forward: bool, sampling: Sampling) -> GenerateConfig {
    GenerateConfig { max_tokens: 40, sampling, jump_forward, picker: Picker::Cpu }
}

#[test]
fn prefill_equals_token_by_token() {
    let model = tiny();
    let tokens = [5u32, 900, 17, 4000, 49151, 3, 3, 256];
    let mut one = KvCache::new(&model);
    let all = row(model.forward(&tokens, &mut one).unwrap());
    let mut step = KvCache::new(&model);
    let mut last = Vec::new();
    for &t in &tokens {
        last = row(model.forward(&[t], &mut step).unwrap());
    }
    assert_eq!(one.len(), tokens.len());
    assert!(max_diff(&all, &last) < 1e-4, "{}", max_diff(&all, &last));
    // Mixed chunks agree too.
    let mut mixed = KvCache::new(&model);
    model.forward(&tokens[..3], &mut mixed).unwrap();
    let chunked = row(model.forward(&tokens[3..], &mut mixed).unwrap());
    assert!(max_diff(&all, &chunked) < 1e-4);
}

#[test]
fn truncated_cache_forgets_positions() {
    let model = tiny();
    let mut a = KvCache::new(&model);
    model.forward(&[1, 2, 3, 4, 5], &mut a).unwrap();
    a.truncate(3);
    assert_eq!(a.len(), 3);
    let after = row(model.forward(&[9, 10], &mut a).unwrap());
    let mut b = KvCache::new(&model);
    let direct = row(model.forward(&[1, 2, 3, 9, 10], &mut b).unwrap());
    assert!(max_diff(&after, &direct) < 1e-4);
    a.truncate(0);
    assert!(a.is_empty());
    let fresh = row(model.forward(&[1, 2, 3, 9, 10], &mut a).unwrap());
    assert!(max_diff(&fresh, &direct) < 1e-4);
}

#[test]
fn bad_inputs_are_errors() {
    let model = tiny();
    let mut cache = KvCache::new(&model);
    assert!(matches!(model.forward(&[], &mut cache), Err(ModelError::Input(_))));
    assert!(matches!(model.forward(&[49152], &mut cache), Err(ModelError::Input(_))));
    let long = vec![1u32; model.config().max_seq + 1];
    assert!(matches!(model.forward(&long, &mut cache), Err(ModelError::Input(_))));
    assert!(cache.is_empty());
}

#[test]
fn constrained_output_is_one_of_the_choices() {
    let model = tiny();
    let tok = tokenizer();
    let options = ["{\"name\": \"Alice\", \"age\": 30}", "{\"name\": \"Bob\", \"age\": 4}", "{\"name\": \"Bo\"}"];
    let prompt = tok.encode("Give me JSON:").unwrap();
    for jump_forward in [false, true] {
        for seed in 0..4 {
            let sampling = Sampling { temperature: 1.5, top_k: 0, top_p: 1.0, seed };
            let mut constraint = Choices::new(&options, tok);
            let out = block_on(generate(&model, tok, &mut constraint, &prompt, &config(jump_forward, sampling), &clock)).unwrap();
            assert!(options.contains(&out.text.as_str()), "{:?}", out.text);
            assert!(matches!(out.stop, StopReason::ConstraintTerminated | StopReason::EndOfSequence));
            assert_eq!(out.stats.completion_tokens, out.tokens.len());
            assert_eq!(out.stats.prompt_tokens, prompt.len());
            if jump_forward {
                assert!(out.stats.forced_tokens > 0);
            } else {
                assert_eq!(out.stats.forced_tokens, 0);
                assert_eq!(out.stats.forward_passes, out.tokens.len());
            }
        }
    }
}

#[test]
fn jump_forward_saves_forward_passes() {
    let model = tiny();
    let tok = tokenizer();
    let options = ["{\"name\": \"Alice\", \"city\": \"Paris\"}", "{\"name\": \"Alice\", \"city\": \"Rome\"}"];
    let prompt = tok.encode("JSON:").unwrap();
    let run = |jump_forward| {
        let mut constraint = Choices::new(&options, tok);
        block_on(generate(&model, tok, &mut constraint, &prompt, &config(jump_forward, Sampling::GREEDY), &clock)).unwrap()
    };
    let (off, on) = (run(false), run(true));
    assert!(options.contains(&off.text.as_str()) && options.contains(&on.text.as_str()));
    assert!(on.stats.forward_passes * 2 < off.stats.forward_passes, "{} vs {}", on.stats.forward_passes, off.stats.forward_passes);
    // The forced tokens are the canonical tokenization of the forced text.
    assert_eq!(on.tokens[..tok.encode("{\"name\": \"Alice\", \"city\": \"").unwrap().len()], tok.encode("{\"name\": \"Alice\", \"city\": \"").unwrap()[..]);
}

/// A constraint that advances a fake clock: 5 ms for each mask, 1 ms for each token it takes,
/// a quarter for each look at its forced text; and counts its calls.
struct Timed<'c, C> {
    inner: C,
    now: &'c Cell<f64>,
    calls: [usize; 3],
}

impl<C: TokenConstraint> Timed<'_, C> {
    fn spend(&mut self, call: usize, ms: f64) {
        self.now.set(self.now.get() + ms);
        self.calls[call] += 1;
    }
}

impl<C: TokenConstraint> TokenConstraint for Timed<'_, C> {
    fn fill_mask(&mut self, mask: &mut [u32]) -> Result<(), ModelError> {
        self.spend(0, 5.0);
        self.inner.fill_mask(mask)
    }
    fn accept_token(&mut self, token: u32) -> Result<(), ModelError> {
        self.spend(1, 1.0);
        self.inner.accept_token(token)
    }
    fn rollback(&mut self, n: usize) -> Result<(), ModelError> {
        self.inner.rollback(n)
    }
    fn forced_bytes(&mut self) -> Result<Vec<u8>, ModelError> {
        self.spend(2, 0.25);
        self.inner.forced_bytes()
    }
    fn is_terminated(&self) -> bool {
        self.inner.is_terminated()
    }
}

#[test]
fn constraint_time_is_the_time_in_the_constraint() {
    let model = tiny();
    let tok = tokenizer();
    let options = ["{\"name\": \"Alice\", \"city\": \"Paris\"}", "{\"name\": \"Alice\", \"city\": \"Rome\"}"];
    let prompt = tok.encode("JSON:").unwrap();
    let now = Cell::new(0.0);
    let fake = || now.get();
    for jump_forward in [false, true] {
        let mut constraint = Timed { inner: Choices::new(&options, tok), now: &now, calls: [0; 3] };
        let out = block_on(generate(&model, tok, &mut constraint, &prompt, &config(jump_forward, Sampling::GREEDY), &fake)).unwrap();
        let [masks, accepts, looks] = constraint.calls;
        assert!(masks > 0 && (accepts > masks) == jump_forward && (looks > 0) == jump_forward, "{:?}", constraint.calls);
        // Only the constraint moves the clock: all the time is the constraint's, all of it counted.
        assert_eq!(out.stats.constraint_ms, 5.0 * masks as f64 + accepts as f64 + 0.25 * looks as f64);
        assert_eq!(out.stats.constraint_ms, out.stats.elapsed_ms);
        assert_eq!(out.stats.mask_us, vec![5000.0; masks]);
    }
}

#[test]
fn a_deferred_constraint_compiles_once_while_the_prompt_prefills() {
    let model = tiny();
    let tok = tokenizer();
    let options = ["{\"name\": \"Alice\", \"city\": \"Paris\"}", "{\"name\": \"Alice\", \"city\": \"Rome\"}"];
    let prompt = tok.encode("JSON:").unwrap();
    for jump_forward in [false, true] {
        let config = config(jump_forward, Sampling::GREEDY);
        let mut ready = Choices::new(&options, tok);
        let direct = block_on(generate(&model, tok, &mut ready, &prompt, &config, &clock)).unwrap();
        let compiles = std::cell::Cell::new(0);
        let mut deferred = Deferred::new(Box::new(|| {
            compiles.set(compiles.get() + 1);
            Ok(Box::new(Choices::new(&options, tok)) as Box<dyn TokenConstraint>)
        }));
        assert!(deferred.is_pending());
        let out = block_on(generate(&model, tok, &mut deferred, &prompt, &config, &clock)).unwrap();
        assert_eq!(compiles.get(), 1);
        assert!(!deferred.is_pending());
        assert_eq!((&out.tokens, &out.text, out.stop), (&direct.tokens, &direct.text, direct.stop));
        // The prompt went to the GPU alone, so forced tokens at the start take a pass of their own.
        let extra = usize::from(jump_forward);
        assert_eq!(out.stats.forward_passes, direct.stats.forward_passes + extra);
    }
    // A constraint that fails to compile fails the generation with its error.
    let mut failing = Deferred::new(Box::new(|| Err(ModelError::Constraint("bad schema at /properties".into()))));
    let err = block_on(generate(&model, tok, &mut failing, &prompt, &config(true, Sampling::GREEDY), &clock)).unwrap_err();
    assert!(err.to_string().contains("bad schema at /properties"), "{err}");
}

#[test]
fn streamed_deltas_add_up_to_the_text_and_mark_forced_text() {
    let model = tiny();
    let tok = tokenizer();
    let options = ["{\"name\": \"Zoë\", \"city\": \"Paris\"}", "{\"name\": \"Zoë\", \"city\": \"Rome\"}"];
    let prompt = tok.encode("JSON:").unwrap();
    for jump_forward in [false, true] {
        let mut deltas = Vec::new();
        let out = block_on(generate_streaming(
            &model,
            tok,
            &mut Choices::new(&options, tok),
            &prompt,
            &config(jump_forward, Sampling::GREEDY),
            &clock,
            &mut |d| {
                deltas.push((d.text.to_string(), d.forced));
                true
            },
        ))
        .unwrap();
        let streamed: String = deltas.iter().map(|(t, _)| t.as_str()).collect();
        assert_eq!(streamed, out.text);
        assert!(deltas.iter().all(|(t, _)| !t.is_empty()));
        assert_eq!(deltas.iter().any(|&(_, forced)| forced), jump_forward, "{deltas:?}");
    }
    // Returning false stops the generation at once.
    let mut calls = 0;
    let out = block_on(generate_streaming(&model, tok, &mut Unconstrained::new(49152), &prompt, &config(false, Sampling::GREEDY), &clock, &mut |_| {
        calls += 1;
        calls < 3
    }))
    .unwrap();
    assert_eq!(out.stop, StopReason::Cancelled);
    assert_eq!(calls, 3);
}

#[test]
fn sampling_is_reproducible_and_seeded() {
    let model = tiny();
    let tok = tokenizer();
    let prompt = tok.encode("Once upon a time").unwrap();
    let run = |seed| {
        let sampling = Sampling { temperature: 1.0, top_k: 50, top_p: 0.95, seed };
        let cfg = GenerateConfig { max_tokens: 12, ..config(false, sampling) };
        block_on(generate(&model, tok, &mut Unconstrained::new(49152), &prompt, &cfg, &clock)).unwrap()
    };
    let (a, b, c) = (run(1), run(1), run(2));
    assert_eq!(a.tokens, b.tokens);
    assert_ne!(a.tokens, c.tokens);
    assert_eq!(a.stop, StopReason::MaxTokens);
    assert_eq!(a.tokens.len(), 12);
    assert_eq!(a.stats.forward_passes, 12);
    assert_eq!(a.stats.mask_us.len(), 12);
}

#[test]
fn max_tokens_caps_forced_tokens_too() {
    let model = tiny();
    let tok = tokenizer();
    let options = ["{\"a very long forced key that goes on\": 1}"];
    let prompt = tok.encode("x").unwrap();
    let cfg = GenerateConfig { max_tokens: 3, ..config(true, Sampling::GREEDY) };
    let out = block_on(generate(&model, tok, &mut Choices::new(&options, tok), &prompt, &cfg, &clock)).unwrap();
    assert_eq!(out.stop, StopReason::MaxTokens);
    assert_eq!(out.tokens.len(), 3);
    assert!(options[0].starts_with(&out.text));
    assert_eq!(out.stats.forward_passes, 0);
}

#[test]
fn unconstrained_without_end_allows_everything_but_the_end() {
    use sieve_model::decode::{TokenConstraint, Unconstrained};
    let (vocab, eos) = (70, 33);
    let mut free = Unconstrained::without_end(vocab, eos);
    let mut mask = vec![0u32; 3];
    free.fill_mask(&mut mask).unwrap();
    let allowed: Vec<usize> = (0..96).filter(|&t| mask[t / 32] >> (t % 32) & 1 == 1).collect();
    assert_eq!(allowed, (0..vocab).filter(|&t| t != eos as usize).collect::<Vec<_>>());
    assert!(free.accept_token(eos).is_err());
    assert!(free.accept_token(32).is_ok() && free.accept_token(70).is_err());
}
