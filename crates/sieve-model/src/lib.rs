//! sieve-model: the language model side of sieve.
//!
//! A GGUF model of a supported architecture ([`config::Architecture`]: llama, qwen2, qwen3, phi3,
//! gemma3) that runs where [`Placement`] says: on the CPU, with kernels of its own over the
//! file's quantized blocks (SIMD, threads natively); or on a burn device, where a wgpu device
//! (WebGPU, Vulkan) runs the forward pass as hand-written WGSL over the weights in a GPU form of
//! their own (five to eight kernels per layer) and any other device runs burn's ops, the
//! reference the tests hold the others to. WGSL kernels from the crate's `shaders/` also mask logits with a token bitmask and pick the
//! next token on the GPU; and the async constrained decode loop.
//!
//! # Map
//!
//! - [`gguf`]: validating GGUF reader; F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K
//!   and Q6_K blocks, their dequantization, and their runs of int8 (`int8_blocks`).
//! - [`tokenizer`]: the tokenizer rebuilt from GGUF metadata as a `tokenizer.json` text (the
//!   same text sieve-core's `Vocabulary::from_tokenizer_json` reads), and the chat prompt
//!   ([`chat`]: the GGUF's Jinja template, rendered by minijinja).
//! - [`tools`]: tool calls in the model family's format: the prompt that offers the tools, the
//!   structural tag that makes each call exact, and the reply read back into calls.
//! - [`config`]: the architectures, [`LlamaConfig`] (the hyper-parameters from GGUF metadata),
//!   the rotary embedding ([`Rope`]) and its tables.
//! - [`model`]: [`Llama`] (weights, one forward pass for any number of new tokens, [`Logits`]
//!   where the pass left them) and its [`KvCache`]; [`Placement`] says where it runs and
//!   [`Backend`] which implementation ran; a commented table maps GGUF tensor names to fields.
//!   It picks one of three passes: [`cpu`], the WGSL kernels of the private `wgsl_forward`
//!   module on wgpu devices, or burn's ops (the private `burn_forward` module) elsewhere; each
//!   depends on [`config`], none on [`model`].
//! - [`load`]: a model's file read into place a part at a time, whole or as it arrives
//!   ([`ModelLoader`], over [`gguf::GgufStream`]), each part placed once its tensors are whole.
//! - [`cpu`]: the forward pass on the CPU: [`cpu::matrix`] keeps weights in their GGUF
//!   encoding and dequantizes them inside AVX2 or WebAssembly SIMD products; [`cpu::threads`]
//!   splits them over threads.
//! - [`sampling`]: [`sampling::Sampling`] settings and the CPU reference of token choice.
//! - [`gpu`]: the process's one wgpu device; [`kernels`]: the WGSL kernels from `shaders/`
//!   (apply a bitmask, masked argmax, masked sampling) on the model's own buffers.
//! - [`decode`]: the async decode loop with jump-forward, behind the small
//!   [`decode::TokenConstraint`] trait that sieve-core's `Matcher` implements.
//! - [`ModelError`]: the one error type.
//!
//! # Decoding, step by step
//!
//! ```no_run
//! # async fn demo(bytes: Vec<u8>) -> Result<(), sieve_model::ModelError> {
//! use sieve_model::decode::{generate, GenerateConfig, Picker, Unconstrained};
//! use sieve_model::sampling::Sampling;
//! use sieve_model::{Gguf, Llama, LlamaConfig, Placement, Tokenizer};
//!
//! let gguf = Gguf::parse(&bytes)?;                        // 1. validate the file
//! let tokenizer = Tokenizer::from_gguf(&gguf)?;            // 2. tokenizer from metadata
//! let placement = Placement::cpu();                        //    (or a wgpu device)
//! let model = Llama::from_gguf(&gguf, LlamaConfig::from_gguf(&gguf, 2048)?, placement)?;
//! let prompt = tokenizer.encode("Once upon a time")?;     // 3. prompt ids
//! let config = GenerateConfig {
//!     max_tokens: 32,
//!     sampling: Sampling::GREEDY,
//!     jump_forward: true,
//!     picker: Picker::Cpu,                                  //    Picker::Gpu on wgpu
//! };
//! let mut constraint = Unconstrained::new(model.config().vocab); // or a sieve-core Matcher
//! let out = generate(&model, &tokenizer, &mut constraint, &prompt, &config, &|| 0.0).await?;
//! println!("{}", out.text);
//! # Ok(()) }
//! ```

mod burn_forward;
pub mod chat;
pub mod config;
pub mod cpu;
pub mod decode;
pub mod error;
pub mod gguf;
pub mod gpu;
pub mod kernels;
pub mod load;
pub mod model;
pub mod sampling;
pub mod tokenizer;
pub mod tools;
mod wgsl_forward;

pub use burn::tensor::Device;
pub use error::ModelError;
pub use gguf::{Gguf, GgufStream};
pub use load::ModelLoader;
pub use config::{Architecture, Rope};
pub use model::{Backend, KvCache, Llama, LlamaConfig, Logits, Placement};
pub use tokenizer::Tokenizer;
