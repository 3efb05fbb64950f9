#!/usr/bin/env bash
# Installs pinned Python packages into a virtual environment that sees Debian's python3-torch.
#   install-python.sh [DIR [REQUIREMENTS [IMPORTS]]]
# Default: the test oracles of tests/reference/requirements.txt (transformers,
# sentence-transformers, HF tokenizers) into build/oracle-venv. scripts/setup.sh --bench also
# installs bench/requirements.txt (the oracles plus ONNX Runtime) into build/bench-venv.
# IMPORTS (Python, comma-separated) are what must import afterwards (default: the oracles).
# scripts/setup.sh --oracles also installs tests/ray/requirements.txt (Ray) into build/ray-venv.
# Idempotent: a stamp holding the requirements' checksums skips the work when nothing changed.
# Exit 1 when the install fails.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dir="${1:-$here/../../build/oracle-venv}"
req="${2:-$here/requirements.txt}"
imports="${3:-sentence_transformers, transformers, tokenizers, torch}"
stamp="$dir/.sieve-requirements.sha256"
# The file and the oracles' file it may include (-r) both count.
want="$( (cat "$req" "$here/requirements.txt"; echo "$imports") | sha256sum | cut -d' ' -f1)"
if [[ -x "$dir/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then exit 0; fi
if ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  echo "reference: Debian's python3-torch is missing (scripts/setup.sh --oracles installs it)" >&2
  exit 1
fi
echo "reference: installing $req into $dir" >&2
rm -rf "$dir"
/usr/bin/python3 -m venv --system-site-packages "$dir"
log="$dir/pip-install.log"
if ! "$dir/bin/pip" install --disable-pip-version-check -r "$req" >"$log" 2>&1; then
  tail -n 5 "$log" >&2
  echo "reference: pip install of $req failed (log: $log)" >&2
  exit 1
fi
"$dir/bin/python" -c "import $imports" || {
  echo "reference: the packages installed but do not import" >&2; exit 1; }
echo "$want" > "$stamp"
