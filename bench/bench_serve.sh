#!/usr/bin/env bash
# `sieve serve` under load on loopback with wrk (Debian's `wrk`): QPS and p50/p99 at 1, 4, 16 and
# 64 connections for /v1/search (bm25, dense, dense + gate, hybrid + gate) and /v1/embeddings (one
# sentence per request), beside offline `sieve embed` on the same sentences. The index is SciFact's
# corpus from ../shared/data with the default model (all-MiniLM-L6-v2 when installed; MODEL=name or
# folder for another); queries are SciFact's. One JSON line per case.
#   bench/bench_serve.sh [SECONDS_PER_CASE=10] [WORK=/tmp/sieve_bench_serve]
# Env: MODEL, CONNECTIONS ("1 4 16 64"), WORKERS (encoder-worker set-ups, "1 <cores>"), ENGINES
# (the encoder's passes served in turn, e.g. "torch auto": each case's lines name theirs; default
# the server's default only), CASES (default "bm25 dense gate hybrid_gate embed").
set -euo pipefail
cd "$(dirname "$0")/.."
SECS="${1:-10}"
WORK="${2:-/tmp/sieve_bench_serve}"
S="${SIEVE_BUILD_DIR:-build}/sieve"
DATA="${SIEVE_SHARED_DATA:-../shared/data}"
command -v wrk >/dev/null || { echo "bench_serve: wrk is not installed (apt install wrk)" >&2; exit 1; }
mkdir -p "$WORK"
MODEL_ARGS=()
[[ -n "${MODEL:-}" ]] && MODEL_ARGS=(--model "$MODEL")
[[ -f "$WORK/index/manifest.json" ]] || "$S" index build "${MODEL_ARGS[@]}" --corpus "$DATA/retrieval/scifact/corpus.jsonl" --out "$WORK/index" --force >&2
head -n 300 "$DATA/retrieval/scifact/queries.jsonl" | jq -r '.text' > "$WORK/queries.txt"
mk() {  # mk NAME JQ_FILTER: one request body per query
  jq -R -c "$2" "$WORK/queries.txt" > "$WORK/$1.jsonl"
}
mk bm25 '{query: ., mode: "bm25", k: 10}'
mk dense '{query: ., mode: "dense", k: 10}'
mk gate '{query: ., mode: "dense", k: 10, gate: true, candidates: 100}'
mk hybrid_gate '{query: ., mode: "hybrid", k: 10, gate: true, candidates: 100}'
mk embed '{input: .}'
PORT="${PORT:-18790}"
# Offline reference for the embeddings: sentences/s of `sieve embed` on the same queries, ten
# times over (3,000 sentences, so that loading the model is a small part), minus the time of a
# one-sentence run (the load itself).
for _ in $(seq 10); do cat "$WORK/queries.txt"; done > "$WORK/queries10.txt"
t0=$(date +%s.%N); "$S" embed "${MODEL_ARGS[@]}" "x" > /dev/null 2>&1; t1=$(date +%s.%N)
"$S" embed "${MODEL_ARGS[@]}" --input "$WORK/queries10.txt" > /dev/null 2>&1; t2=$(date +%s.%N)
echo "{\"case\": \"offline sieve embed\", \"sentences\": 3000, \"sentences_per_s\": $(echo "3000 / (($t2 - $t1) - ($t1 - $t0))" | bc -l | cut -c1-8)}"
# Both batching set-ups: one encoder worker on all cores (the default), and one single-threaded
# worker per core (--encoder-workers N).
CORES=$(nproc)
for engine in ${ENGINES:-default}; do
ENGINE_ARGS=()
[[ "$engine" != default ]] && ENGINE_ARGS=(--engine "$engine")
for workers in ${WORKERS:-1 $CORES}; do
  "$S" serve --index "$WORK/index" --port "$PORT" --encoder-workers "$workers" "${ENGINE_ARGS[@]}" 2> "$WORK/serve.log" &
  PID=$!
  trap 'kill -TERM $PID 2>/dev/null; wait $PID 2>/dev/null' EXIT
  for _ in $(seq 300); do grep -q ready "$WORK/serve.log" && break; sleep 0.2; done
  # The library's own time per query as the server measures it (timings.total_ms), sequential.
  for name in bm25 dense; do
    head -n 200 "$WORK/$name.jsonl" | while read -r body; do
      curl -s "http://127.0.0.1:$PORT/v1/search" -d "$body" | jq '.results[0].timings.total_ms'
    done | sort -g | awk -v n="$name" -v w="$workers" -v e="$engine" '{a[NR] = $1} END { printf "{\"case\": \"%s library call\", \"engine\": \"%s\", \"encoder_workers\": %d, \"p50_ms\": %.3f}\n", n, e, w, a[int(NR / 2)] }'
  done
  for name in ${CASES:-bm25 dense gate hybrid_gate embed}; do
    path=/v1/search
    [[ $name == embed ]] && path=/v1/embeddings
    for c in ${CONNECTIONS:-1 4 16 64}; do
      line=$(BODIES="$WORK/$name.jsonl" wrk -t"$((c < 2 ? 1 : 2))" -c"$c" -d"${SECS}s" --timeout 30s --latency -s bench/wrk/post.lua \
        "http://127.0.0.1:$PORT$path" | tail -1)
      echo "{\"case\": \"$name\", \"engine\": \"$engine\", \"encoder_workers\": $workers, \"connections\": $c, ${line#\{}"
      sleep 2  # requests still queued from a loaded case must not land in the next one's figures
    done
  done
  curl -s "http://127.0.0.1:$PORT/metrics" 2>/dev/null | grep -E '^sieve_(batch_size_(sum|count)|encoder_busy)' >&2 || true
  kill -TERM $PID; wait $PID || true
done
done
