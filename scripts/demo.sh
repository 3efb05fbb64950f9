#!/usr/bin/env bash
# The main job on a fresh machine: set up, build, then embed sample sentences and print their
# pooled cosine similarities. Until the default model is trained (issue 8) the encoder is a
# random BERT that sieve generates itself, so the numbers show the pipeline, not meaning.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh -DSIEVE_BUILD_TESTS=OFF -DSIEVE_BUILD_BENCH=OFF
BUILD_DIR="${SIEVE_BUILD_DIR:-build}"
MODEL="$BUILD_DIR/demo-model"
[[ -f "$MODEL/config.json" ]] || "$BUILD_DIR/sieve" make-fixture --out "$MODEL" --layers 2 --hidden 64 --heads 4
"$BUILD_DIR/sieve" similarity --model "$MODEL" \
  "the dog bit the man" \
  "the man bit the dog" \
  "a dog bit a man" \
  "the cat sat on the table"
