#!/usr/bin/env bash
# Build everything and serve the demo page on localhost (prints the URL). Sets up a fresh
# machine first (scripts/setup.sh). PORT=N picks the port (default 8080, or the next free one);
# SIEVE_PROFILE=--release builds the optimised package instead of the shared dev build.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/setup.sh"
# The dev profile optimises dependencies (burn, wgpu) and shares its build with the tests.
bash "$ROOT/scripts/build-web.sh" "${SIEVE_PROFILE:---dev}"
exec node "$ROOT/web/serve.mjs" --port "${PORT:-8080}"
