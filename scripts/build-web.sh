#!/usr/bin/env bash
# Build the npm package (crates/sieve-web, wasm-pack --target web) into web/pkg, where the
# demo page and the browser tests import it. `--dev` shares build artifacts with the test
# builds (dependencies are optimised in the dev profile too); the default is --release.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
profile="${1:---release}"
wasm-pack build "$ROOT/crates/sieve-web" "$profile" --target web --out-dir "$ROOT/web/pkg" --no-pack
