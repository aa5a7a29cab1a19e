//! Regex constraints: regex-syntax parses, regex-automata builds a Thompson
//! NFA, and a lazy DFA of our own walks it byte by byte. States are built
//! only when a walk reaches them and never evicted, so a state id stays
//! valid for the life of the DFA; [`crate::Limits::max_dfa_states`] bounds them.
//!
//! The NFA is trimmed to the states that can still reach a match, so a DFA
//! state is non-empty exactly when some continuation of the input matches.

use crate::error::{CompileError, CompileErrorKind, MatchError};
use crate::trie::Walker;
use regex_automata::nfa::thompson::{self, NFA, State, WhichCaptures};
use regex_automata::util::primitives::StateID;
use std::collections::HashMap;
use std::sync::Arc;

/// A compiled regex: the trimmed NFA and its anchored start set.
#[derive(Debug)]
pub(crate) struct RegexProgram {
    nfa: NFA,
    live: Vec<bool>,
    start: Box<[u32]>,
    classes: [u8; 256],
    alphabet: usize,
}

impl RegexProgram {
    /// Compiles `pattern` for a full (anchored both ends) match.
    pub fn new(pattern: &str, nfa_bytes: usize) -> Result<RegexProgram, CompileError> {
        let hir = regex_syntax::ParserBuilder::new()
            .unicode(true)
            .utf8(true)
            .nest_limit(200)
            .build()
            .parse(pattern)
            .map_err(|e| {
                let offset = match &e {
                    regex_syntax::Error::Parse(p) => p.span().start.offset,
                    regex_syntax::Error::Translate(t) => t.span().start.offset,
                    _ => 0,
                };
                CompileError::at(CompileErrorKind::Regex, format!("invalid regex: {e}"), pattern, offset)
            })?;
        if !hir.properties().look_set().is_empty() {
            return Err(CompileError::new(
                CompileErrorKind::Unsupported,
                "regex anchors and word boundaries (^ $ \\b \\B \\A \\z) are not supported: constraints always match the whole output",
            ));
        }
        let nfa = thompson::Compiler::new()
            .configure(
                thompson::Config::new()
                    .which_captures(WhichCaptures::None)
                    .nfa_size_limit(Some(nfa_bytes))
                    .shrink(false),
            )
            .build_from_hir(&hir)
            .map_err(|e| CompileError::new(CompileErrorKind::Limit, format!("regex too large: {e}")))?;
        let live = live_states(&nfa);
        let mut classes = [0u8; 256];
        for b in 0..=255u8 {
            classes[b as usize] = nfa.byte_classes().get(b);
        }
        let alphabet = nfa.byte_classes().alphabet_len();
        let mut prog = RegexProgram { start: Box::new([]), nfa, live, classes, alphabet };
        let mut start = Vec::new();
        prog.closure(prog.nfa.start_anchored(), &mut start, &mut Vec::new());
        start.sort_unstable();
        start.dedup();
        if start.is_empty() {
            return Err(CompileError::new(CompileErrorKind::Empty, "the regex matches no string"));
        }
        prog.start = start.into_boxed_slice();
        Ok(prog)
    }

    /// Approximate heap bytes held.
    pub fn memory(&self) -> usize {
        self.nfa.memory_usage() + self.live.len() + self.start.len() * 4
    }

    /// Adds the consuming and match states reachable from `id` by epsilon moves.
    fn closure(&self, id: StateID, out: &mut Vec<u32>, stack: &mut Vec<StateID>) {
        stack.push(id);
        let mut seen: Vec<StateID> = Vec::new();
        while let Some(id) = stack.pop() {
            if !self.live[id.as_usize()] || seen.contains(&id) {
                continue;
            }
            seen.push(id);
            match self.nfa.state(id) {
                State::ByteRange { .. } | State::Sparse(_) | State::Dense(_) | State::Match { .. } => {
                    out.push(id.as_u32())
                }
                State::Union { alternates } => stack.extend(alternates.iter().rev()),
                State::BinaryUnion { alt1, alt2 } => stack.extend([*alt2, *alt1]),
                State::Capture { next, .. } | State::Look { next, .. } => stack.push(*next),
                State::Fail => {}
            }
        }
    }
}

/// NFA states from which a match state is reachable.
fn live_states(nfa: &NFA) -> Vec<bool> {
    let n = nfa.states().len();
    let mut preds: Vec<Vec<u32>> = vec![Vec::new(); n];
    let mut todo = Vec::new();
    for (i, s) in nfa.states().iter().enumerate() {
        let mut edge = |to: StateID| preds[to.as_usize()].push(i as u32);
        match s {
            State::ByteRange { trans } => edge(trans.next),
            State::Sparse(t) => t.transitions.iter().for_each(|t| edge(t.next)),
            State::Dense(t) => t.transitions.iter().for_each(|&to| edge(to)),
            State::Union { alternates } => alternates.iter().for_each(|&to| edge(to)),
            State::BinaryUnion { alt1, alt2 } => {
                edge(*alt1);
                edge(*alt2)
            }
            State::Capture { next, .. } | State::Look { next, .. } => edge(*next),
            State::Match { .. } => todo.push(i as u32),
            State::Fail => {}
        }
    }
    let mut live = vec![false; n];
    while let Some(i) = todo.pop() {
        if !std::mem::replace(&mut live[i as usize], true) {
            todo.extend(&preds[i as usize]);
        }
    }
    live
}

/// State id of the DFA state with no NFA states (nothing can match).
pub(crate) const DEAD: u32 = 0;
/// State id of the start state.
pub(crate) const START: u32 = 1;
const UNKNOWN: u32 = u32::MAX;

/// The lazily built DFA over a [`RegexProgram`], with a mask cache per state.
#[derive(Debug)]
pub(crate) struct LazyDfa {
    sets: Vec<Box<[u32]>>,
    accepting: Vec<bool>,
    index: HashMap<Box<[u32]>, u32>,
    trans: Vec<u32>,
    max_states: usize,
    /// Token mask of each state whose mask has been computed.
    pub masks: HashMap<u32, Arc<[u32]>>,
}

impl LazyDfa {
    pub fn new(prog: &RegexProgram, max_states: usize) -> LazyDfa {
        let mut dfa = LazyDfa {
            sets: Vec::new(),
            accepting: Vec::new(),
            index: HashMap::new(),
            trans: Vec::new(),
            max_states: max_states.max(2),
            masks: HashMap::new(),
        };
        dfa.add(prog, Box::new([]));
        dfa.add(prog, prog.start.clone());
        dfa
    }

    fn add(&mut self, prog: &RegexProgram, set: Box<[u32]>) -> u32 {
        let id = self.sets.len() as u32;
        let accepting = set.iter().any(|&s| matches!(prog.nfa.state(StateID::new_unchecked(s as usize)), State::Match { .. }));
        self.accepting.push(accepting);
        self.index.insert(set.clone(), id);
        self.sets.push(set);
        let fill = if id == DEAD { DEAD } else { UNKNOWN };
        self.trans.extend(std::iter::repeat_n(fill, prog.alphabet));
        id
    }

    /// True when the input so far is a full match.
    pub fn is_accepting(&self, s: u32) -> bool {
        self.accepting[s as usize]
    }

    /// The state after `byte`, building it if needed; `DEAD` when rejected.
    #[inline]
    pub fn next(&mut self, prog: &RegexProgram, s: u32, byte: u8) -> Result<u32, MatchError> {
        let slot = s as usize * prog.alphabet + prog.classes[byte as usize] as usize;
        let t = self.trans[slot];
        if t != UNKNOWN {
            return Ok(t);
        }
        let mut out = Vec::new();
        let mut stack = Vec::new();
        for &n in self.sets[s as usize].iter() {
            let next = match prog.nfa.state(StateID::new_unchecked(n as usize)) {
                State::ByteRange { trans } => trans.matches_byte(byte).then_some(trans.next),
                State::Sparse(t) => t.matches_byte(byte),
                State::Dense(t) => t.matches_byte(byte),
                _ => None,
            };
            if let Some(next) = next {
                prog.closure(next, &mut out, &mut stack);
            }
        }
        out.sort_unstable();
        out.dedup();
        let t = match self.index.get(out.as_slice()) {
            Some(&t) => t,
            None if self.sets.len() >= self.max_states => {
                return Err(MatchError::Limit { what: "regex DFA states", limit: self.max_states });
            }
            None => self.add(prog, out.into_boxed_slice()),
        };
        self.trans[slot] = t;
        Ok(t)
    }

    /// Approximate heap bytes held.
    pub fn memory(&self) -> usize {
        self.trans.len() * 4
            + self.sets.iter().map(|s| s.len() * 8 + 48).sum::<usize>()
            + self.masks.values().map(|m| m.len() * 4 + 32).sum::<usize>()
    }
}

/// A trie walker over the lazy DFA: a stack of DFA states, one per byte.
pub(crate) struct DfaWalker<'a> {
    pub prog: &'a RegexProgram,
    pub dfa: &'a mut LazyDfa,
    pub stack: Vec<u32>,
}

impl Walker for DfaWalker<'_> {
    #[inline]
    fn push(&mut self, byte: u8) -> Result<bool, MatchError> {
        let top = *self.stack.last().unwrap_or(&DEAD);
        let next = self.dfa.next(self.prog, top, byte)?;
        if next == DEAD {
            return Ok(false);
        }
        self.stack.push(next);
        Ok(true)
    }

    #[inline]
    fn pop(&mut self) {
        self.stack.pop();
    }
}
