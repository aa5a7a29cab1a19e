#!/usr/bin/env bash
# Build the npm package into web/pkg, where the demo page and the browser tests import it:
# cargo compiles crates/sieve-web for wasm32, wasm-bindgen (the CLI pinned in setup.sh) writes
# its JavaScript bindings (--target web), then the JavaScript engine, its types, package.json
# and README from crates/sieve-web/js are added. `npm pack web/pkg` makes the tarball. `--dev`
# shares its build with the browser tests (dependencies are optimised in the dev profile too);
# the default is --release.
#
#   scripts/build-web.sh [--dev|--release] [OUT_DIR]     (OUT_DIR defaults to web/pkg)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
profile="${1:---release}"
out="$(realpath -m "${2:-$ROOT/web/pkg}")"
case "$profile" in
  # As wasm-pack does: the dev build keeps debug info and wasm-bindgen's debug checks.
  --dev) cargo_args=(); dir=debug; bindgen_args=(--debug --keep-debug) ;;
  --release) cargo_args=(--release); dir=release; bindgen_args=() ;;
  *) echo "build-web: unknown profile $profile (--dev or --release)" >&2; exit 2 ;;
esac

cd "$ROOT"
cargo build -p sieve-web --lib --target wasm32-unknown-unknown "${cargo_args[@]}"
target_dir="$(cargo metadata --no-deps --format-version 1 | node -p 'JSON.parse(require("fs").readFileSync(0, "utf8")).target_directory')"
rm -rf "$out"
wasm-bindgen --target web --out-dir "$out" "${bindgen_args[@]}" "$target_dir/wasm32-unknown-unknown/$dir/sieve_web.wasm"
cp "$ROOT"/crates/sieve-web/js/* "$out/"

# The package version is the workspace's.
cargo_version="$(sed -n 's/^version = "\(.*\)"/\1/p' "$ROOT/Cargo.toml" | head -n1)"
npm_version="$(node -p 'require(process.argv[1]).version' "$out/package.json")"
if [ "$cargo_version" != "$npm_version" ]; then
  echo "build-web: crates/sieve-web/js/package.json has version $npm_version; Cargo.toml has $cargo_version" >&2
  exit 1
fi
