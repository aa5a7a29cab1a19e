#!/usr/bin/env bash
# Run sieve's whole test suite. Sets up a fresh machine first (scripts/setup.sh), then:
#   1. native:  cargo test --workspace (GPU kernels run on Vulkan; lavapipe without a GPU)
#   2. browser: cargo test --target wasm32-unknown-unknown for the crates that target the
#               browser; wasm-bindgen-test-runner runs them in headless Chromium (WebGPU
#               through SwiftShader, flags in each crate's webdriver.json)
#   3. python:  builds the Python package (crates/sieve-py) into a venv and runs its pytest tests
#   4. pages:   builds the npm package, serves the pages on localhost and runs the
#               end-to-end tests in tests/e2e with playwright-core driving /usr/bin/chromium
# At the end, or where it stops, it prints a table of each step's seconds.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
start=$SECONDS
declare -a STEP_TIMES=()
report() {
  local row
  printf '\n\033[1m== seconds per step\033[0m\n'
  for row in "${STEP_TIMES[@]}"; do printf '%6d  %s\n' "${row%%$'\t'*}" "${row#*$'\t'}"; done
  printf '%6d  %s\n' $((SECONDS - start)) "all, setup included"
  [ "$1" = 0 ] || printf '\033[1mfailed (exit %s) in the step after the last one above\033[0m\n' "$1"
}
trap 'report $?' EXIT
source "$ROOT/scripts/setup.sh"
cd "$ROOT"

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "native: cargo test --workspace"
timed "native: cargo test --workspace" cargo test --workspace

step "browser: cargo test --target wasm32-unknown-unknown"
# The runner's default 20 s is too short for shader compiles on SwiftShader; Debian's
# chromedriver drives Debian's Chromium.
export WASM_BINDGEN_TEST_TIMEOUT="${WASM_BINDGEN_TEST_TIMEOUT:-900}"
export CHROMEDRIVER="${CHROMEDRIVER:-$(command -v chromedriver)}"
# The engine's exactness tests, the same code as natively: the brute-force oracle, the matcher,
# grammars, JSON Schema cases, properties and the official suite (tokenizers and suite embedded).
timed "browser: sieve-core tests" cargo test --target wasm32-unknown-unknown -p sieve-core --test it
# The model crate: GPU kernels against CPU references, a constrained generation with the tiny
# random-weight model on WebGPU (greedy, equal to burn's CPU backend), and the WGSL forward pass
# against burn's ops on the CPU. Its build is the one the npm package below reuses.
timed "browser: sieve-model tests" cargo test --target wasm32-unknown-unknown -p sieve-model --test it

step "python: the package, built and tested"
# Built by maturin from the venv (no build isolation: nothing to download) into the shared
# target folder.
timed "python: pip install crates/sieve-py" env PATH="$SIEVE_VENV/bin:$PATH" pip install -q --no-build-isolation ./crates/sieve-py
timed "python: pytest" "$SIEVE_VENV/bin/python" -m pytest -q -p no:cacheprovider crates/sieve-py/tests

step "pages: end-to-end tests in Chromium"
timed "pages: build the npm package (--dev)" bash "$ROOT/scripts/build-web.sh" --dev
timed "pages: npm test" npm test --prefix tests/e2e

step "all tests passed in $((SECONDS - start)) s (setup included)"
