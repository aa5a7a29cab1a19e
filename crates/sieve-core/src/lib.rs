//! sieve-core: the constraint engine of sieve.
//!
//! It turns a tokenizer's vocabulary and a constraint (a regex, a GBNF grammar,
//! a JSON Schema, a list of choices) into exact token bitmasks: bit `i % 32` of
//! word `i / 32` is set when token `i` may come next. It does no I/O, needs no
//! threads and no GPU, and builds for `wasm32-unknown-unknown`.
