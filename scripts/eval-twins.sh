#!/usr/bin/env bash
# The twin benchmark (NevIR-style): can retrieval tell a document from its structural near-miss?
# Twin documents: a held-out sentence and its negation or role swap (the generator's rules), and
# CondaQA originals with their meaning-changing crowd edits, mixed into SciFact's 5,183 abstracts.
# Each twin has its own query (a meaning-preserving rewrite of it); a pair counts when both queries
# rank their own document above the twin (pairwise accuracy). Systems: BM25, dense, hybrid, and
# hybrid + each verifier of VERIFIERS as rerank, gate and both. Also SciFact's test queries: stage 1
# against stage 1 + gate over the top 100 (nDCG@10 and the relevant documents the gate drops).
# Resumable: each step is skipped when its output exists. docs/evaluation.md describes it.
#   VERIFIERS="F1 default" scripts/eval-twins.sh [WORK=work/twins]
# Environment: MODEL (all-MiniLM-L6-v2), VERIFIERS ("F1 default": a file, F0/F1/F2, default = the
# verifier shipped for MODEL, cross:DIR, ...), CAP (250 pairs per generated kind), MAX_INPUTS (4000
# eval sentences read), K (100), MODE (hybrid: stage 1 under the verifiers), PRECISION (0.9: the
# balanced precision a gate threshold is calibrated for, on generated dev pairs, for a verifier
# without one), THREADS (0 = all cores), SENTENCES (folder with sentences-{dev,eval}.txt; default
# WORK/sentences, made by scripts/gate-sentences.py from `sieve corpus build`'s examples when absent),
# SIEVE_SHARED_DATA (../shared/data), SEED (42).
set -euo pipefail
cd "$(dirname "$0")/.."
WORK="${1:-work/twins}"
MODEL="${MODEL:-all-MiniLM-L6-v2}"
VERIFIERS="${VERIFIERS:-F1 default}"
DATA="${SIEVE_SHARED_DATA:-../shared/data}"
CAP="${CAP:-250}" MAX_INPUTS="${MAX_INPUTS:-4000}" K="${K:-100}" MODE="${MODE:-hybrid}"
PRECISION="${PRECISION:-0.9}" THREADS="${THREADS:-0}" SEED="${SEED:-42}"
SENTENCES="${SENTENCES:-$WORK/sentences}"
S="${SIEVE_BUILD_DIR:-build}/sieve"
T=(--threads "$THREADS")
NEAR="negation,role_swap"
REWRITES="synonym,passive,possessive,coordination,adverb_move,determiner,contraction"
SCIFACT="$DATA/retrieval/scifact"
CONDAQA="$DATA/pairs/condaqa-dev-edits.tsv"
for f in "$S" "$SCIFACT/corpus.jsonl" "$SCIFACT/qrels/test.tsv" "$CONDAQA"; do
  [[ -e "$f" ]] || { echo "eval-twins: '$f' is absent (build sieve; set SIEVE_SHARED_DATA)" >&2; exit 1; }
done
mkdir -p "$WORK/runs" "$WORK/scifact" "$WORK/verifiers"
NOTES=()
note() { echo "eval-twins: note: $*" >&2; NOTES+=(--note "$*"); }
step() {  # step NAME DONE_FILE COMMAND...: runs COMMAND unless DONE_FILE exists
  local name="$1" done_file="$2"
  shift 2
  if [[ -e "$done_file" ]]; then echo "eval-twins: $name: done before" >&2; return; fi
  echo "eval-twins: $name" >&2
  "$@"
}

# 1. Held-out sentences: the eval part of the gate's split (never trained on), dev for calibration.
if [[ ! -f "$SENTENCES/sentences-eval.txt" ]]; then
  SENTENCES="$WORK/sentences"
  step corpus "$WORK/corpus/report.json" "$S" corpus build --out "$WORK/corpus"
  step sentences "$SENTENCES/sentences-eval.txt" python3 scripts/gate-sentences.py \
    --examples "$WORK/corpus/examples.txt" --scifact "$SCIFACT/corpus.jsonl" --out "$SENTENCES"
fi

# 2. Twins: near-misses and rewrites of each sentence, then the same near-miss of each rewrite.
step generate "$WORK/generated.tsv" "$S" nearmiss generate --in "$SENTENCES/sentences-eval.txt" \
  --kinds "$NEAR,$REWRITES" --seed "$SEED" --max-inputs "$MAX_INPUTS" --out "$WORK/generated.tsv"
step pick "$WORK/condaqa-edits.txt" python3 scripts/twins.py pick --generated "$WORK/generated.tsv" \
  --condaqa "$CONDAQA" --out "$WORK"
step perturb-rewrites "$WORK/rewrites-perturbed.tsv" "$S" nearmiss generate --in "$WORK/rewrites.txt" \
  --kinds "$NEAR" --seed "$SEED" --out "$WORK/rewrites-perturbed.tsv"
step rewrite-condaqa "$WORK/condaqa-rewrites.tsv" "$S" nearmiss generate --in "$WORK/condaqa-edits.txt" \
  --kinds "$REWRITES" --seed "$SEED" --out "$WORK/condaqa-rewrites.tsv"
step assemble "$WORK/twins.jsonl" python3 scripts/twins.py assemble --generated "$WORK/generated.tsv" \
  --rewrites-perturbed "$WORK/rewrites-perturbed.tsv" --condaqa "$CONDAQA" \
  --condaqa-rewrites "$WORK/condaqa-rewrites.tsv" --scifact "$SCIFACT/corpus.jsonl" --cap "$CAP" --out "$WORK"

# 3. Indexes: SciFact alone (its test queries), and a copy with the twin documents added.
step index-scifact "$WORK/index-scifact/.done" bash -c '"$0" index build -m "$1" --corpus "$2" --out "$3" "${@:4}" \
  && touch "$3/.done"' "$S" "$MODEL" "$SCIFACT/corpus.jsonl" "$WORK/index-scifact" "${T[@]}"
step index-twins "$WORK/index-twins/.done" bash -c 'rm -rf "$3" && cp -a "$2" "$3" && rm -f "$3/.done" \
  && "$0" index add --index "$3" --corpus "$1" "${@:4}" && touch "$3/.done"' \
  "$S" "$WORK/twin-docs.jsonl" "$WORK/index-scifact" "$WORK/index-twins" "${T[@]}"

# 4. The verifiers: a gate needs a threshold; one without (F1, an uncalibrated file) gets one
# calibrated on generated pairs of the dev sentences (rewrites = same, near-misses = different).
step calibration-pairs "$WORK/calibration-pairs.tsv" "$S" nearmiss generate --in "$SENTENCES/sentences-dev.txt" \
  --kinds "$NEAR,$REWRITES" --seed "$SEED" --max-inputs "$MAX_INPUTS" --max-per-category 300 \
  --out "$WORK/calibration-pairs.tsv"
RUNS=() SCI=()
search() {  # search NAME ARGS...: one run over the twin queries
  local out="$WORK/runs/$1.jsonl"
  shift
  [[ -s "$out" ]] && return 0
  echo "eval-twins: search $(basename "$out" .jsonl)" >&2
  "$S" search --index "$WORK/index-twins" --queries "$WORK/queries.jsonl" -k "$K" --output jsonl "${T[@]}" "$@" \
    > "$out.tmp" && mv "$out.tmp" "$out"
}
scifact() {  # scifact NAME ARGS...: SciFact's test queries, top K
  local out="$WORK/scifact/$1.json"
  shift
  [[ -s "$out" ]] && return 0
  echo "eval-twins: scifact $(basename "$out" .json)" >&2
  "$S" eval retrieval --beir "$SCIFACT" --index "$WORK/index-scifact" --k "10,$K" --run-depth "$K" "${T[@]}" "$@" \
    > "$out.tmp" && mv "$out.tmp" "$out"
}
for mode in bm25 dense hybrid; do
  search "$mode" --mode "$mode" && RUNS+=(--run "$mode=$WORK/runs/$mode.jsonl")
done
scifact "$MODE" --mode "$MODE" && SCI+=(--scifact "$MODE=$WORK/scifact/$MODE.json")
for v in $VERIFIERS; do
  spec="$v" name="$(basename "$v" .safetensors)"
  case "$v" in cross:* | cascade:*) name="${v%%:*}-$name" ;; esac  # cross:DIR and cascade:DIR apart
  if [[ "$v" == default ]]; then
    spec="$("$S" model list --json | python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if sys.argv[1] in (m["name"], m["folder"]): print(m["verifier"] or "")' "$MODEL")"
    if [[ -z "$spec" ]]; then note "no verifier is shipped for $MODEL yet: 'default' skipped"; continue; fi
  fi
  # The gate's threshold: the verifier's own, else one calibrated here.
  gate_spec="$spec"
  has_threshold="$([[ -f "$spec" ]] && "$S" verify info "$spec" 2>/dev/null | python3 -c 'import json,sys
t = json.load(sys.stdin).get("threshold"); print(isinstance(t, (int, float)))' || echo False)"
  if [[ "$has_threshold" != True ]]; then
    gate_spec="$WORK/verifiers/$name-calibrated.safetensors"
    if [[ ! -f "$gate_spec" ]] && ! "$S" verify calibrate -m "$MODEL" --verifier "$spec" --pairs "$WORK/calibration-pairs.tsv" \
         --balanced --target-precision "$PRECISION" --out "$gate_spec" "${T[@]}" > "$WORK/verifiers/$name-calibration.json"; then
      note "$v: calibration failed, its gate is skipped"; gate_spec=""
    fi
    [[ -n "$gate_spec" ]] && note "$v has no gate threshold of its own: calibrated on generated dev pairs for balanced precision $PRECISION: $(python3 -c 'import json,sys
c = json.load(open(sys.argv[1]))
print("threshold %.4f, precision %.3f, recall %.3f on %d rewrites and %d near-misses" % (
    c["threshold"], c["precision"], c["recall"], c["positives"], c["negatives"]))' "$WORK/verifiers/$name-calibration.json")"
  fi
  V=(--mode "$MODE" --candidates "$K")
  search "$MODE+$name-rerank" "${V[@]}" --verifier "$spec" --rerank && RUNS+=(--run "$MODE+$name rerank=$WORK/runs/$MODE+$name-rerank.jsonl") \
    || note "$v: rerank failed (see stderr)"
  [[ -n "$gate_spec" ]] || continue
  search "$MODE+$name-gate" "${V[@]}" --verifier "$gate_spec" --gate && RUNS+=(--run "$MODE+$name gate=$WORK/runs/$MODE+$name-gate.jsonl") \
    || note "$v: gate failed (see stderr)"
  search "$MODE+$name-gate-rerank" "${V[@]}" --verifier "$gate_spec" --gate --rerank \
    && RUNS+=(--run "$MODE+$name gate+rerank=$WORK/runs/$MODE+$name-gate-rerank.jsonl") || note "$v: gate+rerank failed"
  scifact "$MODE+$name-gate" "${V[@]}" --verifier "$gate_spec" --gate --no-rerank \
    && SCI+=(--scifact "$MODE+$name gate=$WORK/scifact/$MODE+$name-gate.json") || note "$v: SciFact gate failed"
done

# 5. Pairwise accuracy per system and twin kind, and the SciFact table.
python3 scripts/twins.py score --twins "$WORK/twins.jsonl" "${RUNS[@]}" "${SCI[@]}" "${NOTES[@]}" \
  --json "$WORK/twins.json" --markdown "$WORK/twins.md"
echo "eval-twins: $WORK/twins.json, $WORK/twins.md" >&2
