//! The trie walker that follows the set DFA while it stays on outer and
//! open sets, and takes Earley steps on the local chart where it does not.

use super::characters::ByteSequence;
use super::dfa::{SetDfa, CHART, DEAD, OPEN, UNKNOWN};
use crate::error::MatchError;
use crate::grammar::ChartWalker;
use crate::trie::{Walker, BLANKS};

/// A trie walker that follows the DFA while it stays on outer and open sets
/// and falls back to Earley steps on a local chart where it does not.
pub(super) struct SetWalker<'a, 'c> {
    pub(super) inner: ChartWalker<'c>,
    pub(super) dfa: &'a mut SetDfa,
    /// Per set on the path: its DFA set id (`UNKNOWN` when it is not one)
    /// and how many sets its step opened on the chart.
    pub(super) frames: Vec<(u32, u8)>,
}

impl SetWalker<'_, '_> {
    /// The newest set's [`SetDfa::strays`] (every bit when it is no DFA set).
    pub(super) fn strays(&mut self, seqs: &[ByteSequence]) -> Result<u128, MatchError> {
        match self.frames.last() {
            Some(&(id, _)) if id != UNKNOWN => self.dfa.strays(&mut self.inner, id, seqs),
            _ => Ok(u128::MAX),
        }
    }

    /// [`SetWalker::strays`] when already computed for the newest set.
    pub(super) fn known_strays(&self) -> Option<u128> {
        match self.frames.last() {
            Some(&(id, _)) if id != UNKNOWN => self.dfa.strays[(id >> 31) as usize].get((id & !OPEN) as usize).copied().flatten(),
            _ => None,
        }
    }

    /// The newest set's known transition on `byte` (`DEAD` where it surely
    /// dies); `UNKNOWN` where it is not yet computed or the set is no DFA set.
    #[inline]
    pub(super) fn known(&self, byte: u8) -> u32 {
        match self.frames.last() {
            Some(&(id, _)) if id != UNKNOWN => self.dfa.known(id, self.inner.g.class(byte)),
            _ => UNKNOWN,
        }
    }

    /// The newest set when it is an outer set that every character of the
    /// slice (`seqs`) leads back to through DFA sets, ending no rule: then
    /// it is its own link ([`SetDfa::links`]). Checked once per set.
    pub(super) fn loop_set(&mut self, seqs: &[ByteSequence]) -> Result<Option<u32>, MatchError> {
        let Some(&(id, _)) = self.frames.last() else { return Ok(None) };
        if id == UNKNOWN || id & OPEN != 0 || self.dfa.end(id) {
            return Ok(None);
        }
        if let Some(&to) = self.dfa.links.get(&id) {
            return Ok((to == id).then_some(id));
        }
        if !self.dfa.looped.insert(id) {
            return Ok(None);
        }
        self.dfa.bytes += 8;
        let mut after = Vec::new();
        for seq in seqs {
            for &b in &seq.bytes[0] {
                if self.dfa.after_char(&mut self.inner, id, b, &seq.bytes[1..], &mut after)? != Some(false) || after != [id] {
                    return Ok(None);
                }
            }
        }
        self.dfa.bytes += 16;
        self.dfa.links.insert(id, id);
        Ok(Some(id))
    }

    /// True when the newest set is a DFA set that every JSON whitespace
    /// byte leads back to.
    pub(super) fn blank_loop(&mut self) -> Result<bool, MatchError> {
        let Some(&(id, _)) = self.frames.last() else { return Ok(false) };
        if id == UNKNOWN {
            return Ok(false);
        }
        for b in BLANKS {
            if self.dfa.next(&mut self.inner, id, b)? != id {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// [`Walker::push`] given [`SetWalker::known`] for `byte`: a known
    /// step to a DFA set is taken at once.
    #[inline]
    pub(super) fn push_known(&mut self, byte: u8, known: u32) -> Result<bool, MatchError> {
        match known {
            DEAD => Ok(false),
            UNKNOWN | CHART => self.push(byte),
            to => {
                self.frames.push((to, 0));
                Ok(true)
            }
        }
    }

    /// True when the newest set is a DFA set that takes no byte of the
    /// string slice's tokens ([`SetDfa::slice_bytes`]).
    pub(super) fn refuses_slice(&self) -> bool {
        match self.frames.last() {
            Some(&(id, _)) if id != UNKNOWN => self.dfa.refuses[(id >> 31) as usize][(id & !OPEN) as usize],
            _ => false,
        }
    }

    /// True when the outer rule ended in the newest set.
    pub(super) fn outer_end(&self) -> bool {
        match self.frames.last() {
            Some(&(id, _)) if id != UNKNOWN => self.dfa.end(id),
            _ => self.inner.chart.outer_end(),
        }
    }
}

impl Walker for SetWalker<'_, '_> {
    fn push(&mut self, byte: u8) -> Result<bool, MatchError> {
        let from = self.frames.last().map_or(UNKNOWN, |f| f.0);
        if from == UNKNOWN {
            if !self.inner.push(byte)? {
                return Ok(false);
            }
            let id = match self.dfa.classify(self.inner.g, self.inner.chart, None) {
                CHART => UNKNOWN,
                id => id,
            };
            self.frames.push((id, 1));
            return Ok(true);
        }
        match self.dfa.next(&mut self.inner, from, byte)? {
            DEAD => Ok(false),
            CHART => {
                // The step was taken once already: open `from` and take it again.
                let opened = self.dfa.open_on(self.inner.chart, from);
                match self.inner.push(byte) {
                    Ok(true) => {
                        self.frames.push((UNKNOWN, opened + 1));
                        Ok(true)
                    }
                    other => {
                        for _ in 0..opened {
                            self.inner.chart.pop();
                        }
                        other
                    }
                }
            }
            to => {
                self.frames.push((to, 0));
                Ok(true)
            }
        }
    }

    fn pop(&mut self) {
        if let Some((_, opened)) = self.frames.pop() {
            for _ in 0..opened {
                self.inner.chart.pop();
            }
        }
    }
}
