# once OUT CMD...: runs CMD with its standard output written to OUT, unless OUT is already there.
# The output goes to OUT.tmp first and is renamed onto OUT only when CMD succeeds, so a run that
# was interrupted (or failed) leaves no OUT behind to be taken for a finished step next time.
# Sourced by the recipes (scripts/train-cross-encoder.sh, scripts/eval-twins.sh).
once() {
  local out="$1"
  shift
  [[ -f "$out" ]] && return 0
  rm -f "$out.tmp"
  if "$@" > "$out.tmp"; then
    mv "$out.tmp" "$out"
  else
    local rc=$?
    rm -f "$out.tmp"
    return "$rc"
  fi
}
