#!/usr/bin/env bash
# Installs the `sieve` Python package into Debian's Python (/usr/bin/python3), offline: builds the
# extension when needed (scripts/build.sh), then `pip install --no-build-isolation ./python`.
# Debian marks its Python externally managed (PEP 668); this install goes to /usr/local (pip's
# default for root) or ~/.local, alongside Debian's own packages. Extra arguments go to pip
# (e.g. --user, --target DIR, --prefix DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-/usr/bin/python3}"
"$PY" -m pip --version >/dev/null 2>&1 || { echo "install-python: pip is missing (apt install python3-pip)" >&2; exit 1; }
# pip's setuptools build leaves python/build and python/sieve.egg-info behind: removed however it ends.
trap 'rm -rf python/build python/sieve.egg-info' EXIT
export PIP_BREAK_SYSTEM_PACKAGES=1 PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1
"$PY" -m pip install --no-build-isolation --no-deps "$@" ./python
