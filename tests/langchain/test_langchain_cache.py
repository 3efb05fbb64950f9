"""sieve.langchain.SieveSemanticCache under langchain-tests' own cache suites (SyncCacheTestSuite and
AsyncCacheTestSuite of the pinned release, unmodified; ctest contract.langchain), a fresh cache
folder per test and the default model with its shipped gate; then our own: the negated question
of a cached one is a miss, its paraphrase a hit, and another LLM configuration never sees it."""
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from oracles import oracle  # noqa: E402  (pytest.importorskip, but a failure under CI=true)

suites = oracle("langchain_tests.integration_tests.cache")

from langchain_core.outputs import Generation  # noqa: E402

from sieve.langchain import SieveSemanticCache  # noqa: E402


class TestSieveSemanticCacheSync(suites.SyncCacheTestSuite):
    @pytest.fixture()
    def cache(self, tmp_path):
        return SieveSemanticCache(tmp_path / "cache")


class TestSieveSemanticCacheAsync(suites.AsyncCacheTestSuite):
    @pytest.fixture()
    async def cache(self, tmp_path):
        return SieveSemanticCache(tmp_path / "cache")


def test_the_gate_decides_and_the_llm_string_scopes(tmp_path):
    c = SieveSemanticCache(tmp_path / "cache")
    c.update("does aspirin reduce fever?", "llm-a", [Generation(text="Yes.")])
    assert c.lookup("does aspirin lower a fever?", "llm-a") == [Generation(text="Yes.")]
    assert c.lookup("does aspirin not reduce fever?", "llm-a") is None
    assert c.lookup("does aspirin reduce fever?", "llm-b") is None
