#!/usr/bin/env bash
# Soak of `sieve serve`: mixed search traffic (bm25, dense, dense + gate; wrk, 8 connections)
# while document batches are added (DOCS documents every 2 s; 0: search only), for MINUTES. Samples the server's
# resident memory every 30 s and reports its growth from the first sample after one minute of
# warm-up, the errors (non-2xx and socket), the batches added, and whether the index verifies
# afterwards. Works on a copy of the SciFact index bench/bench_serve.sh builds.
#   bench/soak_serve.sh [MINUTES=10] [WORK=/tmp/sieve_bench_serve] [DOCS=10]
set -euo pipefail
cd "$(dirname "$0")/.."
MIN="${1:-10}"
WORK="${2:-/tmp/sieve_bench_serve}"
DOCS="${3:-10}"
S="${SIEVE_BUILD_DIR:-build}/sieve"
[[ -f "$WORK/index/manifest.json" && -f "$WORK/gate.jsonl" ]] || { echo "soak: run bench/bench_serve.sh first" >&2; exit 1; }
rm -rf "$WORK/soak"
mkdir -p "$WORK/soak"
cp -r "$WORK/index" "$WORK/soak/index"
cat "$WORK/bm25.jsonl" "$WORK/dense.jsonl" "$WORK/gate.jsonl" | shuf --random-source=<(yes) > "$WORK/soak/mixed.jsonl"
PORT="${PORT:-18791}"
"$S" serve --index "$WORK/soak/index" --port "$PORT" 2> "$WORK/soak/serve.log" &
PID=$!
trap 'kill -TERM $PID 2>/dev/null; wait $PID 2>/dev/null || true' EXIT
for _ in $(seq 300); do grep -q ready "$WORK/soak/serve.log" && break; sleep 0.2; done
SECS=$((MIN * 60))
BODIES="$WORK/soak/mixed.jsonl" wrk -t2 -c8 -d"${SECS}s" --timeout 30s --latency -s bench/wrk/post.lua \
  "http://127.0.0.1:$PORT/v1/search" > "$WORK/soak/wrk.txt" &
WRK=$!
batches=0 bad=0 rss=()
start=$SECONDS
next_sample=$((start + 60))
while kill -0 "$WRK" 2>/dev/null; do
  body=$(jq -n -c --arg b "$batches" --argjson n "$DOCS" '{documents: [range($n) | {_id: ("soak_" + $b + "_" + tostring), title: "soak", text: ("soak document " + $b + " number " + tostring + " about proteins and cells")}]}')
  if ((DOCS > 0)); then
    code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/v1/documents" -d "$body")
    if [[ "$code" == 200 ]]; then batches=$((batches + 1)); else bad=$((bad + 1)); fi
  fi
  if ((SECONDS >= next_sample)); then
    rss+=("$(awk '/VmRSS/ {print $2}' /proc/$PID/status)")
    next_sample=$((next_sample + 30))
  fi
  sleep 2
done
wait "$WRK" || true
line=$(tail -1 "$WORK/soak/wrk.txt")
kill -TERM $PID; wait $PID || true
trap - EXIT
verify=ok
"$S" index verify --index "$WORK/soak/index" > /dev/null 2>&1 || verify=failed
first=${rss[0]:-0} last=${rss[-1]:-0}
docs_now=$(jq '.documents' "$WORK/soak/index/manifest.json" 2>/dev/null || echo null)
echo "{\"minutes\": $MIN, \"documents_per_batch\": $DOCS, \"documents_at_end\": $docs_now, \"search\": $line, \"document_batches\": $batches, \"document_errors\": $bad," \
  "\"rss_first_mb\": $((first / 1024)), \"rss_last_mb\": $((last / 1024)), \"rss_growth_pct\": $(echo "100 * ($last - $first) / $first" | bc -l | cut -c1-6)," \
  "\"rss_samples_kb\": [$(IFS=,; echo "${rss[*]}")], \"index_verify\": \"$verify\"}"
