"""sieve.Cache (issue 60): the Python face of the library's semantic cache. The fixture model with
the F1 verifier at thresholds set here (the cache's logic; the real gate is tested in C++ and in
the real-model test below); run with PYTHONPATH=build/python and SIEVE_CLI=build/sieve."""
import os
import subprocess

import pytest

import sieve

CLI = os.environ.get("SIEVE_CLI", "build/sieve")


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    d = str(tmp_path_factory.mktemp("cachemodel") / "m")
    subprocess.run([CLI, "make-fixture", "--out", d, "--seed", "7"], check=True, capture_output=True)
    return d


def test_store_lookup_scope_and_invalidate(model, tmp_path):
    c = sieve.Cache(tmp_path / "c", model=model, verifier="F1", threshold=0.99)
    assert c.lookup("the dog bit the man") is None and len(c) == 0  # empty: a miss
    id_ = c.store("the dog bit the man", "answer one", scope={"tenant": "a"})
    hit = c.lookup("the dog bit the man", scope={"tenant": "a"})
    assert hit["answer"] == "answer one" and hit["id"] == id_ and hit["prompt"] == "the dog bit the man"
    assert hit["score"] >= hit["threshold"] == 0.99 and hit["stage1_score"] > 0.999
    assert c.lookup("the dog bit the man", scope={"tenant": "b"}) is None  # another scope
    assert c.lookup("the dog bit the man") is None
    miss = c.check("the man bit the dog", scope={"tenant": "a"})
    assert not miss["hit"] and miss["answer"] is None and miss["score"] < 0.99 and miss["candidates"] == 1
    assert c.dead == 0
    assert c.store("the dog bit the man", "answer two", scope={"tenant": "a"}) == id_  # replaced
    assert c.get(id_)["answer"] == "answer two" and c.get(id_)["scope"] == {"tenant": "a"}
    assert c.dead == 1 and len(c) == 1  # the first answer stays on disk until compact()
    c.store("a red car", "x", scope={"tenant": "b"})
    assert c.invalidate(scope={"tenant": "a"}) == 1 and c.get(id_) is None
    assert c.invalidate(ids=["nope"]) == 0 and len(c) == 1
    assert c.clear() == 1 and len(c) == 0
    report = c.compact()  # the invalidated and replaced entries leave the disk
    assert report["documents"] == 0 and report["removed"] == report["documents_before"] >= 3
    assert c.dead == 0


def test_bad_input_names_the_field_and_stores_nothing(model, tmp_path):
    c = sieve.Cache(tmp_path / "c", model=model, verifier="F1", threshold=0.5)
    c.store("q", "a", ttl_s=60)
    assert c.get(sieve._sieve.cache_entry_id("q", {}))["expires_at"] is not None
    for call, words in [(lambda: c.store("", "a"), "prompt: empty"),
                        (lambda: c.store("q", "a" * 8193), "answer: 8193 characters"),
                        (lambda: c.store("q", "a", scope={"colour": "red"}), "scope.colour"),
                        (lambda: c.store("q", "a", ttl_s=-1), "ttl_s"),
                        (lambda: c.lookup("q", scope={"colour": "red"}), "scope.colour")]:
        with pytest.raises(sieve.Error, match=words):
            call()
    with pytest.raises(TypeError, match="ttl_s"):
        c.store("q", "a", ttl_s="soon")
    with pytest.raises(TypeError, match="answer"):
        c.store("q", {"not": "a string"})
    with pytest.raises(ValueError, match="not both"):
        c.invalidate()
    assert len(c) == 1
    with pytest.raises(sieve.Error, match="threshold"):
        sieve.Cache(tmp_path / "cos", model=model, verifier="cosine")


def test_the_real_gate_refuses_the_negated_question(tmp_path):
    if not sieve.default_model_dir() or "MiniLM" not in sieve.default_model_dir():
        if os.environ.get("CI") == "true":
            pytest.fail("all-MiniLM-L6-v2 is not installed (scripts/setup.sh installs it)")
        pytest.skip("all-MiniLM-L6-v2 is not installed")
    c = sieve.Cache(tmp_path / "c")
    c.store("does aspirin reduce fever?", "Yes: aspirin lowers a fever.", scope={"model": "gpt-x"})
    assert c.lookup("does aspirin not reduce fever?", scope={"model": "gpt-x"}) is None
    assert c.lookup("does aspirin lower a fever?", scope={"model": "gpt-x"})["answer"] == "Yes: aspirin lowers a fever."


def test_over_http_it_answers_as_the_local_cache(model, tmp_path):
    """sieve.Cache("http://...") over `sieve serve --cache`: the same hits, misses, errors and removals."""
    import re
    import time
    log = open(tmp_path / "serve.log", "w+")
    server = subprocess.Popen([CLI, "serve", "--model", model, "--cache", str(tmp_path / "c"), "--cache-verifier", "F1",
                               "--cache-threshold", "0.99", "--compact-dead-share", "0.5", "--compact-min-dead", "3", "--port", "0"],
                              stderr=log, stdout=subprocess.DEVNULL)
    try:
        port = None
        for _ in range(600):  # the server announces its port on its log when it is ready
            log.seek(0)
            text = log.read()
            m = re.search(r"127\.0\.0\.1:(\d+)", text)
            if m and "ready" in text:
                port = m.group(1)
                break
            assert server.poll() is None, open(tmp_path / "serve.log").read()
            time.sleep(0.1)
        assert port, open(tmp_path / "serve.log").read()
        c = sieve.Cache(f"http://127.0.0.1:{port}")
        assert c.lookup("the dog bit the man") is None
        id_ = c.store("the dog bit the man", "A", scope={"tenant": "t"}, ttl_s=600)
        assert id_ == sieve._sieve.cache_entry_id("the dog bit the man", {"tenant": "t"})
        hit = c.lookup("the dog bit the man", scope={"tenant": "t"})
        assert hit["answer"] == "A" and hit["threshold"] == 0.99
        assert c.lookup("the dog bit the man", scope={"tenant": "u"}) is None
        assert c.lookup("the man bit the dog", scope={"tenant": "t"}) is None
        assert c.get(id_)["scope"] == {"tenant": "t"} and c.get(id_)["expires_at"] is not None
        with pytest.raises(sieve.Error, match="scope.colour"):
            c.store("p", "a", scope={"colour": "red"})
        assert c.invalidate(scope={"tenant": "t"}) == 1 and c.get(id_) is None
        assert len(c) == 0 and c.dead == 1 and c.threshold == 0.99  # /v1/info's cache
        # Past --compact-dead-share (0.5) and --compact-min-dead (3) the server compacts on its own:
        # after the third store, two answers replaced and one entry removed: three dead, one live.
        for answer in ("B1", "B2"):
            c.store("is the sky blue?", answer)
        assert c.dead == 3 - 1 and c._impl._info()["compactions"] == 0  # not yet: 2 < --compact-min-dead
        c.store("is the sky blue?", "B3")
        info = None
        for _ in range(600):  # the server's own report of the compaction, not a time guess
            info = c._impl._info()
            if info["compactions"] >= 1 and not info["compacting"]:
                break
            time.sleep(0.1)
        assert info["compactions"] == 1, info
        assert len(c) == 1 and c.dead == 0
        assert c.lookup("is the sky blue?")["answer"] == "B3"
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()


def test_the_command_line(model, tmp_path):
    import json

    def cli(*args, code=0):
        r = subprocess.run([CLI, "cache", *args, "--cache", str(tmp_path / "c"), "--model", model, "--verifier", "F1",
                            "--threshold", "0.99"], capture_output=True, text=True)
        assert r.returncode == code, r.stderr
        return json.loads(r.stdout) if code == 0 else r.stderr

    id_ = cli("store", "the dog bit the man", "A", "--scope", '{"tenant": "t"}', "--ttl-s", "600")["id"]
    hit = cli("lookup", "the dog bit the man", "--scope", '{"tenant": "t"}')
    assert hit["hit"] and hit["answer"] == "A" and hit["id"] == id_
    assert not cli("lookup", "the man bit the dog", "--scope", '{"tenant": "t"}')["hit"]
    assert not cli("lookup", "the dog bit the man")["hit"]
    assert cli("get", id_)["scope"] == {"tenant": "t"}
    assert cli("info")["entries"] == 1
    assert "scope" in cli("lookup", "x", "--scope", "[1]", code=2)
    assert "scope.colour" in cli("store", "x", "y", "--scope", '{"colour": "red"}', code=1)
    assert "one of them" in cli("invalidate", code=2)
    assert cli("invalidate", "--all")["deleted"] == 1 and cli("info")["entries"] == 0
    assert cli("compact")["removed"] == 1
