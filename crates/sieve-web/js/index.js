// sieve: structured output from a language model in the browser.
//
// - `createEngine` (engine.js): SmolLM2 on WebGPU in a Web Worker, with an OpenAI-shaped API.
// - `Vocabulary`, `Constraint`, `Matcher` (the wasm module): token bitmasks for any model.
//   Call `await init()` once before using them.
// - `SieveError`: what a constraint that does not compile rejects with, from either.
export { createEngine } from "./engine.js";
export { SieveError } from "./errors.js";
export { default as init, Vocabulary, Constraint, Matcher, initGpu } from "./sieve_web.js";
