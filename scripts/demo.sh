#!/usr/bin/env bash
# The main job on a fresh machine: set up, build, index a small example corpus and search it
# (dense, BM25, hybrid, then verified by MaxSim), explain a near-miss pair's token map, and print
# the pooled cosines of near-miss pairs. Until the default
# model is trained (issue 8) the encoder is a random BERT that sieve generates itself, so the dense
# scores show the pipeline, not meaning; BM25 is real.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh -DSIEVE_BUILD_TESTS=OFF -DSIEVE_BUILD_BENCH=OFF
BUILD_DIR="${SIEVE_BUILD_DIR:-build}"
MODEL="$BUILD_DIR/demo-model"
[[ -f "$MODEL/config.json" ]] || "$BUILD_DIR/sieve" make-fixture --out "$MODEL" --layers 2 --hidden 64 --heads 4
INDEX="$BUILD_DIR/demo-index"
"$BUILD_DIR/sieve" index build --model "$MODEL" --corpus examples/corpus.tsv --out "$INDEX" --force >/dev/null
for mode in dense bm25 hybrid; do
  echo "== sieve search --mode $mode \"who bit the dog\""
  "$BUILD_DIR/sieve" search --index "$INDEX" --mode "$mode" -k 3 --output tsv "who bit the dog"
done
echo "== stage 2: MaxSim (F1) over the hybrid top 10, reranked"
"$BUILD_DIR/sieve" search --index "$INDEX" --mode hybrid --verifier F1 --candidates 10 --rerank -k 3 --output tsv \
  "who bit the dog"
echo "== sieve explain (the map as JSON; heatmap in $BUILD_DIR/explain.svg)"
"$BUILD_DIR/sieve" explain --model "$MODEL" --verifier F1 --svg "$BUILD_DIR/explain.svg" \
  "the dog bit the man" "the man bit the dog" | cut -c1-200
"$BUILD_DIR/sieve" similarity --model "$MODEL" \
  "the dog bit the man" \
  "the man bit the dog" \
  "a dog bit a man" \
  "the cat sat on the table"
