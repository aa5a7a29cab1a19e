//! sieve-model: the language model side of sieve.
//!
//! A Llama-architecture model (SmolLM2-135M-Instruct) in burn, generic over the
//! backend; WGSL kernels from `shaders/` that mask logits with a token bitmask
//! and pick the next token on the GPU; and the async constrained decode loop.

pub mod gpu;
pub mod kernels;
