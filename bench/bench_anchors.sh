#!/usr/bin/env bash
# Every CPU anchor in one run (issue 44): the machine's ceilings (bench_products), sieve against
# ONNX Runtime, OpenVINO (default, fp32, NNCF int8), CTranslate2 and sentence-transformers on each
# real model installed (bench_onnx.py), and the roofline of each model's one-thread cases.
#   bench/bench_anchors.sh [OUT] [ROUNDS]      (OUT default build/bench-onnx, ROUNDS default 5)
# MODELS="all-MiniLM-L6-v2" limits the models; MPNET_ROUNDS (default ROUNDS) sets all-mpnet-base-v2's.
# Writes OUT/products.jsonl, OUT/onnx-MODEL.jsonl, OUT/roofline-MODEL.md. Needs scripts/setup.sh
# --bench (build/bench-venv), a build with benchmarks and the Python module, and ../shared/data.
set -euo pipefail
case "${1:-}" in -h|--help) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
cd "$(dirname "$0")/.."
OUT="${1:-build/bench-onnx}"
ROUNDS="${2:-5}"
B="${SIEVE_BUILD_DIR:-build}"
PY="$B/bench-venv/bin/python"
[[ -x "$PY" ]] || { echo "bench_anchors: $PY is missing (scripts/setup.sh --bench)" >&2; exit 1; }
[[ -x "$B/bench/bench_products" ]] || { echo "bench_anchors: $B/bench/bench_products is missing (build the benchmarks)" >&2; exit 1; }
mkdir -p "$OUT"
echo "bench_anchors: ceilings -> $OUT/products.jsonl" >&2
OMP_NUM_THREADS=1 "$B/bench/bench_products" > "$OUT/products.jsonl"
for model in ${MODELS:-all-MiniLM-L6-v2 all-mpnet-base-v2}; do
  dir="models/$model"
  if [[ ! -f "$dir/config.json" ]]; then
    echo "bench_anchors: $model is not installed (scripts/setup.sh --model $model); skipped" >&2
    continue
  fi
  rounds="$ROUNDS"
  [[ "$model" == all-mpnet-base-v2 ]] && rounds="${MPNET_ROUNDS:-$ROUNDS}"
  echo "bench_anchors: $model, $rounds rounds -> $OUT/onnx-$model.jsonl" >&2
  "$PY" bench/bench_onnx.py --model "$model" --rounds "$rounds" --work "$OUT" --out "$OUT/onnx-$model.jsonl" >/dev/null
  python3 bench/roofline.py --products "$OUT/products.jsonl" --onnx "$OUT/onnx-$model.jsonl" --model "$dir" \
    --json "$OUT/roofline-$model.jsonl" > "$OUT/roofline-$model.md"
done
echo "bench_anchors: done ($OUT)" >&2
