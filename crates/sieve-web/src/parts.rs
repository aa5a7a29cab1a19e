//! Threads for the CPU path in a cross-origin isolated page. Web Workers share no wasm memory
//! with the engine's worker, so each helper worker (js/helper.js) runs an instance of this
//! module holding a [`Shard`], one part of every product's rows; the engine's worker keeps
//! part 0 and reaches the helpers through a [`HelperPool`] (js/parts.js), over shared memory.
//! See `sieve_model::cpu::parts`.

use sieve_model::cpu::parts::{self, Helpers};
use sieve_model::{ModelError, ModelLoader, Placement};
use wasm_bindgen::prelude::*;

use crate::js_error;

/// One part of a model's products, in a helper worker.
#[wasm_bindgen]
pub struct Shard {
    inner: parts::Shard,
}

/// A helper's [`Shard`] loaded as the model's file arrives: part `part` of `parts` (1 or more:
/// the engine's worker keeps part 0) of the rows of every product, the only rows it keeps.
#[wasm_bindgen]
pub struct ShardLoader {
    loader: ModelLoader,
}

#[wasm_bindgen]
impl ShardLoader {
    /// A loader of part `part` of `parts` of the rows of a supported GGUF's products.
    pub fn start(part: u32, parts: u32) -> Result<ShardLoader, JsError> {
        if part == 0 {
            return Err(JsError::new("part 0 of the rows is the engine's"));
        }
        // A shard computes products only: no position is ever cached.
        let loader = ModelLoader::new(Placement::Cpu { threads: 1 }, 1, None).keep_part(part as usize, parts as usize).map_err(js_error)?;
        Ok(ShardLoader { loader })
    }

    /// Reads the file's next bytes.
    pub fn push(&mut self, chunk: &[u8]) -> Result<(), JsError> {
        self.loader.push(chunk).map_err(js_error)
    }

    /// The shard, once the whole file has been pushed.
    pub fn finish(self) -> Result<Shard, JsError> {
        Ok(Shard { inner: self.loader.finish_shard().map_err(js_error)? })
    }
}

#[wasm_bindgen]
impl Shard {
    /// Bytes of the weights this part holds.
    #[wasm_bindgen(getter, js_name = weightBytes)]
    pub fn weight_bytes(&self) -> f64 {
        self.inner.weight_bytes() as f64
    }

    /// `[input, output]`: the values of the buffers the pool shares with its helpers, for
    /// products of `tokens` tokens at most.
    #[wasm_bindgen(js_name = bufferLengths)]
    pub fn buffer_lengths(&self, tokens: u32) -> Vec<u32> {
        let (input, output) = self.inner.buffer_lengths(tokens as usize);
        vec![input as u32, output as u32]
    }

    /// `[offset, rows]`: where this part's rows of product `stack` start among the rows past
    /// part 0's, and how many there are.
    pub fn rows(&self, stack: u32) -> Result<Vec<u32>, JsError> {
        let (offset, rows) = self.inner.rows(stack as usize).map_err(js_error)?;
        Ok(vec![offset as u32, rows as u32])
    }

    /// This part's rows of product `stack` for `x`, `n` tokens: `[row, token]`.
    pub fn product(&self, stack: u32, n: u32, x: &[f32]) -> Result<Vec<f32>, JsError> {
        self.inner.product(stack as usize, n as usize, x).map_err(js_error)
    }
}

#[wasm_bindgen]
extern "C" {
    /// The helper workers of js/parts.js, seen from the engine's worker.
    pub type HelperPool;

    /// Parts the rows are split into (the helpers and the engine's worker).
    #[wasm_bindgen(method, getter)]
    fn parts(this: &HelperPool) -> u32;

    /// Most tokens of one product.
    #[wasm_bindgen(method, getter, js_name = maxTokens)]
    fn max_tokens(this: &HelperPool) -> u32;

    /// Starts the helpers on product `stack` of `x`, `n` tokens.
    #[wasm_bindgen(method)]
    fn start(this: &HelperPool, stack: u32, n: u32, x: &[f32]);

    /// Waits for the helpers; their rows, `[row, token]`, `length` values.
    #[wasm_bindgen(method, catch)]
    fn finish(this: &HelperPool, length: u32) -> Result<js_sys::Float32Array, JsValue>;
}

/// A [`HelperPool`] as the CPU path's [`Helpers`].
pub(crate) struct PoolHelpers(pub HelperPool);

impl Helpers for PoolHelpers {
    fn parts(&self) -> usize {
        self.0.parts() as usize
    }

    fn max_tokens(&self) -> usize {
        self.0.max_tokens() as usize
    }

    fn start(&self, stack: usize, n: usize, x: &[f32]) {
        self.0.start(stack as u32, n as u32, x);
    }

    fn finish(&self, out: &mut [f32]) -> Result<(), ModelError> {
        let rows = self.0.finish(out.len() as u32).map_err(|e| ModelError::Backend(format!("a helper worker failed: {}", crate::js_message(&e))))?;
        if rows.length() as usize != out.len() {
            return Err(ModelError::Backend(format!("helpers returned {} values for {}", rows.length(), out.len())));
        }
        rows.copy_to(out);
        Ok(())
    }
}
