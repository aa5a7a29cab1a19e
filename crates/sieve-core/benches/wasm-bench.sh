#!/usr/bin/env bash
# Mask times of "any JSON value" in WebAssembly (Node), next to the native
# figures for the same walks. Usage: benches/wasm-bench.sh TOKENIZER.json [WALKS] [STEPS]
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
tok="$(realpath "$1")"; walks="${2:-50}"; steps="${3:-64}"
target="${CARGO_TARGET_DIR:-$here/../../target}"
out="$target/wasm-bench"
cargo build --release --manifest-path "$here/wasm-bench/Cargo.toml" --target wasm32-unknown-unknown
wasm-bindgen --target nodejs --out-dir "$out" "$target/wasm32-unknown-unknown/release/sieve_core_wasm_bench.wasm"
cat > "$out/run.cjs" <<'JS'
const { Walks } = require('./sieve_core_wasm_bench.js');
const fs = require('fs');
const [tok, walks, steps] = [process.argv[2], +process.argv[3], +process.argv[4]];
let t = performance.now();
const w = new Walks(fs.readFileSync(tok, 'utf8'), 1n);
const prepare_ms = performance.now() - t;
const times = [];
for (let i = 0; i < walks; i++) {
  w.start();
  for (let s = 0; s < steps; s++) {
    t = performance.now();
    w.mask();
    times.push((performance.now() - t) * 1000);
    if (!w.advance()) break;
  }
}
times.sort((a, b) => a - b);
const p = q => Math.round(times[Math.round((times.length - 1) * q)] * 100) / 100;
console.log(JSON.stringify({ wasm: { vocab_prepare_ms: Math.round(prepare_ms * 10) / 10,
  mask_us: { count: times.length, p50: p(0.5), p90: p(0.9), p99: p(0.99), max: p(1) } } }));
JS
node "$out/run.cjs" "$tok" "$walks" "$steps"
cargo run --release -q --manifest-path "$here/../sieve-cli/Cargo.toml" -- bench --tokenizer "$tok" --any-json --limit "$walks" --steps "$steps" --seed 1 --compiles 1
