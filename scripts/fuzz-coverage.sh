#!/usr/bin/env bash
# Line coverage of each reader by the whole fuzzing campaign: replays every target's corpus
# (build-fuzz/corpus/<target>, kept by scripts/fuzz.sh) and seeds once with coverage, merges
# the profiles, and prints one JSON line per source file with the lines all targets together
# reach (a file is often read by several targets: hf_models.cpp by tokenizer_json for WordPiece
# and WordLevel, by bpe_unigram for BPE and Unigram). Run after scripts/fuzz.sh; it builds nothing.
#   scripts/fuzz-coverage.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD="${SIEVE_FUZZ_BUILD_DIR:-build-fuzz}"
PROFDATA=$(command -v llvm-profdata || command -v llvm-profdata-14 || true)
LLVMCOV=$(command -v llvm-cov || command -v llvm-cov-14 || true)
[[ -n "$PROFDATA" && -n "$LLVMCOV" ]] || { echo "fuzz-coverage: llvm-profdata and llvm-cov are needed (scripts/setup.sh --bench)" >&2; exit 1; }
[[ -d "$BUILD/corpus" ]] || { echo "fuzz-coverage: no corpora in $BUILD/corpus (run scripts/fuzz.sh first)" >&2; exit 1; }

FILES=(src/text/wordpiece.cpp src/text/utf8.cpp src/text/hf_tokenizer.cpp src/text/hf_common.cpp
       src/text/hf_normalizers.cpp src/text/hf_pretokenizers.cpp src/text/hf_models.cpp src/model/model_config.cpp
       src/model/safetensors.cpp src/eval/beir.cpp src/eval/pairs.cpp src/train/train_data.cpp
       src/index/corpus_reader.cpp src/index/record_log.cpp src/index/manifest.cpp src/nearmiss/sentence.cpp
       src/nearmiss/perturb.cpp src/nearmiss/perturb_tables.cpp src/nearmiss/perturb_helpers.cpp src/nearmiss/perturb_negation.cpp
       src/nearmiss/perturb_swap.cpp src/nearmiss/perturb_spatial.cpp src/nearmiss/perturb_lexical.cpp src/nearmiss/perturb_rewrite.cpp
       src/nearmiss/perturb_reorder.cpp src/verify/verifier.cpp src/serve/service.cpp)
out="$BUILD/prof/union"
rm -rf "$out"
mkdir -p "$out"
objects=()
for dir in "$BUILD"/corpus/*/; do
  t=$(basename "$dir")
  bin="$BUILD/tests/fuzz/fuzz_$t"
  [[ -x "$bin" ]] || continue
  # The corpus and the seeds it grew from (libFuzzer keeps only inputs that add to the seeds).
  dirs=("$dir")
  for d in "tests/fuzz/seeds/$t" "tests/fuzz/regressions/$t" "$BUILD/seeds-extra/$t"; do [[ -d "$d" ]] && dirs+=("$d"); done
  echo "fuzz-coverage: replaying $t ($(find "${dirs[@]}" -type f | wc -l) inputs)" >&2
  LLVM_PROFILE_FILE="$out/$t.profraw" "$bin" -runs=0 "${dirs[@]}" >/dev/null 2>&1 || true
  objects+=("$bin")
done
"$PROFDATA" merge -sparse "$out"/*.profraw -o "$out/all.profdata"
args=("${objects[0]}")
for o in "${objects[@]:1}"; do args+=(-object "$o"); done
"$LLVMCOV" report "${args[@]}" -instr-profile="$out/all.profdata" "${FILES[@]}" 2>/dev/null |
  awk '$1 ~ /\.cpp$/ || $1 == "TOTAL" { printf "{\"file\": \"%s\", \"lines\": %s, \"missed\": %s, \"line_coverage_pct\": %s}\n", $1, $(NF-5), $(NF-4), substr($(NF-3), 1, length($(NF-3)) - 1) }'
