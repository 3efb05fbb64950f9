#!/usr/bin/env bash
# A shard set served on Ray Serve (python3 -m sieve.ray serve: a router and one deployment per
# shard) against one `sieve serve` over one index of the same documents, on this machine, under
# wrk: QPS and p50/p99 at 1, 16 and 64 connections for /v1/search (bm25, dense, hybrid + gate).
# SciFact's corpus from ../shared/data (DOCS=n: its first n documents), the default model, SHARDS
# shards (3), REPLICAS replicas per shard (1). Before the load, the script checks that both answer
# every query alike. Ray Serve runs twice: stage 2 at the router (token states cross the wire) and
# at the shards (scores do), with the stage-2 bytes per query of each. One JSON line per case.
#   bench/bench_ray_serve.sh [SECONDS_PER_CASE=10] [WORK=/tmp/sieve_bench_ray_serve]
# Before Ray Serve: the native shard path (issue 61), SHARDS `sieve shard serve` processes under
# `sieve serve --shard-url` started by this script (NATIVE=0 skips it), then the same placed by
# Ray (python3 -m sieve.ray native, REPLICAS replicas a shard; RAY_NATIVE=0 skips it). RAY=0
# skips Ray Serve.
# Needs wrk and jq (scripts/setup.sh --bench) and build/ray-venv (scripts/setup.sh --oracles).
set -euo pipefail
cd "$(dirname "$0")/.."
SECS="${1:-10}"
WORK="${2:-/tmp/sieve_bench_ray_serve}"
B="${SIEVE_BUILD_DIR:-build}"
S="$B/sieve"
PY="$B/ray-venv/bin/python"
DATA="${SIEVE_SHARED_DATA:-../shared/data}"
SHARDS="${SHARDS:-3}"
for tool in wrk jq curl; do
  command -v $tool >/dev/null || { echo "bench_ray_serve: $tool is not installed (scripts/setup.sh --bench)" >&2; exit 1; }
done
[[ ( "${RAY:-1}" == 0 && "${RAY_NATIVE:-1}" == 0 ) || -x "$PY" ]] || { echo "bench_ray_serve: $PY is missing (scripts/setup.sh --oracles)" >&2; exit 1; }
mkdir -p "$WORK"
corpus="$DATA/retrieval/scifact/corpus.jsonl"
if [[ -n "${DOCS:-}" ]]; then head -n "$DOCS" "$corpus" > "$WORK/corpus.jsonl"; corpus="$WORK/corpus.jsonl"; fi
[[ -f "$WORK/one/manifest.json" ]] || "$S" index build --corpus "$corpus" --out "$WORK/one" --force >&2
[[ -f "$WORK/set/shardset.json" ]] || "$S" index build --corpus "$corpus" --out "$WORK/set" --shards "$SHARDS" --force >&2
head -n 300 "$DATA/retrieval/scifact/queries.jsonl" | jq -r '.text' > "$WORK/queries.txt"
jq -R -c '{query: ., mode: "bm25", k: 10}' "$WORK/queries.txt" > "$WORK/bm25.jsonl"
jq -R -c '{query: ., mode: "dense", k: 10}' "$WORK/queries.txt" > "$WORK/dense.jsonl"
jq -R -c '{query: ., mode: "hybrid", k: 10, gate: true, candidates: 100}' "$WORK/queries.txt" > "$WORK/hybrid_gate.jsonl"
PORT="${PORT:-18795}"
URL="http://127.0.0.1:$PORT"
PID=""
stop() { [[ -n "$PID" ]] && { kill -TERM "$PID" 2>/dev/null; wait "$PID" 2>/dev/null || true; }; PID=""; }
trap stop EXIT

# The answers of the server now running to every body of every case (timings dropped).
answers() {
  for name in bm25 dense hybrid_gate; do
    head -n 50 "$WORK/$name.jsonl" | while read -r body; do
      curl -s "$URL/v1/search" -d "$body" | jq -c 'del(.results[].timings)'
    done
  done
}

check() {  # check SERVER_NAME ANSWERS: equal to one sieve serve's, byte for byte
  if cmp -s "$WORK/answers-one.jsonl" "$2"; then
    echo "{\"check\": \"answers equal\", \"server\": \"$1\", \"bodies\": $(wc -l < "$WORK/answers-one.jsonl")}"
  else
    echo "{\"check\": \"answers differ\", \"server\": \"$1\", \"diff_lines\": $(diff "$WORK/answers-one.jsonl" "$2" | grep -c '^<' || true)}"
  fi
}

load() {  # load SERVER_NAME
  for name in bm25 dense hybrid_gate; do
    for c in ${CONNECTIONS:-1 16 64}; do
      line=$(BODIES="$WORK/$name.jsonl" wrk -t"$((c < 2 ? 1 : 2))" -c"$c" -d"${SECS}s" --timeout 30s --latency \
        -s bench/wrk/post.lua "$URL/v1/search" | tail -1)
      echo "{\"server\": \"$1\", \"case\": \"$name\", \"shards\": $2, \"connections\": $c, ${line#\{}"
      sleep 2
    done
  done
}

"$S" serve --index "$WORK/one" --port "$PORT" 2> "$WORK/serve.log" &
PID=$!
for _ in $(seq 600); do grep -q ready "$WORK/serve.log" && break; sleep 0.2; done
answers > "$WORK/answers-one.jsonl"
load "sieve serve" 1
stop

# The native shard path (issue 61): SHARDS `sieve shard serve` processes and `sieve serve --shard-url`
# over them, on this machine (NATIVE=0 skips it).
SPIDS=()
stop_shards() { for p in "${SPIDS[@]}"; do kill -TERM "$p" 2>/dev/null; wait "$p" 2>/dev/null || true; done; SPIDS=(); }
trap 'stop; stop_shards' EXIT
if [[ "${NATIVE:-1}" == 1 ]]; then
  urls=()
  for ((i = 0; i < SHARDS; i++)); do
    sport=$((PORT + 10 + i))
    "$S" shard serve --index "$(printf '%s/set/shard-%03d' "$WORK" "$i")" --port "$sport" 2> "$WORK/shard-$i.log" &
    SPIDS+=($!)
    urls+=(--shard-url "http://127.0.0.1:$sport")
  done
  for ((i = 0; i < SHARDS; i++)); do
    for _ in $(seq 600); do grep -q ready "$WORK/shard-$i.log" && break; sleep 0.2; done
  done
  "$S" serve --index "$WORK/set" "${urls[@]}" --port "$PORT" 2> "$WORK/serve-native.log" &
  PID=$!
  for _ in $(seq 600); do grep -q ready "$WORK/serve-native.log" && break; sleep 0.2; done
  answers > "$WORK/answers-native.jsonl"
  check "native shards" "$WORK/answers-native.jsonl"
  load "sieve serve over sieve shard serve" "$SHARDS"
  stop
  stop_shards
fi

# The same placed by Ray: python3 -m sieve.ray native (a local Ray on this machine).
if [[ "${RAY_NATIVE:-1}" == 1 ]]; then
  PYTHONPATH="$B/python" RAY_USAGE_STATS_ENABLED=0 SIEVE_CLI="$S" "$PY" -m sieve.ray native --index "$WORK/set" \
    --host 127.0.0.1 --port "$PORT" --replicas "${REPLICAS:-1}" 2> "$WORK/ray-native.log" &
  PID=$!
  for _ in $(seq 1500); do grep -q serving "$WORK/ray-native.log" && break; sleep 0.2; done
  answers > "$WORK/answers-ray-native.jsonl"
  check "ray native" "$WORK/answers-ray-native.jsonl"
  load "ray native (sieve shard serve placed by Ray)" "$SHARDS"
  stop
fi
[[ "${RAY:-1}" == 1 ]] || exit 0

# Ray Serve twice: stage 2 at the router (the candidates' token states cross the wire: before
# issue 45) and at the shards (only their scores do: the default). Stage-2 bytes per query are
# the router's counter (GET /router/stats) over the 50 hybrid + gate answers' queries.
for where in ${STAGE2:-router shards}; do
  flag=()
  [[ "$where" == router ]] && flag=(--stage2-at-router)
  PYTHONPATH="$B/python" RAY_USAGE_STATS_ENABLED=0 "$PY" -m sieve.ray serve --index "$WORK/set" --port "$PORT" \
    --replicas "${REPLICAS:-1}" "${flag[@]}" 2> "$WORK/ray-serve-$where.log" &
  PID=$!
  for _ in $(seq 900); do grep -q serving "$WORK/ray-serve-$where.log" && break; sleep 0.2; done
  answers > "$WORK/answers-ray-$where.jsonl"
  bytes=$(curl -s "$URL/router/stats" | jq .stage2_bytes_received)
  echo "{\"server\": \"ray serve\", \"stage2\": \"$where\", \"stage2_bytes_per_query\": $((bytes / 50))}"
  check "ray serve (stage 2 at $where)" "$WORK/answers-ray-$where.jsonl"
  load "ray serve (stage 2 at $where)" "$SHARDS"
  stop
done
