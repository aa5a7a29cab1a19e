#!/usr/bin/env bash
# Install everything sieve needs on a fresh Debian machine, from package registries only.
# Idempotent: each step checks first and does nothing when already done. Works as root or as
# a user with sudo. Sourced by scripts/test.sh and scripts/demo.sh; can also be run alone.
#
#   - Debian: chromium, chromium-driver (real browser + driver), mesa-vulkan-drivers (lavapipe
#     Vulkan for native wgpu), python3, nodejs/npm when missing
#   - rustup target wasm32-unknown-unknown
#   - cargo: wasm-pack and wasm-bindgen-cli at the versions pinned below (wasm-bindgen-cli must
#     equal the wasm-bindgen crate pinned in Cargo.toml)
#   - npm: the test tooling in tests/e2e (playwright-core, Ajv, Vite for the bundler test) and
#     the benchmark page's web-xgrammar in web/bench (package-lock.json each)
#   - model and tokenizers: scripts/fetch-assets.sh (sha256-checked, cached)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WASM_PACK_VERSION=0.15.1
WASM_BINDGEN_VERSION=0.2.130
export SIEVE_CACHE="${SIEVE_CACHE:-$HOME/.cache/sieve}"
# Builds live outside the clone so a fresh clone reuses them; a cold machine still builds all.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$SIEVE_CACHE/target}"
export PATH="$HOME/.cargo/bin:$PATH"

say() { printf '\033[1m[setup]\033[0m %s\n' "$*"; }

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

apt_packages=(chromium chromium-driver mesa-vulkan-drivers python3 nodejs npm)
missing=()
for pkg in "${apt_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
# nodejs/npm may come from elsewhere than Debian; a working node and npm are enough.
if command -v node >/dev/null && command -v npm >/dev/null; then
  missing=("${missing[@]/nodejs}"); missing=("${missing[@]/npm}")
fi
read -r -a missing <<<"${missing[*]}"
if [ "${#missing[@]}" -gt 0 ]; then
  say "apt-get install ${missing[*]}"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  say "rustup target add wasm32-unknown-unknown"
  rustup target add wasm32-unknown-unknown
fi

version_of() { "$1" --version 2>/dev/null | awk '{print $2}'; }
if [ "$(version_of wasm-pack)" != "$WASM_PACK_VERSION" ]; then
  say "cargo install wasm-pack $WASM_PACK_VERSION"
  cargo install --locked --force "wasm-pack@$WASM_PACK_VERSION"
fi
if [ "$(version_of wasm-bindgen)" != "$WASM_BINDGEN_VERSION" ]; then
  # Not --locked: the lockfile published with 0.2.130 names a yanked webpki-roots.
  say "cargo install wasm-bindgen-cli $WASM_BINDGEN_VERSION"
  cargo install --force "wasm-bindgen-cli@$WASM_BINDGEN_VERSION"
fi

for dir in tests/e2e web/bench; do
  if [ ! -d "$ROOT/$dir/node_modules" ] || [ "$ROOT/$dir/package-lock.json" -nt "$ROOT/$dir/node_modules/.package-lock.json" ]; then
    say "npm ci ($dir)"
    (cd "$ROOT/$dir" && npm ci --no-audit --no-fund --loglevel=error)
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

bash "$ROOT/scripts/fetch-assets.sh"
