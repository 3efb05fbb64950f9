#!/bin/bash
# Evaluation throughput: `sieve eval retrieval` over a BEIR folder's test queries, for dense, BM25,
# hybrid and verifier reranking of the top 100. Prints one JSON line per configuration and run.
#   bench/bench_eval.sh INDEX BEIR_DIR [F4_FILE] [RUNS]
# INDEX must hold token states (the default build) for the rerank rows; F4_FILE is a verifier file
# for the index's encoder (`sieve verify create --kind F4 --model MODEL --out f4.safetensors`).
set -euo pipefail
index=${1:?usage: bench_eval.sh INDEX BEIR_DIR [F4_FILE] [RUNS]}
beir=${2:?usage: bench_eval.sh INDEX BEIR_DIR [F4_FILE] [RUNS]}
f4=${3:-}
runs=${4:-2}
sieve=${SIEVE:-$(dirname "$0")/../build/sieve}
configs=("--mode dense" "--mode bm25" "--mode hybrid" "--mode dense --verifier F1")
if [ -n "$f4" ]; then configs+=("--mode dense --verifier $f4" "--mode hybrid --verifier $f4"); fi
for run in $(seq "$runs"); do
  for args in "${configs[@]}"; do
    # shellcheck disable=SC2086
    "$sieve" eval retrieval --index "$index" --queries "$beir/queries.jsonl" --qrels "$beir/qrels/test.tsv" \
      $args 2>/dev/null |
      python3 -c 'import json, sys
j = json.load(sys.stdin)
keep = ["system", "queries", "seconds", "queries_per_second", "ndcg@10", "stage2_ms_per_query"]
print(json.dumps({k: j[k] for k in keep if k in j}))'
  done
done
