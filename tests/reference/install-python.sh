#!/usr/bin/env bash
# Installs the Python test oracles of tests/reference/requirements.txt (transformers,
# sentence-transformers, HF tokenizers; pinned) into a virtual environment DIR (default:
# build/oracle-venv) that sees Debian's python3-torch. Idempotent: a stamp holding the
# requirements' checksum skips the work when nothing changed. Exit 1 when the install fails.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dir="${1:-$here/../../build/oracle-venv}"
req="$here/requirements.txt"
stamp="$dir/.sieve-requirements.sha256"
want="$(sha256sum "$req" | cut -d' ' -f1)"
if [[ -x "$dir/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then exit 0; fi
if ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  echo "reference: Debian's python3-torch is missing (scripts/setup.sh --oracles installs it)" >&2
  exit 1
fi
echo "reference: installing the Python oracles (transformers, sentence-transformers) into $dir" >&2
rm -rf "$dir"
/usr/bin/python3 -m venv --system-site-packages "$dir"
log="$dir/pip-install.log"
if ! "$dir/bin/pip" install --disable-pip-version-check -r "$req" >"$log" 2>&1; then
  tail -n 5 "$log" >&2
  echo "reference: pip install of the Python oracles failed (log: $log)" >&2
  exit 1
fi
"$dir/bin/python" -c 'import sentence_transformers, transformers, tokenizers, torch' || {
  echo "reference: the oracles installed but do not import" >&2; exit 1; }
echo "$want" > "$stamp"
