#!/usr/bin/env bash
# Sets up (Debian packages), builds and runs the whole test suite under ctest.
# Tests that need ../shared/data skip with a message when it is absent.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --oracles
scripts/build.sh -DSIEVE_BUILD_TESTS=ON -DSIEVE_BUILD_BENCH=OFF
cd "${SIEVE_BUILD_DIR:-build}"
ctest --output-on-failure -j"$(nproc)" "$@"
