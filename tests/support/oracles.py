"""The Python tests' import of an oracle (a reference library: Ray, the OpenAI and Hugging Face
clients, LangChain, LlamaIndex): like pytest.importorskip, except that under CI=true a missing
oracle fails the test instead of skipping it, as the C++ tests do (tests/support/test_util.h)."""
import importlib
import os

import pytest


def oracle(name):
    if os.environ.get("CI") == "true":
        try:
            return importlib.import_module(name)
        except ImportError as e:
            pytest.fail(f"the oracle {name} is missing under CI=true ({e}); scripts/setup.sh --oracles installs it",
                        pytrace=False)
    return pytest.importorskip(name)
