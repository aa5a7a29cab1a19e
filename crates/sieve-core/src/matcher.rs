//! Per-sequence matching state: masks, token acceptance, rollback, jump-forward.

use crate::constraint::{Constraint, Program, Runtime, lock};
use crate::error::MatchError;
use crate::grammar::Chart;
use crate::regex::{DEAD, DfaWalker, START};
use crate::tokencache::{self, TokenCache};
use crate::vocab::Vocabulary;
use std::sync::Arc;

/// One accepted step: a token (or a raw byte string) and how many bytes it added.
#[derive(Debug, Clone, Copy)]
struct Step {
    token: Option<u32>,
    bytes: usize,
}

#[derive(Debug, Clone)]
enum State {
    /// Lazy DFA state after each byte (`[START]` before any).
    Regex(Vec<u32>),
    Grammar(Chart),
}

/// The forced continuation at the current position (see [`Matcher::jump_forward`]).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct JumpForward {
    /// The bytes every valid continuation starts with (complete UTF-8 only).
    pub bytes: Vec<u8>,
    /// How many already accepted tokens to roll back before taking `tokens`.
    pub backoff: usize,
    /// Canonical tokens for the backed-off token's bytes followed by `bytes`.
    pub tokens: Vec<u32>,
}

/// Follows one sequence through a [`Constraint`]: cheap to create and to
/// clone (fork); the compiled constraint and its caches are shared.
#[derive(Debug, Clone)]
pub struct Matcher {
    constraint: Constraint,
    vocab: Arc<Vocabulary>,
    runtime: Arc<Runtime>,
    state: State,
    steps: Vec<Step>,
    terminated: bool,
    /// The limit error that stopped this matcher: every later call returns it, without redoing
    /// the work, until [`Matcher::reset`].
    failure: Option<MatchError>,
}

/// Largest forced continuation [`Matcher::jump_forward`] returns.
const MAX_FORCED: usize = 4096;

impl Matcher {
    /// A matcher at the start of `constraint` over `vocab`.
    pub fn new(constraint: &Constraint, vocab: &Arc<Vocabulary>) -> Matcher {
        let state = Self::initial(constraint);
        Matcher {
            runtime: constraint.runtime(vocab),
            constraint: constraint.clone(),
            vocab: vocab.clone(),
            state,
            steps: Vec::new(),
            terminated: false,
            failure: None,
        }
    }

    fn initial(constraint: &Constraint) -> State {
        match constraint.program() {
            Program::Regex(_) => State::Regex(vec![START]),
            Program::Grammar(g) => State::Grammar(Chart::new(g)),
        }
    }

    /// The vocabulary masks are computed over.
    pub fn vocabulary(&self) -> &Arc<Vocabulary> {
        &self.vocab
    }

    /// Back to the start, as if just created (a limit error is forgotten).
    pub fn reset(&mut self) {
        self.state = Self::initial(&self.constraint);
        self.steps.clear();
        self.terminated = false;
        self.failure = None;
    }

    /// The limit error that stopped this matcher, if one did.
    fn failed(&self) -> Result<(), MatchError> {
        self.failure.clone().map_or(Ok(()), Err)
    }

    /// `result`, remembering a limit error so that every later call returns it.
    fn sticky<T>(&mut self, result: Result<T, MatchError>) -> Result<T, MatchError> {
        if let Err(e @ MatchError::Limit { .. }) = &result {
            self.failure = Some(e.clone());
        }
        result
    }

    /// True when the output so far is a complete match (end of sequence allowed).
    pub fn is_accepting(&self) -> bool {
        match (&self.state, self.constraint.program(), &*self.runtime) {
            (State::Regex(st), _, Runtime::Regex(dfa)) => lock(dfa).is_accepting(*st.last().unwrap_or(&DEAD)),
            (State::Grammar(c), Program::Grammar(g), _) => c.is_accepting(g),
            _ => false,
        }
    }

    /// True after an end-of-sequence token was accepted.
    pub fn is_terminated(&self) -> bool {
        self.terminated
    }

    /// Bytes accepted so far.
    pub fn bytes_len(&self) -> usize {
        self.steps.iter().map(|s| s.bytes).sum()
    }

    /// Advances by `bytes` or leaves the state unchanged and fails.
    fn advance(&mut self, bytes: &[u8]) -> Result<(), MatchError> {
        match (&mut self.state, self.constraint.program(), &*self.runtime) {
            (State::Regex(st), Program::Regex(p), Runtime::Regex(dfa)) => {
                let mut dfa = lock(dfa);
                let base = st.len();
                for (i, &b) in bytes.iter().enumerate() {
                    let next = dfa.next(p, *st.last().unwrap_or(&DEAD), b);
                    match next {
                        Ok(s) if s != DEAD => st.push(s),
                        other => {
                            st.truncate(base);
                            other?;
                            return Err(MatchError::BytesRejected { at: i });
                        }
                    }
                }
                Ok(())
            }
            (State::Grammar(c), Program::Grammar(g), _) => {
                let base = c.bytes();
                let mut fuel = self.constraint.limits().mask_fuel;
                for (i, &b) in bytes.iter().enumerate() {
                    match c.push(g, b, &mut fuel) {
                        Ok(true) => {}
                        other => {
                            c.truncate(base);
                            other?;
                            return Err(MatchError::BytesRejected { at: i });
                        }
                    }
                }
                Ok(())
            }
            _ => Err(MatchError::Limit { what: "matcher and constraint disagree", limit: 0 }),
        }
    }

    /// Takes one token. A token the mask forbids is an error and changes nothing.
    /// An end-of-sequence token is accepted only in an accepting state and
    /// terminates the matcher.
    pub fn accept_token(&mut self, token: u32) -> Result<(), MatchError> {
        self.failed()?;
        if self.terminated {
            return Err(MatchError::Terminated);
        }
        if self.vocab.is_eos(token) {
            if !self.is_accepting() {
                return Err(MatchError::TokenRejected { token });
            }
            self.terminated = true;
            self.steps.push(Step { token: Some(token), bytes: 0 });
            return Ok(());
        }
        let vocab = self.vocab.clone();
        let bytes = vocab.token_bytes(token).ok_or(MatchError::UnknownToken { token })?;
        if bytes.is_empty() {
            return Err(MatchError::TokenRejected { token });
        }
        let advanced = self.advance(bytes);
        self.sticky(advanced).map_err(|e| match e {
            MatchError::BytesRejected { .. } => MatchError::TokenRejected { token },
            e => e,
        })?;
        self.steps.push(Step { token: Some(token), bytes: bytes.len() });
        Ok(())
    }

    /// Takes raw bytes as one step (undone by `rollback(1)`).
    pub fn accept_bytes(&mut self, bytes: &[u8]) -> Result<(), MatchError> {
        self.failed()?;
        if self.terminated {
            return Err(MatchError::Terminated);
        }
        let advanced = self.advance(bytes);
        self.sticky(advanced)?;
        self.steps.push(Step { token: None, bytes: bytes.len() });
        Ok(())
    }

    /// Undoes the last `n` steps (tokens, byte strings, end of sequence).
    pub fn rollback(&mut self, n: usize) -> Result<(), MatchError> {
        self.failed()?;
        if n > self.steps.len() {
            return Err(MatchError::RollbackTooFar { requested: n, available: self.steps.len() });
        }
        for _ in 0..n {
            let Some(step) = self.steps.pop() else { break };
            if step.bytes == 0 {
                self.terminated = false;
            }
            match &mut self.state {
                State::Regex(st) => st.truncate(st.len() - step.bytes),
                State::Grammar(c) => c.truncate(c.bytes() - step.bytes),
            }
        }
        Ok(())
    }

    /// Length of the longest prefix of `tokens` this matcher accepts (for
    /// checking speculative drafts); the state is unchanged afterwards.
    pub fn validate_tokens(&mut self, tokens: &[u32]) -> usize {
        let mut n = 0;
        for &t in tokens {
            if self.accept_token(t).is_err() {
                break;
            }
            n += 1;
        }
        // Rolling back exactly the steps just taken cannot fail.
        let _ = self.rollback(n);
        n
    }

    /// Fills `mask` (at least `ceil(width / 32)` words): bit `i % 32` of
    /// word `i / 32` is set when token `i` may come next. End-of-sequence
    /// ids are set when the output is complete. After termination no bit
    /// is set.
    pub fn fill_next_token_bitmask(&mut self, mask: &mut [u32]) -> Result<(), MatchError> {
        let words = self.vocab.mask_words();
        if mask.len() < words {
            return Err(MatchError::MaskTooSmall { words: mask.len(), needed: words });
        }
        let mask = &mut mask[..words];
        mask.fill(0);
        self.failed()?;
        if self.terminated {
            return Ok(());
        }
        let trie = self.vocab.trie();
        let result = match (&mut self.state, self.constraint.program(), &*self.runtime) {
            (State::Regex(st), Program::Regex(p), Runtime::Regex(dfa)) => {
                let mut dfa = lock(dfa);
                let s = *st.last().unwrap_or(&DEAD);
                if let Some(m) = dfa.masks.get(&s).cloned() {
                    drop(dfa);
                    mask.copy_from_slice(&m);
                    Ok(())
                } else {
                    let mut w = DfaWalker { prog: p, dfa: &mut dfa, stack: vec![s] };
                    let r = trie.walk(&mut w, mask);
                    if r.is_ok() {
                        dfa.masks.insert(s, Arc::from(&*mask));
                    }
                    r.map(|_| ())
                }
            }
            (State::Grammar(c), Program::Grammar(g), Runtime::Grammar(cache)) => {
                let limits = self.constraint.limits();
                let mut fuel = limits.mask_fuel;
                let analyses = {
                    let mut cache = lock(cache);
                    if cache.memory() > limits.max_token_cache_bytes {
                        *cache = TokenCache::default();
                    }
                    cache.analyses(g, &self.vocab, c, &mut fuel, limits.mask_fuel)
                };
                analyses.and_then(|a| tokencache::fill(&a, g, c, mask, &mut fuel, limits.mask_fuel))
            }
            _ => Err(MatchError::Limit { what: "matcher and constraint disagree", limit: 0 }),
        };
        if let Err(e) = result {
            mask.fill(0);
            return self.sticky(Err(e));
        }
        if self.is_accepting() {
            for &t in self.vocab.eos_ids() {
                mask[(t / 32) as usize] |= 1 << (t % 32);
            }
        }
        Ok(())
    }

    /// The bytes every valid continuation must start with, stopping where the
    /// output could end or where more than one byte may follow.
    pub fn forced_bytes(&mut self) -> Result<Vec<u8>, MatchError> {
        self.failed()?;
        let mut out = Vec::new();
        let mut result = Ok(());
        while out.len() < MAX_FORCED && !self.is_accepting() {
            let next = match self.next_bytes() {
                Ok(next) => next,
                Err(e) => {
                    result = Err(e);
                    break;
                }
            };
            let count: u32 = next.iter().map(|w| w.count_ones()).sum();
            if count != 1 {
                break;
            }
            let b = next.iter().enumerate().find(|(_, w)| **w != 0).map_or(0, |(i, w)| i as u32 * 64 + w.trailing_zeros());
            let b = b as u8;
            if self.advance(&[b]).is_err() {
                break;
            }
            out.push(b);
        }
        // Back to where it started, whether or not a limit stopped the walk.
        match &mut self.state {
            State::Regex(st) => st.truncate(st.len() - out.len()),
            State::Grammar(c) => c.truncate(c.bytes() - out.len()),
        }
        self.sticky(result)?;
        Ok(out)
    }

    /// The set of bytes that may come next, as 256 bits.
    fn next_bytes(&mut self) -> Result<[u64; 4], MatchError> {
        match (&mut self.state, self.constraint.program(), &*self.runtime) {
            (State::Regex(st), Program::Regex(p), Runtime::Regex(dfa)) => {
                let mut dfa = lock(dfa);
                let s = *st.last().unwrap_or(&DEAD);
                let mut set = [0u64; 4];
                for b in 0..=255u8 {
                    if dfa.next(p, s, b)? != DEAD {
                        set[(b / 64) as usize] |= 1 << (b % 64);
                    }
                }
                Ok(set)
            }
            (State::Grammar(c), Program::Grammar(g), _) => Ok(c.next_bytes(g)),
            _ => Ok([0; 4]),
        }
    }

    /// The forced continuation, as bytes and as canonical tokens. `tokenize`
    /// turns bytes into the tokenizer's canonical ids (no special tokens) or
    /// returns `None`. The last accepted token is re-tokenized together with
    /// the forced bytes; when the result does not start with that token it is
    /// backed off (`backoff = 1`). The returned tokens are checked against the
    /// constraint; when they do not fit, `tokens` is empty and only `bytes`
    /// is returned. The matcher state is unchanged.
    pub fn jump_forward<F>(&mut self, mut tokenize: F) -> Result<JumpForward, MatchError>
    where
        F: FnMut(&[u8]) -> Option<Vec<u32>>,
    {
        let mut bytes = self.forced_bytes()?;
        let valid = match std::str::from_utf8(&bytes) {
            Ok(_) => bytes.len(),
            Err(e) => e.valid_up_to(),
        };
        bytes.truncate(valid);
        if bytes.is_empty() {
            return Ok(JumpForward::default());
        }
        let last = self.steps.last().and_then(|s| s.token.filter(|_| s.bytes > 0));
        let mut candidates = Vec::new();
        if let Some(last) = last {
            let mut joined = self.vocab.token_bytes(last).unwrap_or_default().to_vec();
            joined.extend_from_slice(&bytes);
            if let Some(toks) = tokenize(&joined) {
                match toks.split_first() {
                    Some((&first, rest)) if first == last => candidates.push((0, rest.to_vec())),
                    _ => candidates.push((1, toks)),
                }
            }
        }
        if let Some(toks) = tokenize(&bytes) {
            candidates.push((0, toks));
        }
        for (backoff, tokens) in candidates {
            let mut probe = self.clone();
            let fits = probe.rollback(backoff).is_ok()
                && tokens.iter().all(|&t| probe.accept_token(t).is_ok())
                && probe.bytes_len() == self.bytes_len() + bytes.len();
            if fits {
                return Ok(JumpForward { bytes, backoff, tokens });
            }
        }
        Ok(JumpForward { bytes, backoff: 0, tokens: Vec::new() })
    }
}

/// Fills one mask row per matcher into `masks` (`matchers.len()` rows of
/// `words` words each). A failing matcher gets an all-zero row and its own
/// error; the others are unaffected. With the `parallel` feature the rows
/// are filled on several threads (see [`fill_bitmask_rows`]).
pub fn fill_next_token_bitmasks(
    matchers: &mut [Matcher],
    masks: &mut [u32],
    words: usize,
) -> Vec<Result<(), MatchError>> {
    if words == 0 || masks.len() < matchers.len() * words {
        let needed = matchers.len() * words;
        return matchers.iter().map(|_| Err(MatchError::MaskTooSmall { words: masks.len(), needed })).collect();
    }
    fill_bitmask_rows(matchers.iter_mut().zip(masks.chunks_mut(words)).collect())
}

/// Fills each matcher's mask into its row, in any rows of any buffers: the
/// results in the order given. With the `parallel` feature the rows are
/// filled on several threads, rows of one constraint side by side too: they
/// hold its shared cache only to look up (or make) their analyses, and fill
/// from them apart.
pub fn fill_bitmask_rows(work: Vec<(&mut Matcher, &mut [u32])>) -> Vec<Result<(), MatchError>> {
    #[cfg(feature = "parallel")]
    {
        use rayon::prelude::*;
        let mut work: Vec<(usize, &mut Matcher, &mut [u32])> = work.into_iter().enumerate().map(|(i, (m, row))| (i, m, row)).collect();
        work.sort_by_key(|(_, m, _)| Arc::as_ptr(&m.runtime) as usize);
        let mut results: Vec<(usize, Result<(), MatchError>)> =
            work.into_par_iter().map(|(i, m, row)| (i, m.fill_next_token_bitmask(row))).collect();
        results.sort_by_key(|(i, _)| *i);
        results.into_iter().map(|(_, r)| r).collect()
    }
    #[cfg(not(feature = "parallel"))]
    {
        work.into_iter().map(|(m, row)| m.fill_next_token_bitmask(row)).collect()
    }
}

/// The unit tests' vocabulary: every string of one to three bytes of `alphabet`.
#[cfg(test)]
pub(crate) fn short_strings_vocab(alphabet: &[u8]) -> Arc<Vocabulary> {
    let mut tokens: Vec<Option<Vec<u8>>> = Vec::new();
    for a in alphabet {
        tokens.push(Some(vec![*a]));
        for b in alphabet {
            tokens.push(Some(vec![*a, *b]));
            tokens.extend(alphabet.iter().map(|c| Some(vec![*a, *b, *c])));
        }
    }
    Arc::new(Vocabulary::from_token_bytes(tokens))
}

/// The brute-force check of the unit tests: fills `m`'s mask into `mask`, then
/// takes every token on the parser. Returns the tokens the parser takes, or
/// the first token where the mask and the parser disagree.
#[cfg(test)]
pub(crate) fn mask_equals_parser(m: &mut Matcher, mask: &mut [u32]) -> Result<Vec<u32>, u32> {
    m.fill_next_token_bitmask(mask).unwrap();
    let mut allowed = Vec::new();
    for t in 0..m.vocab.len() as u32 {
        let ok = m.accept_token(t).is_ok();
        if ok {
            m.rollback(1).unwrap();
            allowed.push(t);
        }
        if (mask[t as usize / 32] >> (t % 32) & 1 == 1) != ok {
            return Err(t);
        }
    }
    Ok(allowed)
}
