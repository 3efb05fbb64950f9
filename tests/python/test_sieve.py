"""The Python package against the CLI's output and independent NumPy computations (run by ctest
with PYTHONPATH=build/python and SIEVE_CLI=build/sieve)."""
import json
import os
import subprocess
import tempfile
import threading

import numpy as np
import pytest

import sieve

CLI = os.environ.get("SIEVE_CLI", "build/sieve")
TEXTS = ["the dog bit the man", "the man bit the dog", "a red car is parked", "the cat sat on the mat",
         "a man walks a dog", "blue house near the river", "the dog did not bite the man"]


def run(*args, stdin=None):
    r = subprocess.run([CLI, *args], input=stdin, capture_output=True, text=True, check=True)
    return r.stdout


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    d = str(tmp_path_factory.mktemp("py") / "model")
    run("make-fixture", "--out", d, "--seed", "5")
    return d


@pytest.fixture(scope="module")
def index(model, tmp_path_factory):
    d = tmp_path_factory.mktemp("pyix")
    corpus = d / "c.tsv"
    corpus.write_text("".join(f"d{i}\t{t}\n" for i, t in enumerate(TEXTS)))
    run("index", "build", "--model", model, "--corpus", str(corpus), "--out", str(d / "ix"))
    return str(d / "ix")


def test_encode_matches_sieve_embed(model):
    enc = sieve.Encoder.load(model, threads=1)
    keys = enc.encode(TEXTS)
    assert keys.dtype == np.float32 and keys.shape == (len(TEXTS), enc.dim)
    want = np.array([json.loads(l)["embedding"] for l in run("embed", "-m", model, *TEXTS).splitlines()])
    np.testing.assert_allclose(keys, want, atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(keys, axis=1), 1.0, atol=1e-5)
    assert enc.encode(TEXTS[0]).shape == (enc.dim,)


def test_tokens_and_unnormalized_pooling_by_hand(model):
    enc = sieve.Encoder.load(model, threads=1)
    pooled, tokens = enc.encode(TEXTS[:3], normalize=False, output="both")
    for p, t, text in zip(pooled, tokens, TEXTS):
        assert t.shape[1] == enc.dim and t.shape[0] == len(enc.tokenize(text)[0]["ids"])
        np.testing.assert_allclose(p, t.mean(axis=0), atol=1e-5)  # the fixture pools by mean
    unit = enc.encode(TEXTS[:3])
    np.testing.assert_allclose(unit, pooled / np.linalg.norm(pooled, axis=1, keepdims=True), atol=1e-5)
    tok = enc.tokenize("the dog")[0]
    assert tok["tokens"][0] == "[CLS]" and tok["tokens"][-1] == "[SEP]"
    with pytest.raises(ValueError):
        enc.encode(TEXTS, output="everything")


def test_search_matches_the_cli_and_arrays_agree(index, model):
    ix = sieve.Index.open(index)
    assert len(ix) == len(TEXTS)
    for mode in ("bm25", "dense"):
        hits = ix.search(["who bit the man"], k=5, mode=mode)[0]
        cli = json.loads(run("search", "--index", index, "--mode", mode, "-k", "5", "who bit the man"))["hits"]
        assert [h["id"] for h in hits] == [h["id"] for h in cli]
        np.testing.assert_allclose([h["score"] for h in hits], [h["score"] for h in cli], atol=1e-5)
        D, I = ix.search_arrays(["who bit the man"], k=5, mode=mode)
        assert D.shape == (1, 5) and I.dtype == np.int64
        n = len(hits)  # BM25 finds only the documents sharing a word; the rest is padding
        assert list(I[0][:n]) == [h["doc"] for h in hits] and all(I[0][n:] == -1)
        assert np.all(np.isneginf(D[0][n:]))
    assert ix.document("d2")["text"] == TEXTS[2]
    with pytest.raises(KeyError):
        ix.document("nope")
    assert ix.tokens("d0").shape == (len(sieve.Encoder.load(model).tokenize(TEXTS[0])[0]["ids"]), 64)


def test_verifier_f1_is_maxsim_by_hand(model):
    enc = sieve.Encoder.load(model, threads=1)
    ver = sieve.Verifier.load("F1", model=model)
    pairs = [(TEXTS[0], TEXTS[1]), (TEXTS[0], TEXTS[2])]
    got = ver.score(pairs)
    for (q, c), s in zip(pairs, got):
        tq, tc = enc.encode([q, c], output="tokens")
        tq = tq / np.linalg.norm(tq, axis=1, keepdims=True)
        tc = tc / np.linalg.norm(tc, axis=1, keepdims=True)
        assert abs(s - (tq @ tc.T).max(axis=1).mean()) < 1e-5
    assert ver.threshold is None
    with pytest.raises(ValueError):
        ver.accept(pairs)
    assert list(ver.accept(pairs, threshold=float(got.min()))) == [True, True]


def test_errors_carry_sieves_messages(tmp_path):
    with pytest.raises(sieve.Error, match="nowhere"):
        sieve.Encoder.load(str(tmp_path / "nowhere"))
    with pytest.raises(sieve.Error, match="not a sieve index|manifest|no such"):
        sieve.Index.open(str(tmp_path))


def test_concurrent_encode_from_threads_equals_sequential(model):
    enc = sieve.Encoder.load(model, threads=1)
    want = enc.encode(TEXTS)
    results = [None] * 6

    def work(i):
        results[i] = enc.encode(TEXTS[i % 3:] + TEXTS[: i % 3])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, r in enumerate(results):
        np.testing.assert_allclose(r, np.roll(want, -(i % 3), axis=0), atol=1e-6)
