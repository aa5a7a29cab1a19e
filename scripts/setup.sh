#!/usr/bin/env bash
# Install everything sieve needs on a fresh Debian machine, from package registries only.
# Idempotent: each step checks first and does nothing when already done. Works as root or as
# a user with sudo. Sourced by scripts/test.sh and scripts/demo.sh; can also be run alone.
#
#   - Debian: chromium, chromium-driver (real browser + driver), mesa-vulkan-drivers (lavapipe
#     Vulkan for native wgpu), python3 and python3-venv, nodejs/npm when missing
#   - rustup target wasm32-unknown-unknown
#   - cargo: wasm-bindgen-cli at the version pinned below (it must equal the wasm-bindgen crate
#     pinned in Cargo.toml): `wasm-bindgen` writes the npm package's bindings, and
#     `wasm-bindgen-test-runner` runs the wasm32 tests in Chromium (.cargo/config.toml)
#   - npm: the test tooling in tests/e2e (playwright-core, Ajv, Vite for the bundler test) and
#     the benchmark page's web-xgrammar in web/bench (package-lock.json each)
#   - model and tokenizers: scripts/fetch-assets.sh (sha256-checked, cached)
#   - a Python venv in $SIEVE_CACHE/venv with the Python package's build and test tools
#     (crates/sieve-py/requirements-test.txt: maturin, numpy, pytest, transformers, gguf)
#   - sieve-model's parity fixtures in assets/tiny-models (scripts/tiny-models.py)
#
# Each step that does something is timed into STEP_TIMES ("seconds<TAB>name"), which
# scripts/test.sh prints.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WASM_BINDGEN_VERSION=0.2.130
export SIEVE_CACHE="${SIEVE_CACHE:-$HOME/.cache/sieve}"
# Builds live outside the clone so a fresh clone reuses them; a cold machine still builds all.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$SIEVE_CACHE/target}"
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"

say() { printf '\033[1m[setup]\033[0m %s\n' "$*"; }

# timed NAME COMMAND...: runs the command, prints and records how long it took.
declare -a STEP_TIMES
timed() {
  local name="$1" t0=$SECONDS
  shift
  "$@"
  STEP_TIMES+=("$((SECONDS - t0))	$name")
  printf '\033[2m-- %d s: %s\033[0m\n' $((SECONDS - t0)) "$name"
}

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

apt_packages=(chromium chromium-driver mesa-vulkan-drivers python3 python3-venv nodejs npm)
missing=()
for pkg in "${apt_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
# nodejs/npm may come from elsewhere than Debian; a working node and npm are enough.
if command -v node >/dev/null && command -v npm >/dev/null; then
  missing=("${missing[@]/nodejs}"); missing=("${missing[@]/npm}")
fi
read -r -a missing <<<"${missing[*]}"
apt_install() {
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}
if [ "${#missing[@]}" -gt 0 ]; then
  say "apt-get install ${missing[*]}"
  timed "setup: apt-get install" apt_install "${missing[@]}"
fi

if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  say "rustup target add wasm32-unknown-unknown"
  timed "setup: rustup target add" rustup target add wasm32-unknown-unknown
fi

if [ "$(wasm-bindgen --version 2>/dev/null | awk '{print $2}')" != "$WASM_BINDGEN_VERSION" ]; then
  # Without TLS (its default feature): the test runner only talks to a local chromedriver.
  # Not --locked: the lockfile published with 0.2.130 names a yanked webpki-roots.
  say "cargo install wasm-bindgen-cli $WASM_BINDGEN_VERSION"
  timed "setup: cargo install wasm-bindgen-cli" \
    cargo install --force --no-default-features "wasm-bindgen-cli@$WASM_BINDGEN_VERSION"
fi

for dir in tests/e2e web/bench; do
  if [ ! -d "$ROOT/$dir/node_modules" ] || [ "$ROOT/$dir/package-lock.json" -nt "$ROOT/$dir/node_modules/.package-lock.json" ]; then
    say "npm ci ($dir)"
    timed "setup: npm ci $dir" npm ci --prefix "$ROOT/$dir" --no-audit --no-fund --loglevel=error
  fi
done

# The shared build cache only grows. When its disk runs low, drop the incremental caches, which
# cargo rebuilds on demand, so the builds below do not fail half-way for lack of space.
mkdir -p "$CARGO_TARGET_DIR"
free_kib="$(df -Pk "$CARGO_TARGET_DIR" | awk 'NR == 2 {print $4}')"
if [ "$free_kib" -lt $((12 * 1024 * 1024)) ]; then
  say "$((free_kib / 1024 / 1024)) GiB free: removing incremental caches under $CARGO_TARGET_DIR"
  find "$CARGO_TARGET_DIR" -maxdepth 3 -type d -name incremental -prune -exec rm -rf {} +
fi

timed "setup: fetch assets" bash "$ROOT/scripts/fetch-assets.sh"

# The Python package's build and test tools, in a virtual environment of their own.
export SIEVE_VENV="$SIEVE_CACHE/venv"
# vLLM and SGLang go in without their own requirements (GPU packages; see requirements-serving.txt).
requirements="$ROOT/crates/sieve-py/requirements-test.txt"
serving="$ROOT/crates/sieve-py/requirements-serving.txt"
if ! cmp -s "$requirements" "$SIEVE_VENV/requirements-test.txt" || ! cmp -s "$serving" "$SIEVE_VENV/requirements-serving.txt"; then
  say "python3 -m venv $SIEVE_VENV; pip install -r crates/sieve-py/requirements-test.txt; pip install --no-deps -r crates/sieve-py/requirements-serving.txt"
  timed "setup: python venv" bash -c "python3 -m venv '$SIEVE_VENV' && '$SIEVE_VENV/bin/pip' install -q -r '$requirements' && '$SIEVE_VENV/bin/pip' install -q --no-deps -r '$serving' && cp '$requirements' '$serving' '$SIEVE_VENV/'"
fi

# sieve-model's parity fixtures: small random-weight models of each architecture and weight
# type, built and run by transformers, written as GGUF (rebuilt when the script changes).
tiny="$ROOT/assets/tiny-models"
if ! cmp -s "$ROOT/scripts/tiny-models.py" "$tiny/tiny-models.py"; then
  say "python scripts/tiny-models.py assets/tiny-models"
  timed "setup: tiny models" bash -c "rm -rf '$tiny' && '$SIEVE_VENV/bin/python' '$ROOT/scripts/tiny-models.py' '$tiny' && cp '$ROOT/scripts/tiny-models.py' '$tiny/'"
fi
