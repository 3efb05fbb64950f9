#!/usr/bin/env bash
# The HTTP library choice, by measurement: cpp-httplib (a thread pool of blocking sockets, as
# `sieve serve` runs it: 96 threads) against Boost.Beast (asynchronous, one thread per core) on the
# same handler (bench/bench_http.cpp: parse a JSON body, answer 384 floats as JSON), with wrk on
# loopback at 1, 16 and 64 connections. "httplib-backlog5" is httplib with its own listen backlog
# of 5; "httplib" as `sieve serve` runs it (backlog widened, see widen_listen_backlog). Prints
# one JSON line per case, with the server's CPU seconds per 1,000 requests (from /proc) beside
# QPS and latency.
#   bench/bench_http.sh [SECONDS_PER_CASE=8]
set -euo pipefail
cd "$(dirname "$0")/.."
SECS="${1:-8}"
B="${SIEVE_BUILD_DIR:-build}/bench/bench_http"
command -v wrk >/dev/null || { echo "bench_http: wrk is not installed (scripts/setup.sh --bench)" >&2; exit 1; }
[[ -x "$B" ]] || { echo "bench_http: $B not built (Boost headers: scripts/setup.sh --bench; -DSIEVE_BUILD_BENCH=ON)" >&2; exit 1; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
for i in $(seq 300); do echo "{\"input\": \"sentence number $i of the benchmark, about as long as a query\"}"; done > "$WORK/bodies.jsonl"
PORT="${PORT:-18800}"
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
for lib in httplib-backlog5 httplib beast; do
  threads=96
  [[ $lib == beast ]] && threads=$(nproc)
  PORT=$((PORT + 1))
  SIEVE_HTTPLIB_BACKLOG=$([[ $lib == httplib-backlog5 ]] && echo 5 || echo) \
    "$B" --library "${lib%-backlog5}" --port "$PORT" --threads "$threads" 2> "$WORK/$lib.log" &
  PID=$!
  for _ in $(seq 300); do grep -q ready "$WORK/$lib.log" && break; sleep 0.1; done
  grep -q ready "$WORK/$lib.log" || { echo "bench_http: $lib did not start: $(cat "$WORK/$lib.log")" >&2; exit 1; }
  for c in 1 16 64; do
    t0=$(cpu_ticks $PID)
    line=$(BODIES="$WORK/bodies.jsonl" wrk -t"$((c < 2 ? 1 : 2))" -c"$c" -d"${SECS}s" --timeout 10s --latency \
      -s bench/wrk/post.lua "http://127.0.0.1:$PORT/echo" | tail -1)
    t1=$(cpu_ticks $PID)
    reqs=$(echo "$line" | jq '.requests')
    cpu=$(echo "scale=4; ($t1 - $t0) / $(getconf CLK_TCK) * 1000 / $reqs" | bc)
    echo "{\"library\": \"$lib\", \"threads\": $threads, \"connections\": $c, \"server_cpu_s_per_1000\": $cpu, ${line#\{}"
  done
  kill $PID; wait $PID 2>/dev/null || true
done
