#!/usr/bin/env bash
# ModernBERT at the gte-modernbert-base shape: sieve (bench_modernbert) beside PyTorch eager
# (pytorch_modernbert.py), side by side in one run, each case in its own process; one JSON line
# per implementation and case. Needs a build with -DSIEVE_BUILD_BENCH=ON and python3-torch
# (`scripts/setup.sh --bench`).
#   bench/bench_modernbert.sh [THREADS=2]
set -euo pipefail
cd "$(dirname "$0")/.."
THREADS="${1:-2}"
B="${SIEVE_BUILD_DIR:-build}/bench/bench_modernbert"
for c in 32x128 4x2048 1x8192; do
  "$B" --case "$c" --threads "$THREADS"
  OMP_NUM_THREADS="$THREADS" /usr/bin/python3 bench/pytorch_modernbert.py --case "$c" --threads "$THREADS"
done
