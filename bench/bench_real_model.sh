#!/usr/bin/env bash
# The engine on a real model (docs/benchmarks.md, "all-MiniLM-L6-v2" and "all-mpnet-base-v2"): one JSON
# file per step in OUT (default build/bench-real), all in one run so that the figures share a machine.
#   [SET=scifact] [WORDNET=1] bench/bench_real_model.sh [OUT] [MODEL=all-MiniLM-L6-v2]
# 1. encoder.json: encode throughput, batch 1 and 32 x {16, 128, 256} tokens, 1 and 2 threads.
# 2. index-SET.json: the build of a BEIR set (SciFact by default; SET=cranfield is 1,400 documents,
#    for a large model on 2 cores) against encoding alone (docs/s, overhead), each token codec's
#    bytes, cosine error, F1 (MaxSim) score error and F1-rerank nDCG@10 on its test queries, and
#    stage-1 latency per mode.
# 3. build-wordnet.json (skipped with WORDNET=0): `sieve index build` of the WordNet sentences
#    (`sieve corpus build --sources wordnet`): its report (docs/s, where the time went) with the
#    peak RSS and bytes per document.
# 4. verify-SET.json: stage-2 latency over the top K = 100 of that index, F1 on real states.
# Needs a build with benchmarks (scripts/build.sh) and ../shared/data.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${1:-build/bench-real}"
MODEL="${2:-all-MiniLM-L6-v2}"
B="${SIEVE_BUILD_DIR:-build}"
S="$B/sieve"
DATA="${SIEVE_SHARED_DATA:-../shared/data}"
[[ -x "$B/bench/bench_index" ]] || { echo "bench_real_model: build with benchmarks first" >&2; exit 1; }
[[ -d "$DATA/retrieval/scifact" ]] || { echo "bench_real_model: $DATA/retrieval/scifact is absent" >&2; exit 1; }
mkdir -p "$OUT"
export SIEVE_LOG="${SIEVE_LOG:-warn}"
SET="${SET:-scifact}"
SCI="$DATA/retrieval/$SET"
[[ -d "$SCI" ]] || { echo "bench_real_model: $SCI is absent" >&2; exit 1; }

echo "bench_real_model: 1/4 encoder throughput" >&2
SIEVE_BENCH_MODEL="$MODEL" "$B/bench/bench_encoder" --benchmark_format=json \
  --benchmark_filter='lengths:0' --benchmark_min_time=1 > "$OUT/encoder.json"

echo "bench_real_model: 2/4 $SET build, codecs, stage-1 latency" >&2
"$B/bench/bench_index" --model "$MODEL" --corpus "$SCI/corpus.jsonl" --queries "$SCI/queries.jsonl" \
  --qrels "$SCI/qrels/test.tsv" --work "$OUT/work" --synthetic 0 > "$OUT/index-$SET.json"

if [[ "${WORDNET:-1}" == 0 ]]; then
  echo "bench_real_model: 3/4 WordNet sentences build: skipped (WORDNET=0)" >&2
else
echo "bench_real_model: 3/4 WordNet sentences build" >&2
if [[ ! -f "$OUT/work/wordnet/sentences.txt" ]]; then
  "$S" corpus build --sources wordnet --out "$OUT/work/wordnet" >/dev/null
fi
grep -v '^$' "$OUT/work/wordnet/sentences.txt" > "$OUT/work/wordnet.txt"
rm -rf "$OUT/work/wordnet-index"
/usr/bin/time -f '%M' -o "$OUT/work/wordnet.rss" \
  "$S" index build -m "$MODEL" --corpus "$OUT/work/wordnet.txt" --out "$OUT/work/wordnet-index" --force \
  > "$OUT/work/wordnet-report.json"
docs=$(wc -l < "$OUT/work/wordnet.txt")
bytes=$(du -sb "$OUT/work/wordnet-index" | cut -f1)
jq --argjson rss_kb "$(tail -n 1 "$OUT/work/wordnet.rss")" --argjson bytes "$bytes" --argjson docs "$docs" \
  '. + {peak_rss_mb: ($rss_kb / 1024), index_bytes: $bytes, bytes_per_document: ($bytes / $docs)}' \
  "$OUT/work/wordnet-report.json" > "$OUT/build-wordnet.json"
fi

echo "bench_real_model: 4/4 stage-2 latency at K = 100" >&2
"$B/bench/bench_verify" --index "$OUT/work/bench_index" --queries "$SCI/queries.jsonl" --k 100 \
  --verifiers F1 --max-queries 100 > "$OUT/verify-$SET.json"
echo "bench_real_model: wrote $OUT/{encoder,index-$SET,build-wordnet,verify-$SET}.json" >&2
