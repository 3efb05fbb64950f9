#!/usr/bin/env bash
# Runs the concurrency tests under ThreadSanitizer: readers searching while an add commits (threads
# and processes), the build's writer thread beside the encoder (builds, a stopped build, an add),
# stage 2's parallel decoding and maps (the pipeline tests), and the server's
# concurrent clients, several encoder workers and live documents. Builds the three test binaries
# in build-tsan/ (-DSIEVE_TSAN=ON); suppressions for the uninstrumented third-party runtimes are
# in tests/tsan.supp (docs/testing.md says why each is there). Exit status: 0 when no report.
#   scripts/tsan.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD="${SIEVE_TSAN_BUILD_DIR:-build-tsan}"
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSIEVE_TSAN=ON -DSIEVE_BUILD_TESTS=ON \
  -DSIEVE_BUILD_BENCH=OFF -DSIEVE_BUILD_PYTHON=OFF >/dev/null
cmake --build "$BUILD" -j"$(nproc)" --target test_index test_verify_cli test_serve sieve_exe >&2
export TSAN_OPTIONS="suppressions=$PWD/tests/tsan.supp halt_on_error=0 second_deadlock_stack=1 report_signal_unsafe=0 exitcode=66"
status=0
run() {
  echo "tsan: $1 --gtest_filter=$2" >&2
  local log="$BUILD/$(basename "$1").tsan.log" out="$BUILD/$(basename "$1").gtest.log" rc=0
  "$BUILD/tests/unit/$1" --gtest_filter="$2" > "$out" 2> "$log" || rc=$?
  ((rc == 0)) || status=1
  reports=$(grep -c "WARNING: ThreadSanitizer" "$log" || true)
  passed=$(grep -oE "PASSED  \] [0-9]+" "$out" | grep -oE "[0-9]+$" || echo 0)
  echo "{\"binary\": \"$1\", \"filter\": \"$2\", \"exit\": $rc, \"tests_passed\": ${passed:-0}, \"tsan_reports\": $reports}"
}
run index/test_index 'Index.ThreadsSearchWhileAnAddCommits:Index.ReaderKeepsItsSnapshotWhileAddsCommit:Index.LeftoversOfAKilledAddLeaveTheBm25Statistics:Index.OverlappedWriterStoresWhatTurnByTurnStores:Index.InterruptedBuildCommitsWhatWasEncodedAndResumes:Index.AddEqualsBuildingAtOnce'
run verify/test_verify_cli 'Pipeline.*'
run serve/test_serve 'ServeTest.ConcurrentClientsGetTheSequentialAnswers:ServeTest.SeveralEncoderWorkersGiveTheSameAnswers:ServeDocuments.*:ServeBatching.*:ServeHttp.AFailedLoadIsReportedToConcurrentRequests'
exit $status
