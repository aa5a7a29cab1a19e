//! The constrained decode loop.
//!
//! Each step:
//! 1. if the constraint forces a continuation (jump-forward), back off the last one or two
//!    generated tokens, re-tokenize their bytes plus the forced bytes canonically, and queue
//!    the new tokens instead of sampling them one by one;
//! 2. run every queued token through the model in one forward pass (the whole prompt on the
//!    first step) and flush the device so the GPU starts;
//! 3. meanwhile compute the constraint's bitmask for the next token on the CPU (on the CPU
//!    path the pass, which takes every thread, has ended by then);
//! 4. pick the token from the masked logits ([`Picker`]: on the GPU only the 4-byte id comes
//!    back) and feed it to the constraint;
//! 5. stop at end of sequence, when the constraint terminates, or after `max_tokens`.
//!
//! A constraint still to be compiled ([`Deferred`]) compiles while the prompt prefills: the
//! prompt goes to the GPU before the loop starts, alone (forced tokens then take a pass of
//! their own).
//!
//! Everything that waits on the device is `async` (wasm forbids blocking readbacks).

use crate::error::ModelError;
use crate::model::{KvCache, Llama, Logits};
use crate::sampling::{Sampling, pick_reference};
use crate::tokenizer::Tokenizer;

/// What the decode loop needs from a constraint (sieve-core's `Matcher` implements it).
pub trait TokenConstraint {
    /// Sets bit `i % 32` of word `i / 32` of `mask` for every token `i` allowed next. `mask`
    /// holds `ceil(V / 32)` zeroed words.
    fn fill_mask(&mut self, mask: &mut [u32]) -> Result<(), ModelError>;
    /// Advances past `token`; an error when the constraint forbids it.
    fn accept_token(&mut self, token: u32) -> Result<(), ModelError>;
    /// Forgets the last `n` accepted tokens.
    fn rollback(&mut self, n: usize) -> Result<(), ModelError>;
    /// The bytes every valid continuation starts with (empty when there is a choice).
    fn forced_bytes(&mut self) -> Result<Vec<u8>, ModelError>;
    /// Whether the constraint is complete and allows nothing more.
    fn is_terminated(&self) -> bool;
    /// Whether the constraint is still to be compiled ([`Deferred`]): the decode loop then sends
    /// the prompt to the GPU first and calls [`prepare`](Self::prepare) while it prefills.
    fn is_pending(&self) -> bool {
        false
    }
    /// Compiles a pending constraint (nothing to do for others).
    fn prepare(&mut self) -> Result<(), ModelError> {
        Ok(())
    }
}

/// The work that compiles a constraint.
pub type Compile<'a> = Box<dyn FnOnce() -> Result<Box<dyn TokenConstraint + 'a>, ModelError> + 'a>;

/// A constraint compiled only once the prompt's prefill is on the GPU, so that compiling a new
/// constraint overlaps prefilling instead of adding to the time to first token.
pub struct Deferred<'a> {
    compile: Option<Compile<'a>>,
    ready: Option<Box<dyn TokenConstraint + 'a>>,
}

impl<'a> Deferred<'a> {
    /// A constraint that `compile` makes when the decode loop asks for it.
    pub fn new(compile: Compile<'a>) -> Self {
        Self { compile: Some(compile), ready: None }
    }

    fn ready(&mut self) -> Result<&mut (dyn TokenConstraint + 'a), ModelError> {
        self.prepare()?;
        match self.ready.as_deref_mut() {
            Some(c) => Ok(c),
            None => Err(ModelError::Constraint("the constraint did not compile".into())),
        }
    }
}

impl TokenConstraint for Deferred<'_> {
    fn fill_mask(&mut self, mask: &mut [u32]) -> Result<(), ModelError> {
        self.ready()?.fill_mask(mask)
    }

    fn accept_token(&mut self, token: u32) -> Result<(), ModelError> {
        self.ready()?.accept_token(token)
    }

    fn rollback(&mut self, n: usize) -> Result<(), ModelError> {
        self.ready()?.rollback(n)
    }

    fn forced_bytes(&mut self) -> Result<Vec<u8>, ModelError> {
        self.ready()?.forced_bytes()
    }

    fn is_terminated(&self) -> bool {
        self.ready.as_ref().is_some_and(|c| c.is_terminated())
    }

    fn is_pending(&self) -> bool {
        self.compile.is_some()
    }

    fn prepare(&mut self) -> Result<(), ModelError> {
        if let Some(compile) = self.compile.take() {
            self.ready = Some(compile()?);
        }
        Ok(())
    }
}

/// No constraint: every token of the vocabulary is allowed, nothing is forced.
#[derive(Debug, Clone)]
pub struct Unconstrained {
    vocab: usize,
    /// A token never allowed (the end of sequence, to decode an exact number of tokens).
    forbidden: Option<u32>,
}

impl Unconstrained {
    /// Allows ids `0..vocab`.
    pub fn new(vocab: usize) -> Self {
        Self { vocab, forbidden: None }
    }

    /// Allows ids `0..vocab` except `eos`, so that decoding runs to `max_tokens` (benchmarks
    /// compare decoding of the same number of tokens).
    pub fn without_end(vocab: usize, eos: u32) -> Self {
        Self { vocab, forbidden: Some(eos) }
    }
}

impl TokenConstraint for Unconstrained {
    fn fill_mask(&mut self, mask: &mut [u32]) -> Result<(), ModelError> {
        for (w, word) in mask.iter_mut().enumerate() {
            let allowed = self.vocab.saturating_sub(w * 32).min(32);
            *word = if allowed == 32 { u32::MAX } else { (1u32 << allowed) - 1 };
        }
        if let Some(t) = self.forbidden
            && let Some(word) = mask.get_mut(t as usize / 32)
        {
            *word &= !(1 << (t % 32));
        }
        Ok(())
    }

    fn accept_token(&mut self, token: u32) -> Result<(), ModelError> {
        match (token as usize) < self.vocab && Some(token) != self.forbidden {
            true => Ok(()),
            false => Err(ModelError::Constraint(format!("token {token} is not allowed"))),
        }
    }

    fn rollback(&mut self, _n: usize) -> Result<(), ModelError> {
        Ok(())
    }

    fn forced_bytes(&mut self) -> Result<Vec<u8>, ModelError> {
        Ok(Vec::new())
    }

    fn is_terminated(&self) -> bool {
        false
    }
}

/// sieve-core's matcher: masks, tokens, rollback and forced bytes map one to one.
impl TokenConstraint for sieve_core::Matcher {
    fn fill_mask(&mut self, mask: &mut [u32]) -> Result<(), ModelError> {
        self.fill_next_token_bitmask(mask).map_err(|e| ModelError::Constraint(e.to_string()))
    }

    fn accept_token(&mut self, token: u32) -> Result<(), ModelError> {
        sieve_core::Matcher::accept_token(self, token).map_err(|e| ModelError::Constraint(e.to_string()))
    }

    fn rollback(&mut self, n: usize) -> Result<(), ModelError> {
        sieve_core::Matcher::rollback(self, n).map_err(|e| ModelError::Constraint(e.to_string()))
    }

    fn forced_bytes(&mut self) -> Result<Vec<u8>, ModelError> {
        sieve_core::Matcher::forced_bytes(self).map_err(|e| ModelError::Constraint(e.to_string()))
    }

    fn is_terminated(&self) -> bool {
        sieve_core::Matcher::is_terminated(self)
    }
}

/// Where the next token is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Picker {
    /// On the GPU with the WGSL kernels; only the chosen id is read back (wgpu devices only).
    Gpu,
    /// On the CPU from the read-back logits row (any device; the reference).
    Cpu,
}

impl Picker {
    /// Chooses the next token from `logits` under `mask`. Logits already in memory (the CPU
    /// path) are picked from there, whatever the picker.
    pub async fn pick(self, logits: Logits, mask: &[u32], vocab: usize, sampling: &Sampling, step: u32) -> Result<u32, ModelError> {
        match (self, logits) {
            (Picker::Gpu, Logits::Device(logits)) => crate::kernels::masked_pick(logits, mask, vocab, sampling, step).await,
            (_, logits) => pick_reference(&logits.into_vec().await?, mask, vocab, sampling, step),
        }
    }
}

/// Settings of one generation.
#[derive(Debug, Clone, PartialEq)]
pub struct GenerateConfig {
    /// Most completion tokens (forced ones included).
    pub max_tokens: usize,
    pub sampling: Sampling,
    /// Prefill forced continuations in one pass instead of sampling them.
    pub jump_forward: bool,
    pub picker: Picker,
}

/// Why generation stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// The model chose the end-of-sequence token.
    EndOfSequence,
    /// The constraint is complete and allows nothing more.
    ConstraintTerminated,
    /// `max_tokens` were generated.
    MaxTokens,
    /// The caller's observer asked to stop.
    Cancelled,
}

/// New output text of one step, for streaming: the bytes the step appended that complete UTF-8
/// characters. Jump-forward may back off and re-tokenize generated tokens, but it never changes
/// bytes already produced, so the deltas of a generation concatenate to its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Delta<'a> {
    pub text: &'a str,
    /// Whether the text was forced by the constraint (jump-forward) rather than sampled.
    pub forced: bool,
}

/// Counters and timings of one generation.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stats {
    pub prompt_tokens: usize,
    pub completion_tokens: usize,
    /// Completion tokens added by jump-forward rather than sampled (net of backed-off tokens).
    pub forced_tokens: usize,
    pub forward_passes: usize,
    /// Wall time of the whole generation, prompt prefill included, in milliseconds.
    pub elapsed_ms: f64,
    /// Wall time to the first sampled token (the prompt's prefill, its mask and the pick), in
    /// milliseconds; `None` when no token was sampled.
    pub first_token_ms: Option<f64>,
    /// Time to compute each step's mask, in microseconds.
    pub mask_us: Vec<f64>,
    /// Time spent in the constraint, in milliseconds: its masks, advancing it by each token,
    /// and jump-forward's forced text and back-offs (not a deferred constraint's compile, which
    /// overlaps the prompt's prefill). Free decoding spends some too (its mask leaves out the
    /// end of sequence), so the difference between two generations' is what a constraint costs
    /// a run, without the noise of comparing their whole times.
    pub constraint_ms: f64,
}

impl Stats {
    /// Completion tokens per second of wall time.
    pub fn tokens_per_s(&self) -> f64 {
        if self.elapsed_ms > 0.0 { self.completion_tokens as f64 * 1000.0 / self.elapsed_ms } else { 0.0 }
    }

    /// The `q`-quantile (0..=1) of the mask times, 0 when there were none.
    pub fn mask_us_quantile(&self, q: f64) -> f64 {
        let mut v = self.mask_us.clone();
        v.sort_by(f64::total_cmp);
        match v.len() {
            0 => 0.0,
            n => v[((n - 1) as f64 * q.clamp(0.0, 1.0)).round() as usize],
        }
    }
}

/// The result of [`generate`].
#[derive(Debug, Clone, PartialEq)]
pub struct Generation {
    /// Completion token ids (the end-of-sequence token included when it was chosen).
    pub tokens: Vec<u32>,
    /// Completion text, end-of-sequence token left out.
    pub text: String,
    pub stop: StopReason,
    pub stats: Stats,
}

/// Generates a completion of `prompt` under `constraint`. `clock` returns milliseconds from any
/// fixed origin (`performance.now()` in a browser, an `Instant` natively).
pub async fn generate(
    model: &Llama,
    tokenizer: &Tokenizer,
    constraint: &mut dyn TokenConstraint,
    prompt: &[u32],
    config: &GenerateConfig,
    clock: &dyn Fn() -> f64,
) -> Result<Generation, ModelError> {
    generate_streaming(model, tokenizer, constraint, prompt, config, clock, &mut |_| true).await
}

/// [`generate`], calling `on_delta` with each step's new text as it is produced; when it returns
/// false the generation stops with [`StopReason::Cancelled`].
pub async fn generate_streaming(
    model: &Llama,
    tokenizer: &Tokenizer,
    constraint: &mut dyn TokenConstraint,
    prompt: &[u32],
    config: &GenerateConfig,
    clock: &dyn Fn() -> f64,
    on_delta: &mut dyn FnMut(Delta<'_>) -> bool,
) -> Result<Generation, ModelError> {
    let start = clock();
    let mut stream = TextStream::default();
    let vocab = model.config().vocab;
    let mut cache = KvCache::new(model);
    let mut tokens = prompt.to_vec();
    let mut mask = vec![0u32; vocab.div_ceil(32)];
    let mut stats = Stats { prompt_tokens: prompt.len(), ..Stats::default() };
    let mut step = 0u32;
    let mut jumped = false;
    // The logits of a pass already on the GPU for `tokens` as they are.
    let mut submitted = None;
    if constraint.is_pending() {
        submitted = Some(submit(model, &tokens, &mut cache)?);
        stats.forward_passes += 1;
        constraint.prepare()?;
    }
    let stop = loop {
        let generated = tokens.len() - prompt.len();
        if generated >= config.max_tokens {
            break StopReason::MaxTokens;
        }
        if constraint.is_terminated() {
            break StopReason::ConstraintTerminated;
        }
        if config.jump_forward && !jumped {
            jumped = true;
            let t0 = clock();
            let forced = constraint.forced_bytes()?;
            stats.constraint_ms += clock() - t0;
            if !forced.is_empty()
                && let Some((backoff, ids)) = retokenize(tokenizer, &tokens[prompt.len()..], &forced)?
            {
                let t0 = clock();
                constraint.rollback(backoff)?;
                tokens.truncate(tokens.len() - backoff);
                cache.truncate(cache.len().min(tokens.len()));
                let room = config.max_tokens - (tokens.len() - prompt.len());
                for &id in ids.iter().take(room) {
                    constraint.accept_token(id)?;
                    tokens.push(id);
                }
                stats.constraint_ms += clock() - t0;
                stats.forced_tokens += ids.len().min(room).saturating_sub(backoff);
                submitted = None;
                if !stream.emit(tokenizer, &tokens[prompt.len()..], true, on_delta) {
                    break StopReason::Cancelled;
                }
                continue;
            }
        }
        let logits = match submitted.take() {
            Some(logits) => logits,
            None => {
                stats.forward_passes += 1;
                submit(model, &tokens, &mut cache)?
            }
        };
        let t0 = clock();
        mask.fill(0);
        constraint.fill_mask(&mut mask)?;
        let mask_ms = clock() - t0;
        stats.mask_us.push(mask_ms * 1000.0);
        let token = config.picker.pick(logits, &mask, vocab, &config.sampling, step).await?;
        step += 1;
        stats.first_token_ms.get_or_insert_with(|| clock() - start);
        jumped = false;
        let t0 = clock();
        constraint.accept_token(token)?;
        stats.constraint_ms += mask_ms + clock() - t0;
        tokens.push(token);
        if tokenizer.is_end(token) {
            break StopReason::EndOfSequence;
        }
        if !stream.emit(tokenizer, &tokens[prompt.len()..], false, on_delta) {
            break StopReason::Cancelled;
        }
    };
    if stop != StopReason::Cancelled {
        stream.finish(tokenizer, &tokens[prompt.len()..], on_delta);
    }
    let completion = tokens.split_off(prompt.len());
    stats.completion_tokens = completion.len();
    let text_ids: Vec<u32> = completion.iter().copied().filter(|&t| !tokenizer.is_end(t)).collect();
    let text = tokenizer.decode(&text_ids)?;
    stats.elapsed_ms = clock() - start;
    Ok(Generation { tokens: completion, text, stop, stats })
}

/// Runs the tokens of `tokens` that are not in `cache` through the model and flushes the device,
/// so the GPU works while the caller goes on; returns the last token's logits.
fn submit(model: &Llama, tokens: &[u32], cache: &mut KvCache) -> Result<Logits, ModelError> {
    let logits = model.forward(&tokens[cache.len()..], cache)?;
    model.flush()?;
    Ok(logits)
}

/// The streamed part of a completion: how many of its bytes were already sent as text.
#[derive(Debug, Default)]
struct TextStream {
    sent: usize,
}

impl TextStream {
    /// Sends what is left, an incomplete last character included (as U+FFFD).
    fn finish(&mut self, tokenizer: &Tokenizer, completion: &[u32], on_delta: &mut dyn FnMut(Delta<'_>) -> bool) {
        self.send(tokenizer, completion, false, true, on_delta);
    }

    /// Sends the complete UTF-8 characters (invalid bytes as U+FFFD) of `completion`'s bytes (end of sequence left out)
    /// past those already sent; returns `on_delta`'s verdict (true when nothing was new).
    fn emit(&mut self, tokenizer: &Tokenizer, completion: &[u32], forced: bool, on_delta: &mut dyn FnMut(Delta<'_>) -> bool) -> bool {
        self.send(tokenizer, completion, forced, false, on_delta)
    }

    fn send(
        &mut self,
        tokenizer: &Tokenizer,
        completion: &[u32],
        forced: bool,
        last: bool,
        on_delta: &mut dyn FnMut(Delta<'_>) -> bool,
    ) -> bool {
        let bytes: Vec<u8> = completion
            .iter()
            .filter(|&&t| !tokenizer.is_end(t))
            .flat_map(|&t| tokenizer.token_bytes(t).iter().copied())
            .collect();
        let new = bytes.get(self.sent..).unwrap_or_default();
        let complete = if last { new } else { &new[..new.len() - incomplete_tail(new)] };
        if complete.is_empty() {
            return true;
        }
        self.sent += complete.len();
        let text = String::from_utf8_lossy(complete);
        on_delta(Delta { text: &text, forced })
    }
}

/// How many bytes at the end of `bytes` start a UTF-8 character that is not complete yet.
fn incomplete_tail(bytes: &[u8]) -> usize {
    for back in 1..=bytes.len().min(3) {
        let b = bytes[bytes.len() - back];
        let len = match b {
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF7 => 4,
            0x80..=0xBF => continue,
            _ => return 0,
        };
        return if len > back { back } else { 0 };
    }
    0
}

/// Canonical tokens for the last one or two `generated` tokens followed by `forced`: returns how
/// many tokens to back off and the tokens that replace them, preferring the longest back-off
/// whose bytes re-tokenize exactly (no special tokens, valid UTF-8). `None` when none does.
/// Backed-off tokens that the new tokens begin with are kept, so the model does not run them
/// again.
fn retokenize(tokenizer: &Tokenizer, generated: &[u32], forced: &[u8]) -> Result<Option<(usize, Vec<u32>)>, ModelError> {
    for backoff in (0..=generated.len().min(2)).rev() {
        let tail = &generated[generated.len() - backoff..];
        if tail.iter().any(|&t| tokenizer.is_special(t)) {
            continue;
        }
        let mut bytes: Vec<u8> = tail.iter().flat_map(|&t| tokenizer.token_bytes(t).iter().copied()).collect();
        bytes.extend_from_slice(forced);
        if let Some(ids) = tokenizer.encode_exact(&bytes)?
            && !ids.is_empty()
        {
            let kept = tail.iter().zip(&ids).take_while(|(a, b)| a == b).count();
            return Ok(Some((backoff - kept, ids[kept..].to_vec())));
        }
    }
    Ok(None)
}
