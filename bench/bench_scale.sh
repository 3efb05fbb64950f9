#!/usr/bin/env bash
# Indexing and search at scale with sieve-mini (docs/benchmarks.md, "At scale").
#   bench/bench_scale.sh [DOCS=1000000] [WORK=/tmp/sieve_scale] [COMPARE_DOCS=DOCS]
# 1. The corpus: the sentences `sieve corpus build` takes from Debian's dictionaries (WordNet,
#    GCIDE, FOLDOC: whatever is installed), one document per line, then, to reach DOCS, rewrites
#    of them by `sieve nearmiss generate` (every kind, meaning-keeping and near-miss), spread
#    evenly over its output. Kept in WORK between runs.
# 2. The first COMPARE_DOCS documents built twice: encoding and storing in turn (--no-overlap,
#    whose encode_seconds is the encoder alone) and overlapped (the default). The overhead of a
#    build is the share of its time that is not that encoding: 1 - encode_alone / total.
# 3. The DOCS build (overlapped; the same build when COMPARE_DOCS = DOCS), with its peak RSS.
# 4. bench_scale on it: per stage-1 mode p50/p99, alone and with sieve-mini's gate over the top
#    100, disk bytes per document, the searching process's peak RSS.
# Prints one JSON object per step. Needs a build with benchmarks (scripts/build.sh, the default).
set -euo pipefail
cd "$(dirname "$0")/.."
DOCS="${1:-1000000}"
WORK="${2:-/tmp/sieve_scale}"
COMPARE="${3:-$DOCS}"
B="${SIEVE_BUILD_DIR:-build}"
S="$B/sieve"
[[ -x "$S" && -x "$B/bench/bench_scale" ]] || { echo "bench_scale: build first (scripts/build.sh)" >&2; exit 1; }
mkdir -p "$WORK"
export SIEVE_LOG="${SIEVE_LOG:-warn}"

corpus="$WORK/corpus-$DOCS.txt"
if [[ ! -f "$corpus" ]]; then
  [[ -f "$WORK/dict/sentences.txt" ]] || "$S" corpus build --out "$WORK/dict" >&2
  grep -v '^$' "$WORK/dict/sentences.txt" > "$WORK/lines.txt"
  lines=$(wc -l < "$WORK/lines.txt")
  if ((lines >= DOCS)); then
    awk -v n="$DOCS" 'NR <= n' "$WORK/lines.txt" > "$corpus.tmp"
  else
    if [[ ! -f "$WORK/variants.tsv" ]]; then
      "$S" nearmiss generate -i "$WORK/lines.txt" -o "$WORK/variants.tmp.tsv" \
        --kinds negation,role_swap,binding_swap,spatial_flip,antonym,passive_role_swap,synonym,passive,contraction,coordination,possessive,adverb_move,determiner,negated_antonym >&2
      mv "$WORK/variants.tmp.tsv" "$WORK/variants.tsv"
    fi
    total=$(($(wc -l < "$WORK/variants.tsv") - 1))
    need=$((DOCS - lines))
    ((total >= need)) || { echo "bench_scale: only $((lines + total)) documents can be made" >&2; exit 1; }
    { cat "$WORK/lines.txt"
      tail -n +2 "$WORK/variants.tsv" | cut -f2 |
        awk -v need="$need" -v total="$total" '{ j = NR - 1; if (NF && int((j + 1) * need / total) > int(j * need / total)) print }'
    } > "$corpus.tmp"
  fi
  mv "$corpus.tmp" "$corpus"
fi
echo "{\"step\": \"corpus\", \"documents\": $(grep -vc '^$' "$corpus"), \"bytes\": $(stat -c %s "$corpus")}"

# One build under /usr/bin/time: its report plus peak RSS and wall time.
build() {  # build NAME CORPUS [FLAGS...]
  local name="$1" c="$2"
  shift 2
  rm -rf "$WORK/$name" "$WORK/$name.partial"
  /usr/bin/time -f '%M %e' -o "$WORK/$name.time" "$S" index build --corpus "$c" --out "$WORK/$name" "$@" \
    > "$WORK/$name.json"
  read -r rss wall < "$WORK/$name.time"
  jq -c --arg name "$name" --argjson rss "$rss" --argjson wall "$wall" \
    '{step: $name, peak_rss_mb: ($rss / 1024 | floor), wall_seconds: $wall} + .' "$WORK/$name.json"
}

cmp_corpus="$corpus"
if ((COMPARE < DOCS)); then
  cmp_corpus="$WORK/corpus-$COMPARE.txt"
  awk -v n="$COMPARE" 'NF && ++c <= n' "$corpus" > "$cmp_corpus"
fi
build "turns-$COMPARE" "$cmp_corpus" --no-overlap
build "overlap-$COMPARE" "$cmp_corpus"
alone=$(jq .encode_seconds "$WORK/turns-$COMPARE.json")
for name in "turns-$COMPARE" "overlap-$COMPARE"; do
  jq -c --arg name "$name" --argjson alone "$alone" \
    '{step: "overhead", build: $name, encode_alone_seconds: $alone, total_seconds,
      overhead_share: (1 - $alone / .total_seconds)}' "$WORK/$name.json"
done
rm -rf "$WORK/turns-$COMPARE"
index="$WORK/overlap-$COMPARE"
if ((COMPARE < DOCS)); then
  build "overlap-$DOCS" "$corpus"
  index="$WORK/overlap-$DOCS"
fi

# 200 queries: documents of the original sentences, spread over them (each is in the index).
awk -v step=$(( ($(wc -l < "$WORK/lines.txt") < DOCS ? $(wc -l < "$WORK/lines.txt") : DOCS) / 200 )) \
  'NR % step == 7 % step && ++c <= 200' "$WORK/lines.txt" > "$WORK/queries.txt"
"$B/bench/bench_scale" --index "$index" --queries "$WORK/queries.txt" | jq -c '{step: "search"} + .'
