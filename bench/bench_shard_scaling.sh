#!/usr/bin/env bash
# Several machines simulated on one (issue 61, item 3): `sieve shard serve` processes each pinned
# to cores of their own with taskset, the router (`sieve serve --shard-url`) pinned to others, and
# the throughput of hybrid + gate (stage 2 runs at the shards) and dense under wrk as the shard
# processes grow: SHARDS_LIST sets of S >= 2 shards (2 4 8) (built once, cached in WORK), ROUTER_CORES cores
# for the router (1), CORES_PER_SHARD cores per shard process (1). A set of S shards runs only when
# the machine has ROUTER_CORES + S x CORES_PER_SHARD cores; with OVERSUBSCRIBE=1 the rest run
# anyway, their shards sharing the cores left (what a machine with fewer cores shows). Before the
# load, each configuration answers the script's bodies exactly as one `sieve serve` over one index
# (checked with curl, timings dropped). SciFact's corpus (DOCS=n: its first n documents). One JSON
# line per case.
#   bench/bench_shard_scaling.sh [SECONDS_PER_CASE=10] [WORK=/tmp/sieve_bench_shard_scaling]
# Needs wrk, jq, curl, taskset (scripts/setup.sh --bench).
set -euo pipefail
cd "$(dirname "$0")/.."
SECS="${1:-10}"
WORK="${2:-/tmp/sieve_bench_shard_scaling}"
B="${SIEVE_BUILD_DIR:-build}"
S="$B/sieve"
DATA="${SIEVE_SHARED_DATA:-../shared/data}"
ROUTER_CORES="${ROUTER_CORES:-1}"
PER="${CORES_PER_SHARD:-1}"
CONNECTIONS="${CONNECTIONS:-16}"
for tool in wrk jq curl taskset; do
  command -v $tool >/dev/null || { echo "bench_shard_scaling: $tool is not installed (scripts/setup.sh --bench)" >&2; exit 1; }
done
CORES=$(nproc)
mkdir -p "$WORK"
corpus="$DATA/retrieval/scifact/corpus.jsonl"
if [[ -n "${DOCS:-}" ]]; then head -n "$DOCS" "$corpus" > "$WORK/corpus.jsonl"; corpus="$WORK/corpus.jsonl"; fi
head -n 300 "$DATA/retrieval/scifact/queries.jsonl" | jq -r '.text' > "$WORK/queries.txt"
jq -R -c '{query: ., mode: "dense", k: 10}' "$WORK/queries.txt" > "$WORK/dense.jsonl"
jq -R -c '{query: ., mode: "hybrid", k: 10, gate: true, candidates: 100}' "$WORK/queries.txt" > "$WORK/hybrid_gate.jsonl"
[[ -f "$WORK/one/manifest.json" ]] || "$S" index build --corpus "$corpus" --out "$WORK/one" --force >&2
PORT="${PORT:-18895}"
URL="http://127.0.0.1:$PORT"
PIDS=()
stop_all() { for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; wait "$p" 2>/dev/null || true; done; PIDS=(); }
trap stop_all EXIT
wait_log() { for _ in $(seq 900); do grep -q "$2" "$1" && return 0; sleep 0.2; done; echo "bench_shard_scaling: no '$2' in $1" >&2; exit 1; }
cores() { seq -s, "$1" "$(($1 + $2 - 1))"; }  # the list of cores FROM..FROM+N-1

load() {  # load JSON_PREFIX: the two cases at each of CONNECTIONS, one JSON line each
  for name in dense hybrid_gate; do
    for c in $CONNECTIONS; do
      line=$(BODIES="$WORK/$name.jsonl" wrk -t"$((c < 2 ? 1 : 2))" -c"$c" -d"${SECS}s" --timeout 30s --latency \
        -s bench/wrk/post.lua "$URL/v1/search" | tail -1)
      echo "{$1, \"case\": \"$name\", \"connections\": $c, ${line#\{}"
    done
  done
}

answers() {
  for name in dense hybrid_gate; do
    head -n 30 "$WORK/$name.jsonl" | while read -r body; do curl -s "$URL/v1/search" -d "$body" | jq -c 'del(.results[].timings)'; done
  done
}

# The reference: one sieve serve over one index, on the router's cores plus one shard's.
taskset -c "$(cores 0 $((ROUTER_CORES + PER > CORES ? CORES : ROUTER_CORES + PER)))" "$S" serve --index "$WORK/one" --port "$PORT" 2> "$WORK/one.log" &
PIDS+=($!)
wait_log "$WORK/one.log" ready
answers > "$WORK/answers-one.jsonl"
load "\"server\": \"sieve serve, one index\", \"cores\": $CORES, \"pinned\": \"$(cores 0 $((ROUTER_CORES + PER > CORES ? CORES : ROUTER_CORES + PER)))\""
stop_all

for shards in ${SHARDS_LIST:-2 4 8}; do
  ((shards >= 2)) || { echo "bench_shard_scaling: a shard set has 2 shards or more, not $shards" >&2; exit 2; }
  need=$((ROUTER_CORES + shards * PER))
  if ((need > CORES)) && [[ "${OVERSUBSCRIBE:-0}" != 1 ]]; then
    echo "{\"shards\": $shards, \"skipped\": \"needs $need cores, the machine has $CORES\"}"
    continue
  fi
  set_dir="$WORK/set-$shards"
  [[ -f "$set_dir/shardset.json" ]] || "$S" index build --corpus "$corpus" --out "$set_dir" --shards "$shards" --force >&2
  urls=()
  for ((i = 0; i < shards; i++)); do
    # The shard's own cores after the router's; when they run out (OVERSUBSCRIBE), the cores
    # the router does not use, shared by the shards left.
    if ((ROUTER_CORES + (i + 1) * PER <= CORES)); then mine=$(cores $((ROUTER_CORES + i * PER)) "$PER")
    elif ((CORES > ROUTER_CORES)); then mine=$(cores "$ROUTER_CORES" $((CORES - ROUTER_CORES)))
    else mine=$(cores 0 "$CORES"); fi
    sport=$((PORT + 1 + i))
    taskset -c "$mine" "$S" shard serve --index "$(printf '%s/shard-%03d' "$set_dir" "$i")" \
      --port "$sport" 2> "$WORK/shard-$i.log" &
    PIDS+=($!)
    urls+=(--shard-url "http://127.0.0.1:$sport")
  done
  for ((i = 0; i < shards; i++)); do wait_log "$WORK/shard-$i.log" ready; done
  taskset -c "$(cores 0 "$ROUTER_CORES")" "$S" serve --index "$set_dir" "${urls[@]}" --port "$PORT" \
    --threads "$ROUTER_CORES" 2> "$WORK/router.log" &
  PIDS+=($!)
  wait_log "$WORK/router.log" "serve: ready"
  answers > "$WORK/answers-$shards.jsonl"
  equal=false
  cmp -s "$WORK/answers-one.jsonl" "$WORK/answers-$shards.jsonl" && equal=true
  load "\"server\": \"router + shard servers\", \"shards\": $shards, \"cores\": $CORES, \"needs\": $need, \"router_cores\": $ROUTER_CORES, \"cores_per_shard\": $PER, \"answers_equal\": $equal"
  stop_all
done
