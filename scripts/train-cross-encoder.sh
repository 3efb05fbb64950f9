#!/usr/bin/env bash
# The accurate tier and the cascade (issue 43, docs/evaluation.md "Gate modes"): a cross-encoder
# trained from MODEL on the human-written train parts of the gate's sets, its threshold calibrated
# on the gate's dev pairs, the cascade's band calibrated there for the model's shipped gate, and
# every eval part scored by the three tiers (fast, accurate, cascade) with `sieve eval nearmiss`.
# The sets come from scripts/train-gate.sh (DATA_ONLY=1, run here when WORK has none).
# Resumable: each step is skipped when its output exists, and training resumes from its newest
# checkpoint. Step times go to WORK/times-cross.tsv. Sizes come from the environment.
#   scripts/train-cross-encoder.sh [WORK=work/gate-minilm]     (MODEL=all-MiniLM-L6-v2: about an
#   hour on 2 cores: 700 steps of 16 pairs, then scoring)
# Environment: MODEL, SOURCES (paws,mrpc,qqp,condaqa: the human train parts), STEPS (700, about an
# epoch of them), BATCH (16), LR (2e-5), MAX_LENGTH (128), MAX_SENT (0.25: the largest share of
# dev pairs the band may send), THREADS (0 = all cores), SIEVE_SHARED_DATA, SKIP_BUILD;
# MIX_STEPS (0): > 0 continues the human-trained model on WORK/train.tsv (every source of the gate,
# generated kinds included: they come after the human parts) for that many steps, into WORK/cross-mix;
# MIX_TRAIN (a labelled pair file) and MIX_NAME (cross-mix) continue it on another file into
# WORK/MIX_NAME instead (one source's effect at a time: e.g. the human parts plus train-gate.sh's
# PAWS-style pairs).
# COMBINE (1): the band's pairs are scored by the combination of both tiers (scripts/fit-tiers.py,
# fitted on each dev part's scores by both, each part weighing the same) instead of the
# cross-encoder alone; 0: the cross-encoder alone. MAX_SENT=1 lets the cascade send every pair:
# the combination itself, the most accurate gate (docs/evaluation.md, "The tiers combined").
# Output: WORK/cross/last (the cross-encoder, with its threshold and band), WORK/cross-eval/ (with
# MIX_STEPS: WORK/cross-mix/last, WORK/cross-mix-eval/).
set -euo pipefail
source "$(dirname "$0")/lib/once.sh"
cd "$(dirname "$0")/.."
WORK="${1:-work/gate-minilm}"
MODEL="${MODEL:-all-MiniLM-L6-v2}"
SOURCES="${SOURCES:-paws,mrpc,qqp,condaqa}"
STEPS="${STEPS:-700}" BATCH="${BATCH:-16}" LR="${LR:-2e-5}" MAX_LENGTH="${MAX_LENGTH:-128}"
MAX_SENT="${MAX_SENT:-0.25}" THREADS="${THREADS:-0}" COMBINE="${COMBINE:-1}"
PY="${PYTHON:-/usr/bin/python3}"
# The positive categories of the eval parts, as train-gate.sh scores them.
REWRITES="synonym,passive,contraction,coordination,possessive,adverb_move,determiner,negated_antonym"
POSITIVES="identity,paws_paraphrase,mrpc_paraphrase,qqp_paraphrase,sts_paraphrase,condaqa_paraphrase,$REWRITES"
S="${SIEVE_BUILD_DIR:-build}/sieve"
if [[ -z "${SKIP_BUILD:-}" ]]; then
  scripts/setup.sh
  scripts/build.sh -DSIEVE_BUILD_TESTS=OFF -DSIEVE_BUILD_BENCH=OFF
fi
mkdir -p "$WORK"
TIMES="$WORK/times-cross.tsv"
[[ -f "$TIMES" ]] || printf 'step\tseconds\n' > "$TIMES"
step() {  # step NAME DONE_FILE COMMAND...: runs COMMAND unless DONE_FILE exists; records its time
  local name="$1" done_file="$2"
  shift 2
  if [[ -e "$done_file" ]]; then echo "train-cross-encoder: $name: done before" >&2; return; fi
  echo "train-cross-encoder: $name" >&2
  local t0=$SECONDS
  "$@"
  printf '%s\t%s\n' "$name" "$((SECONDS - t0))" >> "$TIMES"
}
# 1. The sets (train-gate.sh's data steps).
if [[ ! -f "$WORK/dev.tsv" ]]; then
  MODEL="$MODEL" SKIP_BUILD=1 DATA_ONLY=1 scripts/train-gate.sh "$WORK"
fi
# 2. The training file: the human-written train parts, shuffled by the trainer.
human() {
  printf 'sentence1\tsentence2\tcategory\tlabel\n' > "$WORK/cross-train.tsv.tmp"
  local src
  for src in ${SOURCES//,/ }; do tail -n +2 "$WORK/sets/$src-train.tsv" >> "$WORK/cross-train.tsv.tmp"; done
  mv "$WORK/cross-train.tsv.tmp" "$WORK/cross-train.tsv"
}
step train_file "$WORK/cross-train.tsv" human
# 3. Training, resumable from its checkpoints.
train() {
  local resume=()
  compgen -G "$WORK/cross/checkpoint-*/trainer_state.json" > /dev/null && resume=(--resume)
  "$S" train cross-encoder -m "$MODEL" --train "$WORK/cross-train.tsv" --out "$WORK/cross" --steps "$STEPS" \
    --batch-size "$BATCH" --lr "$LR" --max-length "$MAX_LENGTH" --save-every 100 --threads "$THREADS" "${resume[@]}"
}
step train "$WORK/cross/last/model.safetensors" train
CE="$WORK/cross/last" P="cross"
# 3b. MIX_STEPS: the whole mix after the human parts.
MIX_STEPS="${MIX_STEPS:-0}" MIX_TRAIN="${MIX_TRAIN:-$WORK/train.tsv}" MIX_NAME="${MIX_NAME:-cross-mix}"
if (( MIX_STEPS > 0 )); then
  [[ -f "$MIX_TRAIN" ]] || { echo "train-cross-encoder: MIX_TRAIN '$MIX_TRAIN' is not a file" >&2; exit 1; }
  train_mix() {
    local resume=()
    compgen -G "$WORK/$MIX_NAME/checkpoint-*/trainer_state.json" > /dev/null && resume=(--resume)
    "$S" train cross-encoder -m "$WORK/cross/last" --train "$MIX_TRAIN" --out "$WORK/$MIX_NAME" \
      --steps "$MIX_STEPS" --batch-size "$BATCH" --lr "$LR" --max-length "$MAX_LENGTH" --save-every 100 \
      --threads "$THREADS" "${resume[@]}"
  }
  step "train_$MIX_NAME" "$WORK/$MIX_NAME/last/model.safetensors" train_mix
  CE="$WORK/$MIX_NAME/last" P="$MIX_NAME"
fi
# 4. Its threshold (the highest balanced accuracy on the dev pairs, as the shipped gate's), then
# the cascade's band for the model's shipped gate on the same pairs.
step "calibrate_$P" "$WORK/$P-calibrate.json" bash -c '"$1" verify calibrate -m "$2" --verifier "cross:$3" --pairs "$4" \
  --max-balanced-accuracy --threads "$5" > "$6.tmp" && mv "$6.tmp" "$6"' _ "$S" "$MODEL" "$CE" "$WORK/dev.tsv" "$THREADS" \
  "$WORK/$P-calibrate.json"
COMB=()
if [[ "$COMBINE" == 1 ]]; then
  # 4b. Both tiers' scores of each dev part (the gate's sources but identity), then their combination.
  tiers() {
    mkdir -p "$WORK/$P-tiers"
    local fast=() cross=() part name
    for part in "$WORK"/sets/{paws,mrpc,qqp,condaqa,mixed,cannot}-dev.tsv "$WORK/generated-dev.tsv"; do
      [[ -f "$part" ]] || continue
      name="$(basename "$part" .tsv)"
      once "$WORK/$P-tiers/$name.fast.jsonl" "$S" verify score -m "$MODEL" --verifier default --pairs "$part" \
        --threads "$THREADS"
      once "$WORK/$P-tiers/$name.cross.jsonl" "$S" verify score -m "$MODEL" --verifier "cross:$CE" --pairs "$part" \
        --threads "$THREADS"
      fast+=("$WORK/$P-tiers/$name.fast.jsonl")
      cross+=("$WORK/$P-tiers/$name.cross.jsonl")
    done
    "$PY" scripts/fit-tiers.py --fast "${fast[@]}" --cross "${cross[@]}" --out "$WORK/$P-combination.json"
  }
  step "tiers_$P" "$WORK/$P-combination.json" tiers
  COMB=(--combination "$WORK/$P-combination.json")
fi
step "band_$P" "$WORK/$P-band.json" bash -c '"$1" verify calibrate -m "$2" --verifier "cascade:$3" --pairs "$4" \
  --max-sent "$5" --threads "$6" "${@:8}" > "$7.tmp" && mv "$7.tmp" "$7"' _ "$S" "$MODEL" "$CE" "$WORK/dev.tsv" "$MAX_SENT" \
  "$THREADS" "$WORK/$P-band.json" "${COMB[@]}"
# 5. Every eval part, by the three tiers (and the pooled cosine).
mkdir -p "$WORK/$P-eval"
for f in "$WORK"/sets/*-eval.tsv; do
  name="$(basename "$f" -eval.tsv)"
  step "eval_${P}_$name" "$WORK/$P-eval/$name.json" bash -c '"$1" eval nearmiss -m "$2" --pairs "$3" --verifier default \
    --verifier "cross:$4" --verifier "cascade:$4" --positive-categories "$7" --threads "$5" --markdown "$6.md" \
    > "$6.json.tmp" && mv "$6.json.tmp" "$6.json"' _ "$S" "$MODEL" "$f" "$CE" "$THREADS" "$WORK/$P-eval/$name" "$POSITIVES"
done
echo "train-cross-encoder: done: $CE; $WORK/$P-band.json; $WORK/$P-eval/" >&2
