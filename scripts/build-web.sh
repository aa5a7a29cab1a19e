#!/usr/bin/env bash
# Build the npm package into web/pkg, where the demo page and the browser tests import it:
# wasm-pack compiles crates/sieve-web (--target web), then the JavaScript engine, its types,
# package.json and README from crates/sieve-web/js are added. `npm pack web/pkg` makes the
# tarball. `--dev` shares build artifacts with the test builds (dependencies are optimised in
# the dev profile too); the default is --release.
#
#   scripts/build-web.sh [--dev|--release] [OUT_DIR]     (OUT_DIR defaults to web/pkg)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
profile="${1:---release}"
out="$(realpath -m "${2:-$ROOT/web/pkg}")"
wasm-pack build "$ROOT/crates/sieve-web" "$profile" --target web --out-dir "$out" --no-pack
cp "$ROOT"/crates/sieve-web/js/* "$out/"

# The package version is the workspace's.
cargo_version="$(sed -n 's/^version = "\(.*\)"/\1/p' "$ROOT/Cargo.toml" | head -n1)"
npm_version="$(node -p 'require(process.argv[1]).version' "$out/package.json")"
if [ "$cargo_version" != "$npm_version" ]; then
  echo "build-web: crates/sieve-web/js/package.json has version $npm_version; Cargo.toml has $cargo_version" >&2
  exit 1
fi
