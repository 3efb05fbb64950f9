#!/usr/bin/env bash
# The main job on a fresh machine: set up, build, index WordNet's example sentences (installed with
# wordnet-base) with the embedded default model sieve-mini, and run queries that show stage 1's
# candidates next to the gate's decisions. Stage 1 is what the model folder recommends (BM25 for
# sieve-mini, whose dense encoder is weak); stage 2 is sieve-mini's F4 gate, calibrated to accept
# a paraphrase (a passive, a synonym) and to reject a structural near-miss (roles swapped, negated)
# of the sentence that stage 1 ranks first. sieve-mini is tiny and misses some: the demo shows
# them (models/sieve-mini/README.md measures its rates).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh -DSIEVE_BUILD_TESTS=OFF -DSIEVE_BUILD_BENCH=OFF
BUILD_DIR="${SIEVE_BUILD_DIR:-build}"
S="$BUILD_DIR/sieve"
MODEL="models/sieve-mini"
DEMO="$BUILD_DIR/demo"
mkdir -p "$DEMO"
# The demo corpus: the first 5,000 of WordNet's example sentences, one document per line.
if [[ ! -f "$DEMO/examples.txt" ]]; then
  "$S" corpus build --sources wordnet --out "$DEMO/wordnet" >/dev/null
  head -n 5000 "$DEMO/wordnet/examples.txt" > "$DEMO/examples.txt"
fi
if [[ ! -f "$DEMO/index/manifest.json" ]]; then
  echo "== indexing $(wc -l < "$DEMO/examples.txt") WordNet example sentences with sieve-mini" >&2
  "$S" index build --corpus "$DEMO/examples.txt" --out "$DEMO/index" --force >/dev/null
fi
queries=(
  "the quarterback fumbled the snap"
  "the snap was fumbled by the quarterback"
  "the snap fumbled the quarterback"
  "the quarterback was fumbled by the snap"
  "the physician made his rounds"
  "the doctor did not make his rounds"
  "the outcome justified the search"
  "the search justified the outcome"
)
for q in "${queries[@]}"; do
  echo
  echo "== \"$q\": stage 1 (the model's default), top 3, with sieve-mini's F4 gate (threshold in the verifier file)"
  "$S" search --index "$DEMO/index" --verifier "$MODEL/verifier.safetensors" --candidates 20 -k 3 \
    --output tsv --text "$q" | cut -f2,4-
done
echo
echo "== the pooled cosine cannot tell them apart; the verifier's map can (sieve explain, heatmap in $DEMO/explain.svg)"
"$S" similarity "the dog bit the man" "the man bit the dog" "a dog bit a man"
"$S" explain --svg "$DEMO/explain.svg" "the dog bit the man" "the man bit the dog" | head -c 300
echo
