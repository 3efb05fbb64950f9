#!/usr/bin/env bash
# Installs the Debian packages sieve needs. Idempotent: installs only what is missing and runs
# `apt-get update` at most once, only when something must be installed.
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config jq
  libtorch-dev libopenblas-dev libgloo-dev
  libfaiss-dev libxapian-dev zlib1g-dev
  libutf8proc-dev libsentencepiece-dev libpcre2-dev
  nlohmann-json3-dev libcli11-dev libcpp-httplib-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  wordnet-base dict-gcide dict-foldoc
  chromium  # the web page test of `sieve serve` (headless)
  pybind11-dev python3-dev python3-numpy python3-pytest python3-pip python3-setuptools python3-wheel  # the Python package, its tests and its install
)
# Optional extras for the benchmarks (PyTorch comparisons, wrk for the service, Boost.Beast for the
# HTTP library comparison, clang's libFuzzer and coverage tools for scripts/fuzz.sh):
# `scripts/setup.sh --bench`.
if [[ "${1:-}" == "--bench" ]]; then
  PACKAGES+=(python3-torch wrk libboost-dev clang libclang-rt-14-dev llvm)
fi

# The test oracles (npm: Hugging Face tokenizers, gpt-3-encoder) go into build/npm; never fatal.
install_npm_oracles() {
  "$(dirname "${BASH_SOURCE[0]}")/../tests/reference/install.sh" \
    "$(dirname "${BASH_SOURCE[0]}")/../build/npm" || true
}

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "setup: all ${#PACKAGES[@]} packages present" >&2
  install_npm_oracles
  exit 0
fi

SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
echo "setup: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
if ! $SUDO apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null 2>&1; then
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
install_npm_oracles
