#!/usr/bin/env bash
# Fuzzes every reader with libFuzzer (clang; ASan + UBSan), SECONDS per target (default 600),
# and reports per target: executions/s, corpus size, the line coverage of the files it targets
# (clang source-based coverage of the final corpus) and what it found. Every crash, hang (> 1 s)
# or out-of-memory input (> 2 GB) is copied to tests/fuzz/regressions/<target>/, which ctest
# replays in the normal build (test_fuzz); this script also replays them all under ASan + UBSan
# ("replay_exit" 0: clean). The corpora persist in build-fuzz/corpus between runs.
#   scripts/fuzz.sh [SECONDS=600] [TARGET...]
# SIEVE_FUZZ_JOBS=N runs N targets at a time (default 1; each target uses one core).
# A benchmark-style run, not a CI test (docs/testing.md, "Fuzzing").
set -euo pipefail
cd "$(dirname "$0")/.."
SECS="${1:-600}"
shift || true
BUILD="${SIEVE_FUZZ_BUILD_DIR:-build-fuzz}"
DATA="${SIEVE_SHARED_DATA:-../shared/data}"
command -v clang++ >/dev/null || { echo "fuzz: clang is not installed (scripts/setup.sh --bench)" >&2; exit 1; }
PROFDATA=$(command -v llvm-profdata || command -v llvm-profdata-14 || true)
LLVMCOV=$(command -v llvm-cov || command -v llvm-cov-14 || true)

echo "fuzz: building the targets in $BUILD (clang, ASan + UBSan + coverage)" >&2
CC=clang CXX=clang++ cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSIEVE_FUZZ=ON \
  -DSIEVE_BUILD_TESTS=OFF -DSIEVE_BUILD_BENCH=OFF -DSIEVE_BUILD_PYTHON=OFF >/dev/null
cmake --build "$BUILD" -j"$(nproc)" --target fuzz_all >&2

ALL=(wordpiece tokenizer_json bpe_unigram model_config safetensors eval_files pairs corpus record_log manifest
     nearmiss verifier_file http)
TARGETS=("$@")
((${#TARGETS[@]})) || TARGETS=("${ALL[@]}")

# The files each target is meant to cover (for the coverage report).
files_of() {
  case "$1" in
    wordpiece) echo src/text/wordpiece.cpp src/text/utf8.cpp ;;
    tokenizer_json) echo src/text/hf_tokenizer.cpp src/text/hf_common.cpp src/text/hf_normalizers.cpp src/text/hf_pretokenizers.cpp src/text/hf_models.cpp ;;
    bpe_unigram) echo src/text/hf_models.cpp src/text/hf_pretokenizers.cpp ;;
    model_config) echo src/model/model_config.cpp ;;
    safetensors) echo src/model/safetensors.cpp ;;
    eval_files) echo src/eval/beir.cpp ;;
    pairs) echo src/eval/pairs.cpp src/train/train_data.cpp ;;
    corpus) echo src/index/corpus_reader.cpp ;;
    record_log) echo src/index/record_log.cpp ;;
    manifest) echo src/index/manifest.cpp ;;
    nearmiss) echo src/nearmiss/sentence.cpp src/nearmiss/perturb.cpp src/nearmiss/perturb_tables.cpp src/nearmiss/perturb_helpers.cpp src/nearmiss/perturb_negation.cpp \
                   src/nearmiss/perturb_swap.cpp src/nearmiss/perturb_spatial.cpp src/nearmiss/perturb_lexical.cpp src/nearmiss/perturb_rewrite.cpp \
                   src/nearmiss/perturb_reorder.cpp ;;
    verifier_file) echo src/verify/verifier.cpp ;;
    http) echo src/serve/service.cpp ;;
  esac
}

# Extra seeds from the real data and from a model made here (never copied into the repository).
EXTRA="$BUILD/seeds-extra"
rm -rf "$EXTRA"
mkdir -p "$EXTRA"/{wordpiece,bpe_unigram,nearmiss,eval_files,corpus,pairs,tokenizer_json,model_config,manifest,verifier_file}
if [[ -d "$DATA" ]]; then
  i=0
  for f in "$DATA"/retrieval/*/queries.jsonl; do head -c 2000 "$f" > "$EXTRA/eval_files/q$i.jsonl"; i=$((i + 1)); done
  i=0
  for f in "$DATA"/retrieval/*/qrels/test.tsv; do head -c 2000 "$f" > "$EXTRA/eval_files/r$i.tsv"; i=$((i + 1)); done
  i=0
  for f in "$DATA"/retrieval/*/corpus.jsonl; do head -c 3000 "$f" > "$EXTRA/corpus/c$i.jsonl"; i=$((i + 1)); done
  i=0
  for f in $(find "$DATA" -name '*.tsv' -path '*pair*' | head -5) $(find "$DATA" -name '*.csv' | head -5); do
    head -c 2000 "$f" > "$EXTRA/pairs/p$i.${f##*.}"; i=$((i + 1))
  done
  i=0
  for f in "$DATA"/retrieval/*/queries.jsonl; do
    head -n 20 "$f" | jq -r '.text' | while read -r line; do
      printf '%s' "$line" > "$EXTRA/wordpiece/s$i"; printf '%s' "$line" > "$EXTRA/bpe_unigram/s$i"; printf '%s' "$line" > "$EXTRA/nearmiss/s$i"; i=$((i + 1))
    done
  done
fi
S="${SIEVE_BUILD_DIR:-build}/sieve"
if [[ -x "$S" ]]; then
  for arch in bert roberta modernbert; do
    "$S" make-fixture --arch "$arch" --out "$EXTRA/m-$arch" >/dev/null 2>&1 || continue
    cp "$EXTRA/m-$arch/config.json" "$EXTRA/model_config/$arch.json"
    [[ -f "$EXTRA/m-$arch/tokenizer.json" ]] && cp "$EXTRA/m-$arch/tokenizer.json" "$EXTRA/tokenizer_json/$arch.json"
  done
  printf 'd1\tthe dog bit the man\nd2\ta red car\n' > "$EXTRA/c.tsv"
  "$S" index build --model "$EXTRA/m-bert" --corpus "$EXTRA/c.tsv" --out "$EXTRA/ix" >/dev/null 2>&1 &&
    cp "$EXTRA/ix/manifest.json" "$EXTRA/manifest/"
fi
cp models/sieve-mini/verifier.safetensors "$EXTRA/verifier_file/" 2>/dev/null || true

mkdir -p "$BUILD/prof"
run_target() {
  local t="$1"
  local bin="$BUILD/tests/fuzz/fuzz_$t" corpus artifacts seeds d max_len execs speed peak cov
  corpus="$BUILD/corpus/$t" artifacts="$BUILD/artifacts/$t"
  mkdir -p "$corpus" "$artifacts" "tests/fuzz/regressions/$t"
  seeds=()
  for d in "tests/fuzz/seeds/$t" "tests/fuzz/regressions/$t" "$EXTRA/$t"; do [[ -d "$d" ]] && seeds+=("$d"); done
  echo "fuzz: $t for ${SECS}s" >&2
  max_len=8192
  [[ $t == verifier_file || $t == safetensors ]] && max_len=16384  # small F4 files are 11-13 KB
  LLVM_PROFILE_FILE="$BUILD/prof/$t-run.profraw" "$bin" -max_total_time="$SECS" -timeout=1 -rss_limit_mb=2048 \
    -max_len=$max_len -print_final_stats=1 -artifact_prefix="$artifacts/" "$corpus" "${seeds[@]}" > "$BUILD/$t.log" 2>&1 || true
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$BUILD/$t.log" | grep -o '[0-9]*$' | tail -1)
  speed=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$BUILD/$t.log" | grep -o '[0-9]*$' | tail -1)
  peak=$(grep -o 'stat::peak_rss_mb: *[0-9]*' "$BUILD/$t.log" | grep -o '[0-9]*$' | tail -1)
  local found=0 a
  for a in "$artifacts"/*; do
    [[ -f "$a" ]] || continue
    mv "$a" "tests/fuzz/regressions/$t/"  # moved, so a later run counts only its own findings
    found=$((found + 1))
  done
  # Every kept regression, replayed under ASan and UBSan with libFuzzer's limits (ctest replays
  # them in the normal build, where a use-after-free or an overflow can pass unseen).
  local replayed replay_rc=0
  replayed=$(find "tests/fuzz/regressions/$t" -type f | wc -l)
  if ((replayed)); then
    "$bin" -runs=0 -timeout=1 -rss_limit_mb=2048 "tests/fuzz/regressions/$t" > "$BUILD/$t.replay.log" 2>&1 || replay_rc=$?
  fi
  # Coverage of the final corpus and the seeds (one pass, no mutation).
  cov="null"
  if [[ -n "$PROFDATA" && -n "$LLVMCOV" ]]; then
    rm -f "$BUILD/prof/$t-cov.profraw"
    # The seeds too: libFuzzer keeps in $corpus only inputs that add coverage to what the seeds
    # (read from their own folders) reach, so the corpus alone misses the seeds' lines.
    LLVM_PROFILE_FILE="$BUILD/prof/$t-cov.profraw" "$bin" -runs=0 "$corpus" "${seeds[@]}" >/dev/null 2>&1 || true
    if [[ -f "$BUILD/prof/$t-cov.profraw" ]]; then
      "$PROFDATA" merge -sparse "$BUILD/prof/$t-cov.profraw" -o "$BUILD/prof/$t.profdata"
      # shellcheck disable=SC2046
      cov=$("$LLVMCOV" report "$bin" -instr-profile="$BUILD/prof/$t.profdata" $(files_of "$t") 2>/dev/null |
        awk '/^TOTAL/ {print $(NF-3)}' | tr -d '%')
      [[ -n "$cov" ]] || cov="null"
    fi
  fi
  echo "{\"target\": \"$t\", \"seconds\": $SECS, \"executions\": ${execs:-0}, \"execs_per_s\": ${speed:-0}," \
    "\"corpus_files\": $(find "$corpus" -type f | wc -l), \"line_coverage_pct\": $cov, \"peak_rss_mb\": ${peak:-0}," \
    "\"findings\": $found, \"regressions_replayed\": $replayed, \"replay_exit\": $replay_rc," \
    "\"files\": \"$(files_of "$t")\"}"
}

JOBS="${SIEVE_FUZZ_JOBS:-1}"
for t in "${TARGETS[@]}"; do
  [[ -x "$BUILD/tests/fuzz/fuzz_$t" ]] || { echo "fuzz: no target '$t'" >&2; exit 2; }
done
for t in "${TARGETS[@]}"; do
  while (( $(jobs -rp | wc -l) >= JOBS )); do wait -n || true; done
  run_target "$t" &
done
wait
