#!/usr/bin/env bash
# Measures a candidate verifier for sieve-mini's encoder the way the shipped one is measured: its
# gate calibrated like the recipe's (80% balanced precision on the calibration sentences'
# rewrites against their near-misses; needs the recipe's WORK folder), then the paraphrase sets
# (scripts/eval-paraphrase.sh), SugarCrepe and SNLI. The figures of the model card's second table
# come from this script.
#   scripts/eval-verifier.sh VERIFIER OUT [WORK=work/sieve-mini] [MODEL=models/sieve-mini]
set -euo pipefail
cd "$(dirname "$0")/.."
V="$1" OUT="$2" WORK="${3:-work/sieve-mini}" MODEL="${4:-models/sieve-mini}"
S="${SIEVE_BUILD_DIR:-build}/sieve"
DATA="${SIEVE_SHARED_DATA:-../shared/data}"
[[ -f "$WORK/calibration.tsv" ]] || { echo "eval-verifier: $WORK/calibration.tsv is missing (run scripts/train-sieve-mini.sh)" >&2; exit 1; }
mkdir -p "$OUT"
cp "$V" "$OUT/verifier.safetensors"
"$S" verify calibrate --model "$MODEL" --verifier "$OUT/verifier.safetensors" --pairs "$WORK/calibration.tsv" \
  --positive-categories "identity,synonym,passive,contraction,coordination,possessive,adverb_move" \
  --target-precision 0.8 --balanced > "$OUT/calibration.json"
scripts/eval-paraphrase.sh "$MODEL" "$OUT/paraphrase" "$OUT/verifier.safetensors" > "$OUT/paraphrase.log" 2>&1
"$S" eval nearmiss --pairs "$DATA/nearmiss/sugarcrepe.tsv" -m "$MODEL" --verifier "$OUT/verifier.safetensors" \
  > "$OUT/sugarcrepe.json" 2>/dev/null
"$S" eval nearmiss --pairs "$DATA/pairs/snli-test.tsv" -m "$MODEL" --verifier "$OUT/verifier.safetensors" \
  > "$OUT/snli.json" 2>/dev/null
jq -c '{threshold, recall, precision}' "$OUT/calibration.json"
grep '^| overall' "$OUT/paraphrase/summary.md"
for f in sugarcrepe snli; do
  jq -c --arg set "$f" '.scorers | to_entries[-1].value | {set: $set, auc, margin_rate: .overall.margin_rate}' "$OUT/$f.json"
done
