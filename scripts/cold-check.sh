#!/usr/bin/env bash
# How long the README's two commands take on a new machine, measured on this one without
# touching its caches: each run gets a fresh clone of HEAD in a temporary folder with its own
# SIEVE_CACHE (builds, downloads), CARGO_HOME (crate registry, installed tools) and npm and pip
# caches, so nothing built or downloaded before is reused. Debian's packages and the Rust
# toolchain with its wasm32 target stay installed (on a new machine setup.sh installs them and
# test.sh's table shows what that took).
#
#   scripts/cold-check.sh [test] [demo]     (default: both)
#
#   test: scripts/test.sh cold, then a second time with nothing changed (warm)
#   demo: scripts/demo.sh cold, until it prints the page's URL (a clone and caches of its own)
#
# Logs and the summary stay in the folder it prints (SIEVE_COLD_DIR to choose it).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
runs=("$@")
[ "${#runs[@]}" -gt 0 ] || runs=(test demo)
work="${SIEVE_COLD_DIR:-$(mktemp -d /tmp/sieve-cold.XXXXXX)}"
mkdir -p "$work"
summary="$work/summary.txt"
echo "cold check of $(git -C "$ROOT" rev-parse --short HEAD) in $work" | tee "$summary"

# The toolchain's commands only (rustup's proxies), not what `cargo install` put beside them.
cargo_bin="${CARGO_HOME:-$HOME/.cargo}/bin"
mkdir -p "$work/toolchain"
for tool in cargo rustc rustdoc rustup; do ln -sf "$cargo_bin/$tool" "$work/toolchain/$tool"; done
path_without_cargo="$(tr ':' '\n' <<<"$PATH" | grep -vxF "$cargo_bin" | paste -sd:)"

# fresh NAME: a clone of HEAD and empty caches under $work/NAME; prints the clone's path.
fresh() {
  local dir="$work/$1"
  rm -rf "$dir"
  mkdir -p "$dir/cargo-home" "$dir/npm-cache" "$dir/pip-cache"
  git clone --quiet "$ROOT" "$dir/sieve"
  echo "$dir"
}

# run_in DIR COMMAND...: runs the command in DIR's clone with DIR's caches and nothing else.
run_in() {
  local dir="$1"
  shift
  (cd "$dir/sieve" && env -u CARGO_TARGET_DIR \
    SIEVE_CACHE="$dir/cache" CARGO_HOME="$dir/cargo-home" \
    npm_config_cache="$dir/npm-cache" PIP_CACHE_DIR="$dir/pip-cache" \
    PATH="$dir/cargo-home/bin:$work/toolchain:$path_without_cargo" "$@")
}

record() { printf '%-34s %6d s\n' "$1" "$2" | tee -a "$summary"; }

if [[ " ${runs[*]} " == *" test "* ]]; then
  dir="$(fresh test)"
  for round in cold warm; do
    echo "scripts/test.sh, $round: log in $dir/test-$round.log"
    t0=$SECONDS
    run_in "$dir" bash scripts/test.sh >"$dir/test-$round.log" 2>&1 || { record "scripts/test.sh $round FAILED after" $((SECONDS - t0)); exit 1; }
    record "scripts/test.sh $round" $((SECONDS - t0))
    sed -n '/== seconds per step/,$p' "$dir/test-$round.log" | tee -a "$summary"
  done
fi

if [[ " ${runs[*]} " == *" demo "* ]]; then
  dir="$(fresh demo)"
  echo "scripts/demo.sh, cold: log in $dir/demo.log"
  t0=$SECONDS
  run_in "$dir" bash scripts/demo.sh >"$dir/demo.log" 2>&1 &
  demo=$!
  until grep -q "sieve demo: http" "$dir/demo.log"; do
    if ! kill -0 "$demo" 2>/dev/null; then record "scripts/demo.sh cold FAILED after" $((SECONDS - t0)); exit 1; fi
    sleep 1
  done
  record "scripts/demo.sh cold, to its URL" $((SECONDS - t0))
  pkill -f "$dir/sieve/web/serve.mjs" || true
  wait "$demo" 2>/dev/null || true
fi
echo "summary in $summary"
