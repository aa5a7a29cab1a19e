#!/usr/bin/env bash
# The nightly fuzzing run: every cargo-fuzz target of fuzz/ for a bounded time each, on the
# stable toolchain (RUSTC_BOOTSTRAP=1 lets it take the nightly flags cargo-fuzz passes).
#
#   bash scripts/fuzz.sh [SECONDS_PER_TARGET (default 300)] [TARGET ...]
#
# Installs cargo-fuzz (pinned) when missing; keeps each target's corpus in
# $SIEVE_CACHE/fuzz/corpus/<target> so that nights build on each other. A crash stops the run
# with the input libFuzzer wrote (fuzz/artifacts/<target>/); commit it as a regression test in
# crates/sieve-core/tests/ that replays it.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SIEVE_CACHE="${SIEVE_CACHE:-$HOME/.cache/sieve}"
seconds="${1:-300}"
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(regex gbnf tokens json_schema request)
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --version 0.13.2 --locked
export RUSTC_BOOTSTRAP=1 CARGO_TARGET_DIR="$SIEVE_CACHE/fuzz/target"
cd "$ROOT/fuzz"
for target in "${targets[@]}"; do
  corpus="$SIEVE_CACHE/fuzz/corpus/$target"
  mkdir -p "$corpus"
  printf '\n\033[1m== fuzz %s for %ss\033[0m\n' "$target" "$seconds"
  cargo fuzz run -O "$target" "$corpus" -- -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 -max_len=4096 -len_control=0
done
