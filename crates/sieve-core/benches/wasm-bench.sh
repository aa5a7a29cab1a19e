#!/usr/bin/env bash
# Mask times of "any JSON value" in WebAssembly (Node) next to the native
# figures for the same masks, and their ratio (issue 3: wasm within 2x).
#
#   benches/wasm-bench.sh TOKENIZER.json [WALKS] [STEPS]
#       seeded random walks (the ones `sieve bench --any-json` takes)
#   benches/wasm-bench.sh TOKENIZER.json --texts PATH [LIMIT]
#       the valid instances of a MaskBench file or directory, token by token
#       (the native run writes their token ids; the wasm run replays them)
#
# The wasm side runs three times: as V8 starts a module (baseline code, hot
# functions optimised as they run: "cold"); the same after `sieve_core::warm_up`,
# which sieve-web runs while the model loads ("warmed_up"); and optimised from
# the start (--no-liftoff), as a page gets it from Chrome's code cache on later
# visits ("optimised").
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
tok="$(realpath "$1")"; shift
texts=""
if [ "${1:-}" = "--texts" ]; then texts="$(realpath "$2")"; limit="${3:-200}"; else walks="${1:-50}"; steps="${2:-64}"; fi
target="${CARGO_TARGET_DIR:-$here/../../target}"
out="$target/wasm-bench"
# Built from the repository root so .cargo/config.toml applies (WebAssembly SIMD, as the
# npm package is built); CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUSTFLAGS="" measures without.
(cd "$here/../.." && cargo build --release --manifest-path "$here/wasm-bench/Cargo.toml" --target wasm32-unknown-unknown)
wasm-bindgen --target nodejs --out-dir "$out" "$target/wasm32-unknown-unknown/release/sieve_core_wasm_bench.wasm"
cargo build --release -q --manifest-path "$here/../sieve-cli/Cargo.toml"
cat > "$out/run.cjs" <<'JS'
const { Walks, Replay } = require('./sieve_core_wasm_bench.js');
const fs = require('fs');
const [tok, mode, a, b, warm] = process.argv.slice(2);
const times = [];
const timed = (f) => { const t = performance.now(); f(); times.push((performance.now() - t) * 1000); };
if (mode === 'walks') {
  const w = new Walks(fs.readFileSync(tok, 'utf8'), 1n);
  if (warm) w.warmUp();
  for (let i = 0; i < +a; i++) {
    w.start();
    for (let s = 0; s < +b; s++) {
      timed(() => w.mask());
      if (!w.advance()) break;
    }
  }
} else {
  const r = new Replay(fs.readFileSync(tok, 'utf8'), '');
  if (warm) r.warmUp();
  for (const line of fs.readFileSync(a, 'utf8').split('\n').filter(Boolean)) {
    r.start();
    for (const id of JSON.parse(line)) {
      timed(() => r.mask());
      if (!r.accept(id)) break;
    }
  }
}
times.sort((a, b) => a - b);
const p = q => Math.round(times[Math.round((times.length - 1) * q)] * 100) / 100;
console.log(JSON.stringify({ count: times.length, p50: p(0.5), p90: p(0.9), p99: p(0.99), max: p(1) }));
JS
sieve="$target/release/sieve"
ids="$(mktemp)"; trap 'rm -f "$ids"' EXIT
if [ -n "$texts" ]; then
  native="$("$sieve" bench --tokenizer "$tok" --any-json --texts "$texts" --limit "$limit" --compiles 1 --emit-tokens "$ids")"
  run=(replay "$ids" "")
else
  native="$("$sieve" bench --tokenizer "$tok" --any-json --limit "$walks" --steps "$steps" --seed 1 --compiles 1)"
  run=(walks "$walks" "$steps")
fi
cold="$(node "$out/run.cjs" "$tok" "${run[@]}" "")"
warmed="$(node "$out/run.cjs" "$tok" "${run[@]}" warm)"
optimised="$(node --no-liftoff "$out/run.cjs" "$tok" "${run[@]}" "")"
node -e '
const [n, c, w, o] = process.argv.slice(1).map(JSON.parse);
const ratio = (x) => Object.fromEntries(["p50", "p90", "p99", "max"].map((q) => [q, Math.round(x[q] / n.mask_us[q] * 100) / 100]));
console.log(JSON.stringify({ native_mask_us: n.mask_us, wasm_mask_us: { cold: c, warmed_up: w, optimised: o },
  wasm_over_native: { cold: ratio(c), warmed_up: ratio(w), optimised: ratio(o) } }, null, 1));
' "$native" "$cold" "$warmed" "$optimised"
