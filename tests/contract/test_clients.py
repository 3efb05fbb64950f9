"""Real clients of the APIs `sieve serve` speaks, unmodified, pointed at its URL (tests/contract,
ctest contract.clients, build/contract-venv): OpenAI's Python client (`embeddings.create`, float
and base64) and Hugging Face's `InferenceClient` (`feature_extraction` on TEI's /embed). What
they return must be `sieve embed`'s keys for the same texts. The server runs the default model
(the real all-MiniLM-L6-v2). Skipped when the clients are not installed."""
import base64
import json
import os
import subprocess
import sys

import pytest
from conftest import sieve_serve

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from oracles import oracle  # noqa: E402  (pytest.importorskip, but a failure under CI=true)

openai = oracle("openai")
hub = oracle("huggingface_hub")
np = oracle("numpy")

BUILD = os.environ.get("SIEVE_BUILD_DIR", "build")
CLI = os.path.join(BUILD, "sieve")
TEXTS = ["the dog bit the man", "the man bit the dog", "a red car is left of the house"]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with sieve_serve(CLI, [], tmp_path_factory.mktemp("clients") / "serve.log") as url:
        yield url


@pytest.fixture(scope="module")
def want():
    out = subprocess.run([CLI, "embed", *TEXTS], capture_output=True, text=True, check=True).stdout
    return np.array([json.loads(line)["embedding"] for line in out.splitlines()], dtype=np.float64)


def test_openai_python_client_float_and_base64(server, want):
    client = openai.OpenAI(base_url=server + "/v1", api_key="unused")
    for fmt in ("float", "base64", openai.NOT_GIVEN):  # not given: the client asks for base64 and decodes it
        r = client.embeddings.create(model="all-MiniLM-L6-v2", input=TEXTS, encoding_format=fmt)
        rows = [d.embedding for d in sorted(r.data, key=lambda d: d.index)]
        if fmt == "base64":  # asked for explicitly, the client hands the string over as it came
            rows = [np.frombuffer(base64.b64decode(x), dtype="<f4") for x in rows]
        got = np.array(rows, dtype=np.float64)
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, atol=1e-6)
        assert r.usage.prompt_tokens > 0


def test_huggingface_inference_client_feature_extraction(server, want):
    client = hub.InferenceClient(model=server + "/embed")
    for i, text in enumerate(TEXTS):
        got = np.asarray(client.feature_extraction(text), dtype=np.float64).ravel()
        np.testing.assert_allclose(got, want[i], atol=1e-6)
