#!/usr/bin/env bash
# Run sieve's whole test suite. Sets up a fresh machine first (scripts/setup.sh), then:
#   1. native:  cargo test --workspace (GPU kernels run on Vulkan; lavapipe without a GPU)
#   2. browser: wasm-pack test --headless --chrome for the crates that target the browser
#               (WebGPU through SwiftShader, flags in each crate's webdriver.json)
#   3. pages:   builds the npm package, serves the pages on localhost and runs the
#               end-to-end tests in tests/e2e with playwright-core driving /usr/bin/chromium
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/setup.sh"
cd "$ROOT"

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
# Runs a command and says how long it took (CI has 90 minutes for all of this).
timed() {
  local t0=$SECONDS
  "$@"
  printf '\033[2m-- %d s: %s\033[0m\n' $((SECONDS - t0)) "$*"
}
start=$SECONDS

step "native: cargo test --workspace"
timed cargo test --workspace

step "browser: wasm-pack test --headless --chrome"
# The runner's default 20 s is too short for shader compiles on SwiftShader.
export WASM_BINDGEN_TEST_TIMEOUT="${WASM_BINDGEN_TEST_TIMEOUT:-900}"
# The engine's exactness tests, the same code as natively: the brute-force oracle, the matcher,
# grammars, JSON Schema cases, properties and the official suite (tokenizers and suite embedded).
timed wasm-pack test --headless --chrome crates/sieve-core --test it
# The model crate's browser targets: GPU kernels against CPU references, and a constrained
# generation with the tiny random-weight model on WebGPU (greedy, equal to burn's CPU backend),
# and the WGSL forward pass against burn's ops on the CPU.
timed wasm-pack test --headless --chrome crates/sieve-model --test it

step "pages: end-to-end tests in Chromium"
timed bash "$ROOT/scripts/build-web.sh" --dev
(cd tests/e2e && timed npm test)

step "all tests passed in $((SECONDS - start)) s (after setup)"
