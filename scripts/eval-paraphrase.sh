#!/usr/bin/env bash
# Paraphrase-versus-near-miss evaluation of an encoder and its verifier, on sets built only from
# ../shared/data (docs/evaluation.md, "Paraphrase sets"):
#   paws   PAWS-Wiki dev: same words, label 1 = same meaning (paws_paraphrase) against word swaps
#   mrpc   MRPC train: news paraphrases against non-paraphrases
#   mixed  STS-B pairs scored >= 4.6 and held-apart generated rewrites, against SugarCrepe
#          swap/replace near-misses, generated structural near-misses of held-apart sentences and
#          SNLI/MNLI contradictions that share most words with their premise
# Each set is split once into a training part and an evaluation part by sentence component, so
# no evaluation sentence is seen in training; only the evaluation parts are scored here. Scorers:
# the pooled cosine, MaxSim (F1) and the verifier, by ROC-AUC per category and accuracy at the
# verifier's stored threshold (the others at a threshold chosen on half the pairs).
# THREADS (default 0, every core) sets the compute threads; SIEVE_SHARED_DATA the data folder;
# SETS_ONLY=1 builds the sets and stops.
#   scripts/eval-paraphrase.sh [MODEL=models/sieve-mini] [OUT=work/eval-paraphrase] [VERIFIER=MODEL/verifier.safetensors]
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL="${1:-models/sieve-mini}"
OUT="${2:-work/eval-paraphrase}"
VERIFIER="${3:-$MODEL/verifier.safetensors}"
DATA="${SIEVE_SHARED_DATA:-../shared/data}"
S="${SIEVE_BUILD_DIR:-build}/sieve"
T=(--threads "${THREADS:-0}")
# Generated kinds: the structural near-misses, and the rewrites that keep the meaning.
NEAR_KINDS="negation,role_swap,binding_swap,spatial_flip,passive_role_swap"
REWRITE_KINDS="${REWRITE_KINDS:-synonym,passive,contraction,coordination,possessive,adverb_move,determiner,negated_antonym}"
POSITIVES="paws_paraphrase,mrpc_paraphrase,sts_paraphrase,$REWRITE_KINDS"
[[ -d "$DATA/pairs" ]] || { echo "eval-paraphrase: $DATA/pairs is absent; nothing to measure" >&2; exit 1; }
if [[ ! -x "$S" ]]; then
  scripts/setup.sh
  scripts/build.sh -DSIEVE_BUILD_TESTS=OFF -DSIEVE_BUILD_BENCH=OFF
fi
mkdir -p "$OUT"
# The held-apart sentences are the evaluation half of the tenth of the corpus's example sentences
# that scripts/train-sieve-mini.sh holds apart (line numbers divisible by 20).
[[ -f "$OUT/corpus/report.json" ]] || "$S" corpus build --out "$OUT/corpus" > /dev/null
awk 'NR % 20 == 0' "$OUT/corpus/examples.txt" > "$OUT/examples_heldout.txt"
# At most 1,000 pairs of a kind, so that the most productive kinds (synonym, negation) do not
# outweigh the rest in the overall figures.
"$S" nearmiss generate --in "$OUT/examples_heldout.txt" --kinds "$NEAR_KINDS,$REWRITE_KINDS" --seed 42 \
  --max-per-category 1000 --out "$OUT/generated.tsv" > /dev/null
"$S" eval paraphrase-sets --shared "$DATA" --generated "$OUT/generated.tsv" --generated-positive "$REWRITE_KINDS" \
  --out "$OUT/sets" > "$OUT/sets.json"
# SETS_ONLY=1: build the sets and stop (bench/bench_codecs.sh scores them its own way).
[[ -n "${SETS_ONLY:-}" ]] && exit 0
SUMMARY="$OUT/summary.md"
printf '# Paraphrase vs near-miss: %s, verifier %s\n\n' "$MODEL" "$VERIFIER" > "$SUMMARY"
for set in paws mrpc mixed; do
  "$S" eval nearmiss --pairs "$OUT/sets/$set-eval.tsv" -m "$MODEL" --verifier F1 --verifier "$VERIFIER" "${T[@]}" \
    --positive-categories "$POSITIVES" --markdown "$OUT/$set.md" > "$OUT/$set.json"
  printf '## %s\n\n' "$set" >> "$SUMMARY"
  # One row per category, one AUC and one accuracy column per scorer: positives' accuracy is the
  # share accepted, near-misses' the share rejected, overall's the balanced accuracy.
  jq -r '.scorers as $s | ($s | keys_unsorted) as $n | ($s[$n[0]]) as $f |
    def r3: if . == null then "-" else (. * 1000 | round / 1000 | tostring) end;
    "| category | pairs | " + ($n | map(. + " AUC") | join(" | ")) + " | " + ($n | map(. + " acc") | join(" | ")) + " |",
    "|---|---:|" + ([$n[], $n[]] | map("---:") | join("|")) + "|",
    "| overall | \(.positives) + \(.nearmisses) | " + ($n | map($s[.].auc | r3) | join(" | ")) + " | " +
      ($n | map($s[.].balanced_accuracy | r3) | join(" | ")) + " |",
    (($f.positive_categories // {}) | keys_unsorted[] as $c |
      "| \($c) (+) | \($f.positive_categories[$c].score.n) | " + ($n | map($s[.].positive_categories[$c].auc | r3) | join(" | ")) +
      " | " + ($n | map($s[.].positive_categories[$c].accepted | r3) | join(" | ")) + " |"),
    ($f.categories | keys_unsorted[] as $c |
      "| \($c) (-) | \($f.categories[$c].score.n) | " + ($n | map($s[.].categories[$c].auc | r3) | join(" | ")) +
      " | " + ($n | map($s[.].categories[$c].rejected | r3) | join(" | ")) + " |"),
    "", "thresholds: " + ($n | map(. + " " + ($s[.].threshold | r3) + " (" + $s[.].threshold_source + ")") | join(", "))
    ' "$OUT/$set.json" >> "$SUMMARY"
  printf '\n' >> "$SUMMARY"
done
cat "$SUMMARY"
echo "eval-paraphrase: results in $OUT" >&2
