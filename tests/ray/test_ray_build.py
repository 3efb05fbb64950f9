"""Shard sets built on a local Ray cluster (python/sieve/ray.py) against the same set built by
`sieve index build --shards N` in one process and against one index over the whole corpus: the
same documents and the same hits with the same scores in every mode. A worker killed with SIGKILL
in the middle is retried by Ray and the set still equals the reference. Run by ctest (python.ray)
with build/ray-venv's interpreter; skipped when Ray is not installed."""
import json
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from oracles import oracle  # noqa: E402  (pytest.importorskip, but a failure under CI=true)

ray = oracle("ray")
oracle("ray.data")
import sieve  # noqa: E402
import sieve.ray as sray  # noqa: E402

CLI = os.environ.get("SIEVE_CLI", "build/sieve")
WORDS = ("the dog bit man red car left of house not blue cat sat on mat under tree big small river stone bird "
         "green door city light water").split()


def run(*args):
    return subprocess.run([CLI, *args], capture_output=True, text=True, check=True).stdout


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    d = tmp_path_factory.mktemp("ray")
    model = str(d / "model")
    run("make-fixture", "--out", model, "--seed", "3")
    import random
    rng = random.Random(7)
    docs = [{"_id": f"d{i}", "title": " ".join(rng.choice(WORDS) for _ in range(2)) if i % 3 else "",
             "text": " ".join(rng.choice(WORDS) for _ in range(4 + rng.randrange(30)))} for i in range(200)]
    corpus = d / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(x) + "\n" for x in docs))
    run("index", "build", "--model", model, "--corpus", str(corpus), "--out", str(d / "one"), "--chunk", "16")
    run("index", "build", "--model", model, "--corpus", str(corpus), "--out", str(d / "local"), "--chunk", "16",
        "--shards", "3")
    queries = [" ".join(rng.choice(WORDS) for _ in range(5)) for _ in range(25)] + [x["text"][:60] for x in docs[::40]]
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, runtime_env={"env_vars": {
        "PYTHONPATH": os.environ.get("PYTHONPATH", ""), sray._KILL_ENV: os.environ.get(sray._KILL_ENV, "")}})
    yield {"dir": d, "model": model, "corpus": corpus, "docs": docs, "queries": queries}
    ray.shutdown()


def same_results(a, b, queries):
    """Every mode: ids, scores and the dense / BM25 parts, to the bit."""
    x, y = sieve.Index.open(a), sieve.Index.open(b)
    assert len(x) == len(y)
    for i in range(len(x)):
        assert x.document_id(i) == y.document_id(i)
        assert x.document(x.document_id(i)) == y.document(y.document_id(i))
    assert (x.keys() == y.keys()).all()
    for mode in ("dense", "bm25", "hybrid"):
        assert x.search(queries, k=10, mode=mode) == y.search(queries, k=10, mode=mode), mode


def test_ray_build_equals_one_process_and_one_index(world):
    out = world["dir"] / "ray3"
    rep = sray.build(world["corpus"], out, 3, world["model"], chunk_docs=16)
    assert rep["documents"] == 200 and rep["shards"] == 3
    assert rep["bounds"] == [0, 64, 128, 200]  # 13 chunks of 16: 4 + 4 + 5
    assert sieve.Index.open(out).stats()["shards"] == 3
    assert not os.path.exists(str(out) + ".partial")
    same_results(world["dir"] / "local", out, world["queries"])
    same_results(world["dir"] / "one", out, world["queries"])


def test_parquet_and_tsv_corpora_give_the_same_set(world):
    import pyarrow as pa
    import pyarrow.parquet as pq
    docs = world["docs"]
    pq.write_table(pa.table({"_id": [x["_id"] for x in docs], "title": [x["title"] for x in docs],
                             "text": [x["text"] for x in docs]}), str(world["dir"] / "c.parquet"))
    (world["dir"] / "c.tsv").write_text("".join(f"{x['_id']}\t{x['text']}\t{x['title']}\n" for x in docs))
    for name in ("c.parquet", "c.tsv"):
        out = world["dir"] / ("from-" + name)
        sray.build(world["dir"] / name, out, 2, world["model"], chunk_docs=16)
        same_results(world["dir"] / "one", out, world["queries"])


@pytest.mark.parametrize("point", ["start", "built"])
def test_a_worker_killed_during_the_build_is_retried(world, point, monkeypatch):
    # The worker of shard 1 kills itself with SIGKILL once (before its build, or after it and
    # before returning); Ray retries the task and the set equals the reference.
    out = world["dir"] / ("killed-" + point)
    ray.shutdown()  # a fresh local cluster whose workers see the fault's variable
    monkeypatch.setenv(sray._KILL_ENV, "1:" + point)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, runtime_env={"env_vars": {
        "PYTHONPATH": os.environ.get("PYTHONPATH", ""), sray._KILL_ENV: "1:" + point}})
    seen = []
    real_remove = os.remove
    monkeypatch.setattr(sray.os, "remove", lambda p: (seen.append(os.path.basename(p)), real_remove(p)))
    rep = sray.build(world["corpus"], out, 3, world["model"], chunk_docs=16)
    assert ".killed-shard-001" in seen  # the kill happened (the worker left its marker first)
    assert rep["documents"] == 200
    same_results(world["dir"] / "local", out, world["queries"])


def test_bad_input_leaves_nothing(world):
    dup = world["dir"] / "dup.jsonl"
    dup.write_text(json.dumps({"_id": "a", "text": "x"}) + "\n" + json.dumps({"_id": "a", "text": "y"}) + "\n")
    with pytest.raises(ValueError, match="more than once"):
        sray.build(dup, world["dir"] / "dup-set", 2, world["model"])
    assert not os.path.exists(world["dir"] / "dup-set")
    # Metadata is refused by name, never dropped (the local build keeps it).
    meta = world["dir"] / "meta.jsonl"
    meta.write_text("".join(json.dumps({"_id": f"m{i}", "text": "x y", "metadata": {"year": 2020 + i}}) + "\n"
                            for i in range(4)))
    with pytest.raises(ValueError, match="metadata"):
        sray.build(meta, world["dir"] / "meta-set", 2, world["model"])
    assert not os.path.exists(world["dir"] / "meta-set")
    with pytest.raises(FileExistsError):
        sray.build(world["corpus"], world["dir"] / "one", 2, world["model"])
    assert not sieve._sieve.is_shard_set(str(world["dir"] / "one"))


def test_command_line(world):
    r = subprocess.run([sys.executable, "-m", "sieve.ray", "build", "--help"], capture_output=True, text=True)
    assert r.returncode == 0 and "--shards" in r.stdout
    r = subprocess.run([sys.executable, "-m", "sieve.ray", "build", "--corpus", str(world["corpus"]), "--shards", "0",
                        "--out", str(world["dir"] / "bad"), "--model", world["model"]], capture_output=True, text=True)
    assert r.returncode == 1 and "shards must be at least 1" in r.stderr
