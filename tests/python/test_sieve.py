"""The Python package against the CLI's output and independent NumPy computations (run by ctest
with PYTHONPATH=build/python and SIEVE_CLI=build/sieve)."""
import json
import shutil
import os
import subprocess
import tempfile
import sys
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


def test_max_length_truncates_as_sieve_embed_does(model):
    enc = sieve.Encoder.load(model, threads=1, max_length=4)
    assert enc.max_length == 4
    pooled, tokens = enc.encode(TEXTS, output="both")
    assert all(t.shape[0] == 4 for t in tokens)  # [CLS] + 2 words + [SEP]: every text is cut
    want = np.array([json.loads(l)["embedding"] for l in run("embed", "-m", model, "--max-length", "4", *TEXTS).splitlines()])
    np.testing.assert_allclose(pooled, want, atol=1e-6)
    assert not np.allclose(pooled, sieve.Encoder.load(model, threads=1).encode(TEXTS), atol=1e-3)


def test_int8_index_holds_the_int8_encoders_keys(model, tmp_path):
    ix = sieve.Index.build([{"_id": f"d{i}", "text": t} for i, t in enumerate(TEXTS)], tmp_path / "ix8", model,
                           precision="int8")
    want = sieve.Encoder.load(model, threads=1, precision="int8").encode(TEXTS)
    np.testing.assert_allclose(ix.keys(), want, atol=1e-5)
    assert not np.allclose(ix.keys(), sieve.Encoder.load(model, threads=1).encode(TEXTS), atol=1e-4)
    with pytest.raises(Exception, match="int4"):
        sieve.Index.open(tmp_path / "ix8", model, precision="int4")


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
    # Exact search by hand over the stored keys: the dense hits' order and cosines.
    keys = ix.keys()
    q = sieve.Encoder.load(model).encode("who bit the man")
    order = np.argsort(-(keys @ q), kind="stable")[:5]
    D, I = ix.search_arrays("who bit the man", k=5, mode="dense")
    assert list(I[0]) == list(order)
    np.testing.assert_allclose(D[0], (keys @ q)[order], atol=1e-5)
    assert [ix.document_id(d) for d in order] == [h["id"] for h in ix.search("who bit the man", k=5, mode="dense")]
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


DOCS = [{"_id": f"d{i}", "title": "", "text": t} for i, t in enumerate(TEXTS)]


def test_build_from_dicts_equals_the_cli_build(index, model, tmp_path):
    ix = sieve.Index.build(iter(DOCS), tmp_path / "py_ix", model=model)   # any iterable of dicts
    cli = sieve.Index.open(index)
    assert len(ix) == len(cli) == len(TEXTS) and ix.stats()["dim"] == cli.stats()["dim"]
    for q in ("who bit the man", "a car"):
        for mode in ("dense", "bm25"):
            a, b = ix.search(q, k=7, mode=mode), cli.search(q, k=7, mode=mode)
            assert [h["id"] for h in a] == [h["id"] for h in b]
            np.testing.assert_allclose([h["score"] for h in a], [h["score"] for h in b], atol=1e-5)
    np.testing.assert_allclose(ix.tokens("d3"), cli.tokens("d3"), atol=1e-6)
    # From a path too (str or PathLike), with a build report when not opened.
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps(d) + "\n" for d in DOCS))
    rep = sieve.Index.build(corpus, tmp_path / "py_ix2", model=model, open=False)
    assert rep["documents"] == len(TEXTS) and rep["added"] == len(TEXTS)
    with pytest.raises(ValueError, match="document 1"):
        sieve.Index.build([DOCS[0], {"title": "no id"}], tmp_path / "bad", model=model)
    with pytest.raises(ValueError, match="no documents"):
        sieve.Index.build([], tmp_path / "bad", model=model)


def test_a_shard_set_opens_and_searches_as_one_index(model, tmp_path):
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps(d) + "\n" for d in DOCS))
    one = sieve.Index.build(corpus, tmp_path / "one", model=model, chunk_docs=2)
    shards = sieve.Index.build(corpus, tmp_path / "set", model=model, chunk_docs=2, shards=3)
    assert shards.stats()["shards"] == 3 and one.stats()["shards"] == 1
    assert sieve.Index.open(tmp_path / "set").stats()["documents"] == len(DOCS)
    for mode in ("dense", "bm25", "hybrid"):
        assert shards.search(TEXTS, k=5, mode=mode) == one.search(TEXTS, k=5, mode=mode)
    assert (shards.keys() == one.keys()).all()
    np.testing.assert_array_equal(shards.tokens("d6"), one.tokens("d6"))
    # Written through the set, as the one index: the same answers after an add, an upsert and deletes.
    def answers(ix):  # equal scores may come in either order (each orders ties by its own numbering)
        return [sorted((round(h["score"], 5), h["id"]) for h in hits) for mode in ("dense", "bm25")
                for hits in ix.search(TEXTS, k=5, mode=mode)]
    for ix in (one, shards):
        ix.add([{"_id": "new", "text": TEXTS[3] + " again", "metadata": {"kind": "new"}}])
        ix.upsert([{"_id": "d6", "text": "the man bit the dog"}])
        ix.delete(["d1"])
        ix.delete(filter={"kind": "new"})
    assert answers(shards) == answers(one)
    assert len(shards) == len(one) == len(DOCS) - 1
    reopened = sieve.Index.open(tmp_path / "set")
    assert answers(reopened) == answers(one) and reopened.document("d6")["text"] == "the man bit the dog"
    with pytest.raises(ValueError, match="corpus file"):
        sieve.Index.build(DOCS, tmp_path / "x", model=model, shards=2)


def test_add_is_all_or_nothing_and_searchable(model, tmp_path):
    ix = sieve.Index.build(DOCS[:4], tmp_path / "ix", model=model)
    rep = ix.add([{"_id": "n1", "text": TEXTS[5]}, {"_id": "n2", "title": "t", "text": TEXTS[6]}])
    assert rep["added"] == 2 and rep["documents"] == 6 and len(ix) == 6
    assert ix.document("n2") == {"_id": "n2", "title": "t", "text": TEXTS[6]}
    assert ix.search(TEXTS[5], k=1, mode="dense")[0]["id"] == "n1"
    # An id already there: nothing of the batch is added, the index still opens and searches.
    with pytest.raises(sieve.Error, match="n1"):
        ix.add([{"_id": "n3", "text": "fresh"}, {"_id": "n1", "text": "again"}])
    assert len(ix) == 6 and len(sieve.Index.open(tmp_path / "ix")) == 6
    with pytest.raises(KeyError):
        ix.document("n3")
    # Equal to a build of the same six documents.
    whole = sieve.Index.build(DOCS[:4] + [{"_id": "n1", "text": TEXTS[5]}, {"_id": "n2", "title": "t", "text": TEXTS[6]}],
                              tmp_path / "whole", model=model)
    D1, I1 = ix.search_arrays(TEXTS, k=6, mode="dense")
    D2, I2 = whole.search_arrays(TEXTS, k=6, mode="dense")
    np.testing.assert_allclose(D1, D2, atol=1e-5)
    assert [[ix.document_id(d) for d in row] for row in I1] == [[whole.document_id(d) for d in row] for row in I2]


def test_two_threads_adding_at_once_both_land(model, tmp_path):
    # One writer per index: the second thread waits for the first (it failed before with
    # "another sieve process is writing"), and each batch lands whole.
    ix = sieve.Index.build(DOCS[:2], tmp_path / "ix", model=model)
    errors = []

    def add(prefix):
        try:
            for b in range(3):
                ix.add([{"_id": f"{prefix}{b}-{j}", "text": TEXTS[(b + j) % len(TEXTS)]} for j in range(4)])
        except Exception as e:  # noqa: BLE001 - the test reports any failure
            errors.append(e)

    threads = [threading.Thread(target=add, args=(p,)) for p in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(ix) == 2 + 2 * 3 * 4 and len(sieve.Index.open(tmp_path / "ix")) == len(ix)
    for p in ("a", "b"):
        for b in range(3):
            assert ix.document(f"{p}{b}-3")["text"] == TEXTS[(b + 3) % len(TEXTS)]


def cli_search(index, query, *args):
    return json.loads(run("search", "--index", index, *args, query))["hits"]


def same_hit_keys(py_hit, cli_hit, extra):
    """A Python hit dict holds the CLI's keys with its values, plus `extra`, and None for the rest."""
    for key, value in cli_hit.items():
        assert key in py_hit, (key, py_hit)
        if isinstance(value, float):
            assert abs(py_hit[key] - value) <= 1e-5 * (1 + abs(value)), (key, py_hit, cli_hit)
        else:
            assert py_hit[key] == value, (key, py_hit, cli_hit)
    rest = {k for k, v in py_hit.items() if v is not None} - set(cli_hit) - set(extra)
    assert not rest, (rest, py_hit, cli_hit)


def test_hit_dicts_have_the_keys_of_sieve_search(index, model):
    ix = sieve.Index.open(index)
    q = "who bit the man"
    cli = json.loads(run("search", "--index", index, "--mode", "hybrid", "-k", "5", q))["hits"]
    hits = ix.search(q, k=5, mode="hybrid")
    assert len(hits) == len(cli) > 0
    assert any("dense_rank" in h and "bm25_rank" in h for h in cli), cli
    for h, c in zip(hits, cli):
        same_hit_keys(h, c, {"doc"})
    ver = sieve.Verifier.load("cosine", model=model)
    cli = json.loads(run("search", "--index", index, "--mode", "hybrid", "-k", "5", "--candidates", "6",
                         "--verifier", "cosine", "--rerank", q))["hits"]
    hits = sieve.search_verified(ix, ver, q, k=5, candidates=6, mode="hybrid", rerank=True)
    assert len(hits) == len(cli) > 0
    for h, c in zip(hits, cli):
        assert "verifier_score" in c and "score" not in c
        same_hit_keys(h, c, {"doc", "score"})


def test_search_verified_matches_sieve_search(index, model):
    ix = sieve.Index.open(index)
    ver = sieve.Verifier.load("F1", model=model)
    q = "the dog bit the man"
    for gate, rerank, threshold in ((False, True, None), (True, False, 0.5), (True, True, 0.3)):
        hits = sieve.search_verified(ix, ver, q, k=5, candidates=7, mode="dense", gate=gate, rerank=rerank,
                                     threshold=threshold)
        args = ["--mode", "dense", "-k", "5", "--verifier", "F1", "--candidates", "7"]
        args += ["--gate"] * gate + ["--rerank"] * rerank
        args += ["--threshold", str(threshold)] if threshold is not None else []
        want = cli_search(index, q, *args)
        assert [h["id"] for h in hits] == [h["id"] for h in want]
        np.testing.assert_allclose([h["verifier_score"] for h in hits], [h["verifier_score"] for h in want], atol=1e-5)
        if threshold is not None:
            assert all(h["accepted"] == (h["verifier_score"] >= threshold) for h in hits)
            if gate:
                assert all(h["accepted"] for h in hits)
    # F1 is MaxSim over the stored token states: check one score by hand.
    hit = sieve.search_verified(ix, ver, q, k=1, candidates=7, mode="dense")[0]
    tq = sieve.Encoder.load(model).encode(q, output="tokens")[0]
    tq = tq / np.linalg.norm(tq, axis=1, keepdims=True)
    tc = ix.tokens(hit["id"])
    assert abs(hit["verifier_score"] - (tq @ tc.T).max(axis=1).mean()) < 2e-2  # stored as SQ8


def test_a_verifier_for_another_encoder_is_refused_naming_both_identities(index, model, tmp_path):
    other = str(tmp_path / "other")
    run("make-fixture", "--out", other, "--seed", "6")
    vfile = str(tmp_path / "other.safetensors")
    run("verify", "create", "--kind", "F3", "-m", other, "-o", vfile)
    recorded = json.loads(run("verify", "info", vfile))["encoder_identity"]
    serving = sieve.Index.open(index).stats()["model_identity"]  # the index was built with `model`
    assert recorded and serving and recorded != serving
    with pytest.raises(sieve.Error) as e:
        sieve.Verifier.load(vfile, model=model)
    assert recorded in str(e.value) and serving in str(e.value)
    # Loaded for its own encoder, it is still refused against an index of another one.
    ver = sieve.Verifier.load(vfile, model=other)
    with pytest.raises(sieve.Error) as e:
        sieve.search_verified(sieve.Index.open(index), ver, "the dog bit the man", k=3, candidates=7)
    assert recorded in str(e.value) and serving in str(e.value)


def test_explain_is_the_token_cosine_map(model):
    ver = sieve.Verifier.load("F1", model=model)
    e = sieve.explain(TEXTS[0], TEXTS[1], verifier=ver, threshold=0.9)
    enc = sieve.Encoder.load(model)
    tq, tc = enc.encode([TEXTS[0], TEXTS[1]], output="tokens")
    tq = tq / np.linalg.norm(tq, axis=1, keepdims=True)
    tc = tc / np.linalg.norm(tc, axis=1, keepdims=True)
    assert e["map"].shape == (len(tq), len(tc)) and e["map"].dtype == np.float32
    np.testing.assert_allclose(e["map"], tq @ tc.T, atol=1e-5)
    assert abs(e["score"] - (tq @ tc.T).max(axis=1).mean()) < 1e-5
    assert e["decision"] == ("accept" if e["score"] >= 0.9 else "reject") and e["threshold"] == 0.9
    assert e["query_tokens"] == enc.tokenize(TEXTS[0])[0]["tokens"]
    keys = enc.encode([TEXTS[0], TEXTS[1]])
    assert abs(e["stage1_cosine"] - float(keys[0] @ keys[1])) < 1e-5
    assert e["svg"].lstrip().startswith("<svg") and "</svg>" in e["svg"]


WORDNET = "/usr/share/wordnet"


@pytest.mark.skipif(not os.path.isdir(WORDNET), reason="WordNet is not installed (apt install wordnet-base)")
def test_nearmiss_generate_matches_the_cli(tmp_path):
    sentences = ["the dog bit the man", "a red car is parked behind the old house", "she is happy"]
    kinds = ["negation", "role_swap", "binding_swap", "spatial_flip", "antonym"]
    got = sieve.nearmiss.generate(sentences, kinds, seed=7)
    src = tmp_path / "in.txt"
    src.write_text("\n".join(sentences) + "\n")
    out = tmp_path / "out.jsonl"
    run("nearmiss", "generate", "--in", str(src), "--out", str(out), "--seed", "7", "--kinds", ",".join(kinds))
    want = [json.loads(l) for l in out.read_text().splitlines()]
    assert [(g["source"], g["perturbed"], g["kind"]) for g in got] == \
        [(w["sentence1"], w["sentence2"], w["category"]) for w in want]
    assert any(g["kind"] == "role_swap" and g["perturbed"] == "the man bit the dog" for g in got)
    assert not any(g["positive"] for g in got)
    assert sieve.nearmiss.generate(sentences, seed=7) == got   # the default kinds are these five
    with pytest.raises(ValueError):
        sieve.nearmiss.generate(sentences, ["no_such_kind"])


def test_metrics_by_hand():
    qrels = {"q1": {"a": 1, "c": 2}, "q2": {"x": 1}, "q3": {"z": 1}}   # q3 is not in the run: 0
    run_ = {"q1": ["a", "b", "c"], "q2": {"y": 2.0, "x": 1.0}}
    # q1: DCG = 1/log2(2) + 2/log2(4) = 2; ideal = 2/log2(2) + 1/log2(3)
    ndcg_q1 = 2 / (2 + 1 / np.log2(3))
    ndcg_q2 = (1 / np.log2(3)) / 1.0
    assert abs(sieve.eval.ndcg(run_, qrels, k=10) - (ndcg_q1 + ndcg_q2 + 0) / 3) < 1e-9
    assert abs(sieve.eval.mrr(run_, qrels, k=10) - (1 + 0.5 + 0) / 3) < 1e-9
    assert abs(sieve.eval.recall(run_, qrels, k=2) - (0.5 + 1 + 0) / 3) < 1e-9
    assert abs(sieve.eval.precision(run_, qrels, k=2) - (0.5 + 0.5 + 0) / 3) < 1e-9
    # AP: q1 (1/1 + 2/3) / 2, q2 1/2, q3 0
    assert abs(sieve.eval.map(run_, qrels) - ((1 + 2 / 3) / 2 + 0.5) / 3) < 1e-9
    per = sieve.eval.evaluate(run_, qrels, ks=[1], per_query=True)
    assert per["q1"]["ndcg@1"] == 0.5 and per["q2"]["acc@1"] == 0.0   # q1: 1 / ideal 2
    with pytest.raises(ValueError):
        sieve.eval.evaluate(run_, qrels, ks=[0])


def test_encode_hands_numpy_the_librarys_buffer(model):
    import tracemalloc
    enc = sieve.Encoder.load(model, threads=1)
    texts = [f"sentence {i} about a dog" for i in range(3000)]
    enc.encode(texts[:10])
    tracemalloc.start()
    keys = enc.encode(texts, batch_size=64)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    # NumPy reports its own allocations to tracemalloc; a copy of the result would show as one.
    assert keys.nbytes == 3000 * enc.dim * 4 and peak < keys.nbytes / 4, (peak, keys.nbytes)
    assert keys.base is not None and not keys.flags.owndata and keys.flags.c_contiguous


def test_ctrl_c_stops_encoding_between_chunks(model):
    import signal
    enc = sieve.Encoder.load(model, threads=1)
    texts = ["the dog bit the man"] * 4000
    calls = []

    def progress(done, total):
        calls.append(done)
        if len(calls) == 2:
            os.kill(os.getpid(), signal.SIGINT)

    with pytest.raises(KeyboardInterrupt):
        enc._impl.encode(texts, 8, True, "pooled", progress)
    assert 2 <= len(calls) < 4000 // 64


def test_ctrl_c_stops_a_build_which_then_resumes(model, tmp_path):
    import signal
    docs = [{"_id": str(i), "text": f"document {i} about dogs and men"} for i in range(20000)]
    timer = threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            sieve.Index.build(docs, tmp_path / "ix", model=model, chunk_docs=64)
    finally:
        timer.cancel()
    assert not (tmp_path / "ix").exists()   # unfinished builds stay in ix.partial
    ix = sieve.Index.build(docs, tmp_path / "ix", model=model, chunk_docs=64)
    assert len(ix) == 20000 and ix.document("19999")["text"] == docs[-1]["text"]


def test_concurrent_search_from_threads_equals_sequential(index):
    ix = sieve.Index.open(index)
    queries = TEXTS * 3
    want = [ix.search(q, k=5, mode=m) for q in queries for m in ("dense", "bm25", "hybrid")]
    results = [None] * 8

    def work(i):
        results[i] = [ix.search(q, k=5, mode=m) for q in queries for m in ("dense", "bm25", "hybrid")]

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for r in results:
        assert [[h["id"] for h in hits] for hits in r] == [[h["id"] for h in hits] for hits in want]


def test_train_passes_options_as_the_clis_flags():
    assert sieve.train.arguments(kind="F4", steps=10, exact_match=True, resume=False, out=None,
                                 kinds=["a", "b"]) == ["--kind", "F4", "--steps", "10", "--exact-match",
                                                       "--kinds", "a,b"]
    with pytest.raises(subprocess.CalledProcessError):
        sieve.train.verifier(model="/nonexistent", train="/nonexistent.csv", out="/tmp/never")


def test_library_calls_are_quiet_unless_asked(model, tmp_path):
    """Index.build says nothing on stderr by default (the CLI's "fresh build" and codec lines are
    info); set_log_level("info") brings them back."""
    code = ("import sys, sieve\n"
            "if sys.argv[1] == 'info': sieve.set_log_level('info')\n"
            "sieve.Index.build([{'_id': str(i), 'text': 'the dog bit the man %d' % i} for i in range(40)], "
            "sys.argv[2], model=sys.argv[3], force=True)\n")
    env = dict(os.environ)
    env.pop("SIEVE_LOG", None)
    quiet = subprocess.run([sys.executable, "-c", code, "warn", str(tmp_path / "a"), model], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, check=True)
    assert "fresh build" not in quiet.stderr and "training token codec" not in quiet.stderr, quiet.stderr
    loud = subprocess.run([sys.executable, "-c", code, "info", str(tmp_path / "b"), model], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, check=True)
    assert "fresh build" in loud.stderr, loud.stderr
    with pytest.raises(ValueError):
        sieve.set_log_level("loud")


def test_models_lists_the_store_and_names_load(monkeypatch):
    names = {m["name"]: m for m in sieve.models()}
    assert "sieve-mini" in names                      # shipped in the repository
    m = names["sieve-mini"]
    assert m["dim"] == 256 and m["pooling"] == "mean" and m["verifier"].endswith("verifier.safetensors")
    assert sieve.Encoder.load("sieve-mini").encode("a dog").shape == (256,)
    with pytest.raises(sieve.Error, match="is not installed"):
        sieve.Encoder.load("no-such-model")


def test_an_index_built_and_opened_by_model_name(tmp_path):
    docs = [{"_id": str(i), "text": t} for i, t in enumerate(["the dog bit the man", "the man bit the dog", "a cat"])]
    ix = sieve.Index.build(docs, tmp_path / "named", model="sieve-mini")   # builds, then opens with the name
    assert len(ix) == 3
    again = sieve.Index.open(tmp_path / "named", model="sieve-mini")
    assert again.search("the dog bit the man", k=1)[0]["id"] == "0"


def test_cross_encoder_verifier_scores_texts_like_the_cli(index, model, tmp_path):
    pairs = tmp_path / "p.tsv"
    rows = [(TEXTS[i], TEXTS[(i + 1) % len(TEXTS)] if i % 2 else TEXTS[i], i % 2 == 0) for i in range(len(TEXTS))]
    pairs.write_text("sentence1\tsentence2\tlabel\n" + "".join(f"{a}\t{b}\t{int(l)}\n" for a, b, l in rows))
    out = json.loads(run("train", "cross-encoder", "--model", model, "--train", str(pairs), "--out",
                         str(tmp_path / "ce"), "--steps", "2", "--batch-size", "4", "--threads", "1"))
    ce = "cross:" + out["final_dir"]
    ver = sieve.Verifier.load(ce, model=model)
    assert ver.kind == "cross" and ver.threshold is None
    got = ver.score([(a, b) for a, b, _ in rows])
    cli = [json.loads(line)["score"] for line in
           run("verify", "score", "--model", model, "--verifier", ce, "--pairs", str(pairs)).splitlines()]
    np.testing.assert_allclose(got, cli, atol=1e-6)
    assert ((got > 0) & (got < 1)).all()  # sigmoid of the logit
    hits = sieve.search_verified(sieve.Index.open(index), ver, TEXTS[0], k=3, candidates=7, mode="dense",
                                 rerank=True)
    want = cli_search(index, TEXTS[0], "--mode", "dense", "-k", "3", "--verifier", ce, "--candidates", "7",
                      "--rerank")
    assert [h["id"] for h in hits] == [h["id"] for h in want]
    with pytest.raises(ValueError, match="no token map"):
        sieve.explain(TEXTS[0], TEXTS[1], verifier=ver)


def test_gate_modes_load_the_cascade_like_the_cli(index, model, tmp_path):
    # A model folder with a calibrated F2 gate, a cross-encoder with a threshold, and the cascade's
    # band calibrated for that gate (the CLI's commands); then Python's gate_mode against the CLI.
    mdir = str(tmp_path / "model")
    shutil.copytree(model, mdir)
    pairs = tmp_path / "p.tsv"
    rows = [(TEXTS[i], TEXTS[(i + 1) % len(TEXTS)] if i % 2 else TEXTS[i], i % 2 == 0) for i in range(len(TEXTS))]
    pairs.write_text("sentence1\tsentence2\tlabel\n" + "".join(f"{a}\t{b}\t{int(l)}\n" for a, b, l in rows))
    run("verify", "calibrate", "--model", mdir, "--verifier", "F2", "--pairs", str(pairs), "--max-balanced-accuracy",
        "--out", mdir + "/verifier.safetensors")
    ce = json.loads(run("train", "cross-encoder", "--model", model, "--train", str(pairs), "--out",
                        str(tmp_path / "ce"), "--steps", "2", "--batch-size", "4", "--threads", "1"))["final_dir"]
    run("verify", "calibrate", "--model", mdir, "--verifier", "cross:" + ce, "--pairs", str(pairs),
        "--max-balanced-accuracy")
    band = json.loads(run("verify", "calibrate", "--model", mdir, "--verifier", "cascade:" + ce, "--pairs",
                          str(pairs), "--max-sent", "1"))
    assert 0 <= band["sent"] <= 1
    ver = sieve.Verifier.load(model=mdir, gate_mode="cascade", cross=ce)
    assert ver.kind == "cascade"
    assert ver.threshold == sieve.Verifier.load(model=mdir, gate_mode="fast").threshold
    got = ver.score([(a, b) for a, b, _ in rows])
    cli = [json.loads(line)["score"] for line in
           run("verify", "score", "--model", mdir, "--verifier", "cascade:" + ce, "--pairs", str(pairs)).splitlines()]
    np.testing.assert_allclose(got, cli, atol=1e-6)
    hits = sieve.search_verified(sieve.Index.open(index, model=mdir), ver, TEXTS[0], k=7, candidates=7, mode="dense",
                                 rerank=True)
    want = cli_search(index, TEXTS[0], "-m", mdir, "--mode", "dense", "-k", "7", "--gate-mode", "cascade", "--cross",
                      ce, "--candidates", "7", "--rerank")
    accepted = [h for h in hits if h["accepted"]]
    assert [h["id"] for h in accepted] == [h["id"] for h in want]
    assert sieve.Verifier.load(model=mdir, gate_mode="accurate", cross=ce).kind == "cross"
    with pytest.raises(ValueError, match="not both"):
        sieve.Verifier.load("F1", model=mdir, gate_mode="fast")
    with pytest.raises(ValueError, match="cross goes with"):
        sieve.Verifier.load(model=mdir, gate_mode="fast", cross=ce)
    with pytest.raises(sieve.Error, match="needs a cross-encoder"):
        sieve.Verifier.load(model=mdir, gate_mode="cascade")


def test_a_shard_answering_a_non_finite_score_is_refused_not_sorted(model, tmp_path):
    # The router's shards reached through a Python object (as Ray Serve's router reaches them): a
    # NaN score in a dense list is refused by the binding (503 naming it) before the merge sorts.
    from sieve import _sieve
    corpus = tmp_path / "c.tsv"
    corpus.write_text("".join(f"d{i}\t{t}\n" for i, t in enumerate(TEXTS)))
    run("index", "build", "--model", model, "--corpus", str(corpus), "--out", str(tmp_path / "set"), "--shards", "2")
    shards = sorted(p for p in (tmp_path / "set").iterdir() if p.is_dir())
    assert len(shards) == 2

    class Remote:
        def __init__(self, nan):
            self.servers = [_sieve.ShardServer(str(p)) for p in shards]
            self.nan = nan

        def dense_lists(self, shard, pooled, depth, ef_search, nprobe, timeout_s=None, expect=""):
            lists = self.servers[shard].dense_lists(pooled, depth, ef_search, nprobe, expect=expect)
            if self.nan:
                ids, scores = lists[0]
                scores = np.array(scores, dtype=np.float64)
                scores[0] = np.nan
                lists[0] = (ids, scores)
            return lists

        def tokens(self, shard, docs, max_rows, timeout_s=None, expect=""):
            return self.servers[shard].tokens(docs, max_rows, expect=expect)

        def keys(self, shard, docs, timeout_s=None, expect=""):
            return self.servers[shard].keys(docs, expect=expect)

    body = json.dumps({"query": TEXTS[0], "k": 3, "mode": "dense"}).encode()
    good = _sieve.Service(str(tmp_path / "set"), verifier="F1", remote=Remote(False), threads=1, workers=1)
    status, out, _, _ = good.handle("POST", "/v1/search", body)
    assert status == 200, out
    bad = _sieve.Service(str(tmp_path / "set"), verifier="F1", remote=Remote(True), threads=1, workers=1)
    status, out, _, _ = bad.handle("POST", "/v1/search", body)
    assert status == 503, out
    assert b"non-finite score" in out, out


def test_filters_and_metadata_go_through_the_librarys_one_parser():
    """sieve.Filter and sieve.check_metadata are the library's parser and check (docs/filters.md):
    the same answers as worked by hand, refusals naming their place, dicts or JSON alike."""
    docs = [{"year": 2019, "lang": "en", "tags": ["law", "eu"]}, {"year": 2021, "lang": "de"}, None]
    f = sieve.Filter({"$or": [{"year": {"$gte": 2020}}, {"tags": "law"}]})
    assert [f.matches(d) for d in docs] == [True, True, False]
    assert sieve.Filter('{"lang": {"$nin": ["en"]}}').matches(docs[2]) is True  # a missing field is not "en"
    assert sieve.Filter().empty and sieve.Filter({}).matches(None)
    assert f.fields == ["tags", "year"]
    assert sieve.Filter(f.to_dict()).to_dict() == f.to_dict()
    with pytest.raises(sieve.Error, match=r"filter\.year\.\$gt: a range compares"):
        sieve.Filter({"year": {"$gt": "soon"}})
    assert sieve.check_metadata('{"b": ["x"], "a": 1}') == {"a": 1, "b": ["x"]}
    with pytest.raises(sieve.Error, match=r"metadata\.a: a field is a string"):
        sieve.check_metadata({"a": {"nested": 1}})


def test_metadata_filters_upsert_and_delete_through_the_index(model, tmp_path):
    """Index.add with metadata, Index.search(filter=) (every hit passes; the exact filtered list
    in dense mode), Index.upsert replacing a document whole, Index.delete by ids and by filter
    (nothing deleted when an id is missing), all seen by a fresh open."""
    docs = [{"_id": f"m{i}", "text": TEXTS[i % len(TEXTS)] + f" number {i}",
             "metadata": {"year": 2015 + i, "lang": ["en", "de", "fr"][i % 3]}} for i in range(12)]
    ix = sieve.Index.build(DOCS[:4], tmp_path / "ix", model=model)
    ix.add(docs)
    assert ix.document("m4")["metadata"] == {"lang": "de", "year": 2019}
    assert "metadata" not in ix.document(DOCS[0]["_id"])
    want = {d["_id"] for d in docs if d["metadata"]["year"] >= 2020 and d["metadata"]["lang"] != "fr"}
    for mode in ("dense", "bm25", "hybrid"):
        hits = ix.search("the dog bit the man", k=20, mode=mode,
                         filter={"year": {"$gte": 2020}, "lang": {"$ne": "fr"}})
        assert {h["id"] for h in hits} <= want
    dense = ix.search("the dog bit the man", k=20, mode="dense", filter=sieve.Filter({"year": {"$gte": 2020}, "lang": {"$ne": "fr"}}))
    assert {h["id"] for h in dense} == want  # every passing document, k being larger
    rich = ix.search("the dog bit the man", k=20, mode="dense", filter={"year": {"$gte": 2020}, "lang": {"$ne": "fr"}},
                     with_text=True)
    assert [h["id"] for h in rich] == [h["id"] for h in dense] and "text" not in dense[0]
    for h in rich:
        stored = ix.document(h["id"])
        assert (h["title"], h["text"], h["metadata"]) == (stored["title"], stored["text"], stored["metadata"])
    with pytest.raises(sieve.Error, match=r"filter\.year\.\$gt"):
        ix.search("x", filter={"year": {"$gt": "soon"}})
    rep = ix.upsert([{"_id": "m1", "text": "okapi tapir", "metadata": {"lang": "nl"}}])
    assert rep["replaced"] == 1
    assert ix.document("m1") == {"_id": "m1", "title": "", "text": "okapi tapir", "metadata": {"lang": "nl"}}
    assert [h["id"] for h in ix.search("okapi", k=3, mode="bm25")] == ["m1"]
    with pytest.raises(sieve.Error, match="not in the index"):
        ix.delete(["m2", "nope"])
    assert ix.document("m2")["_id"] == "m2"
    assert ix.delete(["m2", "nope"], missing_ok=True) == {"deleted": 1, "missing": ["nope"], "documents": 15}
    assert ix.delete(filter={"lang": "fr"})["deleted"] == 3  # m5, m8, m11 (m2 is gone already)
    fresh = sieve.Index.open(tmp_path / "ix")
    for index in (ix, fresh):
        with pytest.raises(KeyError):
            index.document("m2")
        assert index.stats()["deleted"] == 5  # m1's first document, m2, m5, m8, m11
        assert len(index) == 4 + 12 - 4  # the live documents (the replaced m1 counted once)
        assert not any(h["id"] in ("m2", "m5") for h in index.search("the man bit the dog", k=20, mode="dense"))
        live = [d["_id"] for d in DOCS[:4]] + [f"m{i}" for i in (0, 3, 4, 6, 7, 9, 10)] + ["m1"]
        assert index.ids() == live  # in internal order: m1's upserted row is the last
        assert index.ids({"lang": "de"}) == ["m4", "m7", "m10"]
        # Search by vector: the index's dense search for the encoded query, same filter.
        flt = {"year": {"$gte": 2018}}
        q = sieve.Encoder.load(model).encode("the man bit the dog")
        by_vector = index.search_by_vector(q * 3.0, k=5, filter=flt, with_text=True)  # normalised first
        by_text = index.search("the man bit the dog", k=5, mode="dense", filter=flt)
        assert [h["id"] for h in by_vector] == [h["id"] for h in by_text]
        assert [h["score"] for h in by_vector] == pytest.approx([h["dense"] for h in by_text], abs=1e-5)
        assert all(h["text"] == index.document(h["id"])["text"] for h in by_vector)
        docs = [h["doc"] for h in by_vector]
        assert (index.keys(docs) == index.keys()[docs]).all()


def test_build_from_dicts_keeps_metadata_and_expiry(model, tmp_path):
    """Index.build from an iterable of dicts stores each one's metadata and expiry, as a corpus
    file's would be: a filter sees the metadata, and an expired document is never returned."""
    docs = [{"_id": f"b{i}", "text": TEXTS[i % len(TEXTS)] + f" item {i}", "metadata": {"shelf": i % 2}}
            for i in range(6)]
    docs[2]["expires_at"] = "1999-01-01T00:00:00Z"
    (tmp_path / "ix").mkdir()  # an empty folder is taken as absent
    ix = sieve.Index.build(docs, tmp_path / "ix", model=model)
    assert len(sieve.Index.build(docs[:2], tmp_path / "new" / "parent" / "ix", model=model)) == 2
    assert ix.document("b3")["metadata"] == {"shelf": 1}
    hits = ix.search("the dog", k=10, mode="dense", filter={"shelf": 0})
    assert {h["id"] for h in hits} == {"b0", "b4"}  # b2 has expired
    with pytest.raises(KeyError):
        ix.document("b2")
