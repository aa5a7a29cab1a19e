//! sieve-web: sieve's JavaScript API, compiled to WebAssembly.
//!
//! wasm-pack builds this crate into the npm package. It binds the constraint
//! engine (`sieve-core`) and the model (`sieve-model`) for pages and workers.
