#!/usr/bin/env bash
# Measures sieve-mini (and the recipe's Model A / Model B) on the real data in ../shared/data:
# nDCG@10 on SciFact, Cranfield and WikiQA (dense, BM25, hybrid), and near-miss rejection on
# SugarCrepe and SNLI (pooled cosine, F1, the shipped F4). JSON results go to OUT (default
# WORK/eval); the model card quotes them.
# THREADS (default 0, every core) sets the compute threads.
#   scripts/eval-sieve-mini.sh [WORK=work/sieve-mini] [MODEL=models/sieve-mini] [OUT=WORK/eval]
set -euo pipefail
cd "$(dirname "$0")/.."
WORK="${1:-work/sieve-mini}"
MODEL="${2:-models/sieve-mini}"
OUT="${3:-$WORK/eval}"
DATA="${SIEVE_SHARED_DATA:-../shared/data}"
S="${SIEVE_BUILD_DIR:-build}/sieve"
T=(--threads "${THREADS:-0}")
[[ -d "$DATA/retrieval" ]] || { echo "eval: $DATA/retrieval is absent; nothing to measure" >&2; exit 1; }
mkdir -p "$OUT"
for ds in scifact cranfield wikiqa; do
  for mode in dense bm25 hybrid; do
    "$S" eval retrieval --beir "$DATA/retrieval/$ds" -m "$MODEL" --index-dir "$OUT/indexes" --mode "$mode" "${T[@]}" \
      > "$OUT/retrieval_${ds}_sieve-mini_${mode}.json"
  done
  for m in model_a model_b; do
    [[ -d "$WORK/$m/last" ]] || continue
    "$S" eval retrieval --beir "$DATA/retrieval/$ds" -m "$WORK/$m/last" --mode dense "${T[@]}" \
      > "$OUT/retrieval_${ds}_${m}_dense.json"
  done
done
"$S" eval nearmiss --pairs "$DATA/nearmiss/sugarcrepe.tsv" -m "$MODEL" --verifier F1 "${T[@]}" \
  --verifier "$MODEL/verifier.safetensors" --markdown "$OUT/nearmiss_sugarcrepe.md" > "$OUT/nearmiss_sugarcrepe.json"
"$S" eval nearmiss --pairs "$DATA/pairs/snli-test.tsv" -m "$MODEL" --verifier F1 "${T[@]}" \
  --verifier "$MODEL/verifier.safetensors" --markdown "$OUT/nearmiss_snli.md" > "$OUT/nearmiss_snli.json"
if [[ -f "$WORK/nearmiss_heldout.csv" ]]; then
  "$S" eval nearmiss --pairs "$WORK/nearmiss_heldout.csv" -m "$MODEL" --verifier F1 "${T[@]}" \
    --verifier "$MODEL/verifier.safetensors" --markdown "$OUT/nearmiss_heldout.md" > "$OUT/nearmiss_heldout.json"
  [[ -d "$WORK/model_a/last" && -d "$WORK/model_b/last" ]] &&
    "$S" eval space --model-a "$WORK/model_a/last" --model-b "$WORK/model_b/last" \
      --pairs "$WORK/nearmiss_heldout.csv" --out "$OUT/space" "${T[@]}" > /dev/null
fi
rm -rf "$OUT/indexes"
echo "eval: results in $OUT" >&2
