"""GPTCache's own pipeline (gptcache.Cache, its SQLite and FAISS managers, its get/put API) with
sieve's gate as the similarity evaluation (sieve.gptcache; ctest contract.gptcache, build/gptcache-venv
from tests/gptcache/requirements.txt). Beside it, the same pipeline with GPTCache's own distance
evaluation at its default threshold, which serves the negated question the cached answer: the
defect the gate exists for. Skipped without GPTCache, except under CI=true (tests/support/oracles.py)."""
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from oracles import oracle  # noqa: E402

gptcache = oracle("gptcache")
from gptcache import Cache, Config  # noqa: E402
from gptcache.adapter.api import get, put  # noqa: E402
from gptcache.manager import CacheBase, VectorBase, get_data_manager  # noqa: E402
from gptcache.processor.pre import get_prompt  # noqa: E402
from gptcache.similarity_evaluation import SearchDistanceEvaluation  # noqa: E402

import sieve  # noqa: E402
from sieve.gptcache import SieveGateEvaluation, sieve_embedding  # noqa: E402

ASKED = "does aspirin reduce fever?"
ANSWER = "Yes: aspirin lowers a fever."


@pytest.fixture(scope="module")
def gate():
    if "MiniLM" not in (sieve.default_model_dir() or ""):
        if os.environ.get("CI") == "true":
            pytest.fail("all-MiniLM-L6-v2 is not installed (scripts/setup.sh installs it)")
        pytest.skip("all-MiniLM-L6-v2 is not installed")
    return SieveGateEvaluation()


def new_cache(tmp_path, evaluation, threshold):
    cache = Cache()
    cache.init(pre_embedding_func=get_prompt, embedding_func=sieve_embedding(), similarity_evaluation=evaluation,
               data_manager=get_data_manager(CacheBase("sqlite", sql_url=f"sqlite:///{tmp_path}/cache.db"),
                                             VectorBase("faiss", dimension=384, top_k=4)),
               config=Config(similarity_threshold=threshold))
    return cache


def test_gptcache_with_the_gate_serves_paraphrases_and_refuses_the_negation(tmp_path, gate):
    cache = new_cache(tmp_path, gate, gate.threshold)
    put(ASKED, ANSWER, cache_obj=cache)
    put("what is the capital of France?", "Paris.", cache_obj=cache)
    assert get(ASKED, cache_obj=cache) == ANSWER
    assert get("does aspirin lower a fever?", cache_obj=cache) == ANSWER
    assert get("does aspirin not reduce fever?", cache_obj=cache) is None
    assert get("what is France's capital city?", cache_obj=cache) == "Paris."
    assert get("what is the capital of Spain?", cache_obj=cache) is None
    # The evaluation is the gate's score, on its own scale.
    assert gate.range() == (0.0, 1.0)
    assert gate.evaluation({"question": ASKED}, {"question": ASKED}) >= gate.threshold
    assert gate.evaluation({"question": "does aspirin not reduce fever?"}, {"question": ASKED}) < gate.threshold


def test_gptcache_by_distance_serves_the_negation(tmp_path):
    # GPTCache's default evaluation (distance of the vector store) at its default threshold 0.8.
    cache = new_cache(tmp_path, SearchDistanceEvaluation(), 0.8)
    put(ASKED, ANSWER, cache_obj=cache)
    assert get("does aspirin not reduce fever?", cache_obj=cache) == ANSWER
