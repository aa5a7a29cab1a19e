//! A model's products split by rows across workers that share no memory.
//!
//! In the browser a thread is a Web Worker with a wasm instance of its own: it cannot read the
//! model's memory, so each extra worker holds a [`Shard`], one part of every product's rows, and
//! the model's worker computes part 0 itself. For each product of a pass the model's worker
//! hands the activations to its [`Helpers`] (`start`), computes its own rows, then collects
//! theirs (`finish`): one round trip per product, four per layer, the activations and results
//! copied through shared memory. The parts' rows are the same rows' products as on one thread,
//! so the logits do not change with the number of parts.

use std::ops::Range;

use super::matrix::{Activation, Matrix, Simd};
use super::stack_rows;
use crate::error::ModelError;

/// Rows `[part * total / parts, (part + 1) * total / parts)` of `total`.
pub fn part_rows(total: usize, part: usize, parts: usize) -> Range<usize> {
    let parts = parts.max(1);
    part * total / parts..(part + 1) * total / parts
}

/// Part `part` of `parts` of the rows of `stack`'s matrices stacked on their rows: each matrix
/// cut to its rows among them (none, for some), copied.
pub(crate) fn part_of(stack: &[Matrix], part: usize, parts: usize) -> Vec<Matrix> {
    let want = part_rows(stack.iter().map(Matrix::rows).sum(), part, parts);
    let mut offset = 0;
    stack
        .iter()
        .map(|m| {
            let rows = offset..offset + m.rows();
            offset = rows.end;
            let (from, to) = (want.start.clamp(rows.start, rows.end), want.end.clamp(rows.start, rows.end));
            m.rows_range(from - rows.start..to - rows.start)
        })
        .collect()
}

/// The workers holding parts `1..parts` of the model's products, seen from the model's worker.
pub trait Helpers {
    /// Parts the rows are split into: the model worker's own (part 0) and one per helper.
    fn parts(&self) -> usize;
    /// Most tokens one product may have (a longer prompt runs in passes of this many).
    fn max_tokens(&self) -> usize;
    /// Starts every helper on product `stack` (see [`Shard::product`]) of `x`, `n` tokens.
    fn start(&self, stack: usize, n: usize, x: &[f32]);
    /// Waits for the helpers of the last `start` and writes their rows into `out`: the product's
    /// rows from part 1's first to the last, `[row, token]`. An error when a helper failed.
    fn finish(&self, out: &mut [f32]) -> Result<(), ModelError>;
}

/// One part of every product's rows of a model on the CPU path (`Llama::shard`), for a helper.
pub struct Shard {
    simd: Simd,
    part: usize,
    parts: usize,
    stacks: Vec<StackPart>,
}

/// A part of one product's stacked matrices.
pub(crate) struct StackPart {
    /// This part's rows, as pieces of the stacked matrices.
    pub pieces: Vec<Matrix>,
    /// The stack's rows, all parts together.
    pub total: usize,
    /// Values of an input row.
    pub cols: usize,
}

impl Shard {
    /// The shard of `stacks` (each holding this part's rows), part `part` of `parts`.
    pub(crate) fn new(part: usize, parts: usize, stacks: Vec<StackPart>) -> Self {
        Self { simd: Simd::detect(), part, parts, stacks }
    }

    fn stack(&self, stack: usize) -> Result<&StackPart, ModelError> {
        self.stacks.get(stack).ok_or_else(|| ModelError::Input(format!("no product {stack}")))
    }

    /// Which part this is, of how many.
    pub fn part(&self) -> (usize, usize) {
        (self.part, self.parts)
    }

    /// Bytes of weights held.
    pub fn weight_bytes(&self) -> usize {
        self.stacks.iter().flat_map(|s| &s.pieces).map(Matrix::bytes).sum()
    }

    /// Most values of one product's input and output for `tokens` tokens at most (the output
    /// head's product has one token), for sizing the buffers shared with the helpers: the
    /// widest input row times `tokens`, and the most rows past part 0's times their tokens.
    pub fn buffer_lengths(&self, tokens: usize) -> (usize, usize) {
        let last = self.stacks.len().saturating_sub(1);
        let mut lengths = (0, 0);
        for (id, s) in self.stacks.iter().enumerate() {
            let n = if id == last { 1 } else { tokens };
            lengths.0 = lengths.0.max(n * s.cols);
            lengths.1 = lengths.1.max(n * (s.total - part_rows(s.total, 0, self.parts).end));
        }
        lengths
    }

    /// Where this part's rows of product `stack` start among the rows past part 0's, and how
    /// many there are.
    pub fn rows(&self, stack: usize) -> Result<(usize, usize), ModelError> {
        let total = self.stack(stack)?.total;
        let own = part_rows(total, 0, self.parts).end;
        let mine = part_rows(total, self.part, self.parts);
        Ok((mine.start.saturating_sub(own), mine.len()))
    }

    /// This part's rows of product `stack` (per layer Q/K/V, output, gate/up and down, then the
    /// output head) for `x`, `n` tokens: `[row, token]`.
    pub fn product(&self, stack: usize, n: usize, x: &[f32]) -> Result<Vec<f32>, ModelError> {
        let s = self.stack(stack)?;
        if n == 0 || x.len() != n * s.cols {
            return Err(ModelError::Input(format!("{} values for {n} tokens of {}", x.len(), s.cols)));
        }
        let rows: usize = s.pieces.iter().map(Matrix::rows).sum();
        let mut out = vec![0.0; rows * n];
        let acts: Vec<Activation<'_>> = x.chunks_exact(s.cols).map(Activation::new).collect();
        stack_rows(self.simd, &s.pieces, 0, x, &acts, &mut out);
        Ok(out)
    }
}
