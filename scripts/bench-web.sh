#!/usr/bin/env bash
# The browser benchmark, headless: builds the package into its own folder (release unless
# --dev), opens web/bench in Chromium (WebGPU on SwiftShader), prints the page's results as
# JSON, then the native mask times of `sieve maskbench` on the same schemas and options, for the
# ratio.
#
#   scripts/bench-web.sh [--dev] [--masks] [--decode]     (default: both benchmarks)
#
# The instances come from bench/browser_instances.py (needs `pip install tokenizers`); they are
# made once into web/bench/instances.json.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
target="${CARGO_TARGET_DIR:-$ROOT/target}"
instances="$ROOT/web/bench/instances.json"
maskbench="$ROOT/../shared/data/maskbench-dev"
tokenizer="$ROOT/assets/tokenizers/llama3.json"

profile=release
runs=()
for arg in "$@"; do
  case "$arg" in
    --dev) profile=dev ;;
    --masks | --decode) runs+=("$arg") ;;
    *) echo "usage: scripts/bench-web.sh [--dev] [--masks] [--decode]" >&2; exit 2 ;;
  esac
done
pkg="$target/web-pkg-$profile"

if [ ! -f "$instances" ]; then
  python3 "$ROOT/bench/browser_instances.py" --tokenizer "$tokenizer" --count 60 --out "$instances" "$maskbench"
fi
"$ROOT/scripts/build-web.sh" "--$profile" "$pkg" >&2
node "$ROOT/tests/e2e/bench.mjs" --pkg "$pkg" "${runs[@]}"

if [ "${#runs[@]}" -eq 0 ] || [[ " ${runs[*]} " == *" --masks "* ]]; then
  # The same schemas natively, with the page's options (lenient, schema order), built with the
  # page's profile.
  files="$(mktemp -d)"
  trap 'rm -rf "$files" "$files.jsonl"' EXIT
  # The page times the valid instances only (as bench/browser_instances.py reads them): so
  # does this run.
  python3 - "$instances" "$maskbench" "$files" <<'PY'
import json, sys
instances, src, out = sys.argv[1:]
for inst in json.load(open(instances))["instances"]:
    doc = json.load(open(f"{src}/{inst['id']}"))
    doc["tests"] = [t for t in doc["tests"] if t["valid"]]
    json.dump(doc, open(f"{out}/{inst['id']}", "w"), ensure_ascii=False)
PY
  echo "native, same schemas and instances:"
  cargo run -q "--profile=$profile" -p sieve-cli -- maskbench --tokenizer "$tokenizer" --lenient --schema-order --out "$files.jsonl" "$files" |
    grep -E "^(schemas|passing|mask|compile)"
fi
