#!/usr/bin/env bash
# The model's speed side by side (sieve on the CPU and on WebGPU, llama.cpp, wllama), natively
# and in headless Chromium, on this machine in one run: builds the CLI and the package (release),
# installs the peers from npm (node-llama-cpp into bench/, wllama into web/bench/), then runs
# bench/speed.mjs, which prints the table. Arguments go to bench/speed.mjs (--tokens, --rounds,
# --gpu-tokens, --json OUT).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/setup.sh" >&2
target="$CARGO_TARGET_DIR"
cargo build --workspace --release >&2
"$ROOT/scripts/build-web.sh" --release "$target/web-pkg-release" >&2
if [ ! -d "$ROOT/bench/node_modules" ] || [ "$ROOT/bench/package-lock.json" -nt "$ROOT/bench/node_modules/.package-lock.json" ]; then
  npm ci --prefix "$ROOT/bench" --no-audit --no-fund --loglevel=error >&2
fi
node "$ROOT/bench/speed.mjs" --sieve "$target/release/sieve" --pkg "$target/web-pkg-release" "$@"
