#!/usr/bin/env bash
# What each token codec costs the identity gate: ROC-AUC of the shipped verifier (and of F1,
# MaxSim) on the paraphrase-versus-near-miss evaluation sets (PAWS and mixed; built from
# ../shared/data by scripts/eval-paraphrase.sh, never trained on), with the candidates' token
# states passed through each codec as an index stores them (`sieve eval nearmiss --token-codec`;
# the query's stay exact). Prints one JSON object: per codec its bytes per token, AUC per set and
# scorer, and the change against exact float32 states. The rerank cost (nDCG@10 after F1
# reranking SciFact's top 100 on decoded states) is bench_index's "codecs" (docs/benchmarks.md).
#   bench/bench_codecs.sh [OUT=work/bench-codecs] [MODEL=all-MiniLM-L6-v2]
# CODECS (default "sq8 sq4 pq pq64 pq32 res2 res1") and THREADS (0 = every core) override.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${1:-work/bench-codecs}"
MODEL="${2:-all-MiniLM-L6-v2}"
CODECS="${CODECS:-sq8 sq4 pq pq64 pq32 res2 res1}"
S="${SIEVE_BUILD_DIR:-build}/sieve"
MODEL_DIR="$MODEL"; [[ -d "models/$MODEL" ]] && MODEL_DIR="models/$MODEL"
mkdir -p "$OUT"
# SETS (default "paws mixed") and SETS_DIR (default OUT/sets, made by scripts/eval-paraphrase.sh):
# other eval parts, e.g. the gate recipe's questions for the semantic cache (issue 60):
#   SETS="qqp qtwins sts" SETS_DIR=work/gate/sets bench/bench_codecs.sh work/codecs-cache
SETS="${SETS:-paws mixed}"
SETS_DIR="${SETS_DIR:-$OUT/sets}"
if [[ "$SETS_DIR" == "$OUT/sets" && ! -f "$OUT/sets/mixed-eval.tsv" ]]; then
  SETS_ONLY=1 scripts/eval-paraphrase.sh "$MODEL_DIR" "$OUT" > /dev/null
fi
for set in $SETS; do
  [[ -f "$SETS_DIR/$set-eval.tsv" ]] || { echo "bench_codecs: no $SETS_DIR/$set-eval.tsv" >&2; exit 1; }
done
for codec in exact $CODECS; do
  for set in $SETS; do
    f="$OUT/$set-$codec.json"
    [[ -s "$f" ]] && continue
    args=()
    [[ "$codec" != exact ]] && args=(--token-codec "$codec")
    echo "bench_codecs: $set with $codec" >&2
    "$S" eval nearmiss --pairs "$SETS_DIR/$set-eval.tsv" -m "$MODEL_DIR" --verifier F1 --verifier default \
      --positive-categories "${POSITIVES:-identity,paws_paraphrase,mrpc_paraphrase,qqp_paraphrase,sts_paraphrase,sts_same,long_same,condaqa_paraphrase,synonym,passive,contraction,coordination,possessive,adverb_move,determiner,negated_antonym}" \
      --threads "${THREADS:-0}" "${args[@]}" > "$f.tmp" 2>/dev/null
    mv "$f.tmp" "$f"
  done
done
# One object: {"model", "codecs": [{"codec", "bytes_per_token", "<set>": {"<scorer>": auc, ...},
# "<set>_delta": {...}}]} (the change against exact float32 states).
for codec in exact $CODECS; do
  for set in $SETS; do
    jq -c --arg codec "$codec" --arg set "$set" --slurpfile e "$OUT/$set-exact.json" '
      def aucs: .scorers | with_entries(.value = .value.auc);
      def delta($x): aucs as $a | ($x | aucs) as $b | $a | with_entries(.value = (.value - $b[.key]));
      {codec: $codec, bytes_per_token: (.token_codec.bytes_per_token // 1536), ($set): aucs, ($set + "_delta"): delta($e[0])}' \
      "$OUT/$set-$codec.json"
  done | jq -s -c 'reduce .[] as $o ({}; . + $o)'
done | jq -s --arg model "$MODEL" '{model: $model, codecs: .}'
