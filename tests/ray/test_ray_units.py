"""Which Ray sieve.ray attaches to (issue 45): without --address, RAY_ADDRESS when set, else a new
local Ray, never the cluster that /tmp/ray/ray_current_cluster names (Ray's own default for
ray.init() without an address), which a crashed run leaves naming a cluster that is gone. Checked
on the function and on the ray.init calls of `build` and `serve`, with ray.init replaced by a
recorder (no Ray starts). Run by ctest (python.ray) with build/ray-venv's interpreter."""
import os
import sys
import threading
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from oracles import oracle  # noqa: E402  (pytest.importorskip, but a failure under CI=true)

ray = oracle("ray")
oracle("ray.data")
oracle("ray.serve")
import sieve.ray as sray  # noqa: E402
import sieve.ray_serve as rs  # noqa: E402


def test_the_address_asked_for_then_ray_address_then_a_new_local_ray():
    assert sray.init_address("10.0.0.5:6379", {"RAY_ADDRESS": "10.0.0.9:6379"}) == "10.0.0.5:6379"
    assert sray.init_address(None, {"RAY_ADDRESS": "10.0.0.9:6379"}) == "10.0.0.9:6379"
    assert sray.init_address("", {}) == "local"
    assert sray.init_address(None, {"RAY_ADDRESS": ""}) == "local"


class Stop(Exception):
    pass


@pytest.fixture
def recorded(monkeypatch):
    calls = []

    def init(*args, **kwargs):
        calls.append(kwargs)
        raise Stop()
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", init)
    return calls


def test_build_and_serve_start_their_own_ray_without_an_address(recorded, tmp_path, monkeypatch):
    corpus = tmp_path / "c.jsonl"
    corpus.write_text('{"_id": "a", "text": "x"}\n')
    with pytest.raises(Stop):
        sray.build(str(corpus), str(tmp_path / "set"), 2)
    monkeypatch.setattr(rs, "_check_set", lambda index: index)
    with pytest.raises(Stop):
        rs.run(str(tmp_path / "set"))
    assert [c["address"] for c in recorded] == ["local", "local"]
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.9:6379")
    with pytest.raises(Stop):
        rs.run(str(tmp_path / "set"))
    assert recorded[-1]["address"] == "10.0.0.9:6379"


class FakeShard:
    """A shard deployment's handle whose calls fail as `script` says, then answer."""

    def __init__(self, script):
        self.script = list(script)
        self.calls = 0
        self.waits = []  # the timeout_s of each result() wait

    def __getattr__(self, method):
        outer = self

        class Call:
            def remote(self, *args):
                outer.calls += 1
                return self

            def result(self, timeout_s):
                outer.waits.append(timeout_s)
                step = outer.script.pop(0) if outer.script else "ok"
                if isinstance(step, BaseException):
                    raise step
                return (method, step)
        return Call()


def test_the_router_retries_a_replica_that_is_gone_and_nothing_else(monkeypatch):
    import ray.exceptions as rex
    monkeypatch.setattr(rs.time, "sleep", lambda s: None)
    # A dead replica: retried, and the next try answers.
    shard = FakeShard([rex.ActorDiedError()])
    remote = rs._RemoteShards([shard])
    assert remote.keys(0, [1, 2]) == ("keys", "ok")
    assert (shard.calls, remote.retried) == (2, 1)
    # Unavailable (Serve has no replica to route to yet) likewise, up to the attempts allowed.
    shard = FakeShard([rex.ActorUnavailableError("gone", b"x" * 16)] * 5)
    remote = rs._RemoteShards([shard], attempts=3)
    with pytest.raises(rex.ActorUnavailableError):
        remote.tokens(0, [1], 4)
    assert (shard.calls, remote.retried) == (3, 2)
    # A deterministic error and a timeout are not retried: they would fail or wait again.
    for error in (ValueError("the shard refused the call"), rex.GetTimeoutError("late"), TimeoutError("late")):
        shard = FakeShard([error])
        remote = rs._RemoteShards([shard])
        with pytest.raises(type(error)):
            remote.dense_lists(0, [0.1], 10, 0, 0)
        assert (shard.calls, remote.retried) == (1, 0), error


def test_a_shard_call_waits_no_longer_than_the_request_has_left(monkeypatch):
    import ray.exceptions as rex
    monkeypatch.setattr(rs.time, "sleep", lambda s: None)
    # No deadline: the router's own timeout. A deadline: the time it leaves, if shorter.
    shard = FakeShard([])
    remote = rs._RemoteShards([shard], timeout_s=30.0)
    remote.dense_lists(0, [0.1], 10, 0, 0)
    remote.dense_lists(0, [0.1], 10, 0, 0, timeout_s=0.5)
    remote.scores(0, "F1", [[0.1]], [1], [3], timeout_s=90.0)
    assert shard.waits[0] == 30.0 and 0.4 < shard.waits[1] <= 0.5 and shard.waits[2] == 30.0, shard.waits
    # A replica that is gone is not retried when the request's time would run out first.
    shard = FakeShard([rex.ActorDiedError(), "late"])
    remote = rs._RemoteShards([shard])
    with pytest.raises(rex.ActorDiedError):
        remote.dense_lists(0, [0.1], 10, 0, 0, timeout_s=0.1)
    assert (shard.calls, remote.retried) == (1, 0)


def test_the_build_key_follows_the_corpus_bytes_and_the_model_identity(tmp_path):
    import sieve
    corpus = tmp_path / "c.jsonl"
    corpus.write_text('{"_id": "a", "text": "the dog bit the man"}\n')
    model = sieve._sieve.resolve_model("")
    options = {"vectors": "auto"}
    key = sray.build_key(corpus, 1, 2, model, options)
    assert sray.build_key(str(corpus), 1, 2, model, options) == key
    # The same model reached by another path is the same model.
    link = tmp_path / "model-link"
    os.symlink(model, link)
    assert sray.build_key(corpus, 1, 2, str(link), options) == key
    # An edit that keeps the size, the document count and the modification time is still seen.
    st = os.stat(corpus)
    corpus.write_text('{"_id": "a", "text": "the man bit the dog"}\n')
    os.utime(corpus, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.stat(corpus).st_size == st.st_size and os.stat(corpus).st_mtime_ns == st.st_mtime_ns
    assert sray.build_key(corpus, 1, 2, model, options) != key
    assert sray.build_key(corpus, 1, 3, model, options) != sray.build_key(corpus, 1, 2, model, options)


class FakeRequest:
    """What the router reads of a starlette request."""

    def __init__(self, method, path, body=b"", headers=None, host="10.0.0.1"):
        from starlette.datastructures import Headers
        self.method = method
        self.url = type("URL", (), {"path": path})()
        self._body = body
        raw = dict(headers or {})
        if body and "content-length" not in {k.lower() for k in raw}:
            raw["Content-Length"] = str(len(body))
        self.headers = Headers(headers=raw)
        self.client = type("Client", (), {"host": host})()
        self.query_params = {}
        self.read = False

    async def body(self):
        self.read = True
        return self._body


def test_the_router_admits_as_sieve_serve_does(tmp_path):
    """Ray Serve's router runs the library's Admission before the service: keys and scopes, the
    open routes, a per-key rate with a held 429, the body cap before the body is read, and the
    trusted proxy header. BM25 searches need no shard call, so fake shard handles serve."""
    import asyncio
    import json
    import subprocess
    cli = os.environ.get("SIEVE_CLI", "build/sieve")
    model = str(tmp_path / "model")
    subprocess.run([cli, "make-fixture", "--out", model, "--seed", "5"], check=True, capture_output=True)
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps({"_id": f"d{i}", "text": f"the dog {i} bit the man"}) + "\n" for i in range(20)))
    subprocess.run([cli, "index", "build", "--model", model, "--corpus", str(corpus), "--out", str(tmp_path / "set"),
                    "--shards", "2"], check=True, capture_output=True)
    keys = tmp_path / "keys"
    keys.write_text("reader read rate=1 burst=1\nboss admin\n")
    router = rs.Router(str(tmp_path / "set"), [FakeShard([]), FakeShard([])], threads=1,
                       admission={"api_key_file": str(keys), "max_body": 200, "refusal_delay_ms": 50},
                       client_address_header="X-Forwarded-For")
    search = json.dumps({"query": "dog", "mode": "bm25", "k": 3}).encode()

    def call(req, via=None):
        r = asyncio.run((via or router)(req))
        return r.status_code, json.loads(r.body) if r.body else None, r.headers

    assert call(FakeRequest("GET", "/health"))[0] == 200  # open, no key
    status, body, headers = call(FakeRequest("POST", "/v1/search", search))
    assert status == 401 and body["error"]["type"] == "unauthorized" and headers["www-authenticate"] == "Bearer"
    status, body, _ = call(FakeRequest("POST", "/v1/documents", b'{"documents": []}',
                                       {"Authorization": "Bearer reader"}))
    assert status == 403 and "scope 'write'" in body["error"]["message"]
    status, body, _ = call(FakeRequest("GET", "/router/stats", headers={"Authorization": "Bearer reader"}))
    assert status == 403  # the router's counters are the admin's, as /metrics
    assert call(FakeRequest("GET", "/router/stats", headers={"Authorization": "Bearer boss"}))[0] == 200
    status, body, _ = call(FakeRequest("POST", "/v1/search", search, {"Authorization": "Bearer reader"}))
    assert status == 200 and len(body["results"][0]["hits"]) == 3
    status, body, headers = call(FakeRequest("POST", "/v1/search", search, {"Authorization": "Bearer reader"}))
    assert status == 429 and body["error"]["type"] == "rate_limited" and int(headers["retry-after"]) >= 1
    # A body over the cap: 413 before it is read.
    big = FakeRequest("POST", "/v1/search", b"x" * 500, {"Authorization": "Bearer boss"})
    status, body, _ = call(big)
    assert status == 413 and not big.read
    # Per-address limits read the trusted header's rightmost address, not the client's own words.
    open_router = rs.Router(str(tmp_path / "set"), [FakeShard([]), FakeShard([])], threads=1,
                            admission={"rate": 1, "burst": 1, "refusal_delay_ms": 0},
                            client_address_header="X-Forwarded-For")
    ask = lambda fwd: call(FakeRequest("POST", "/v1/search", search, {"X-Forwarded-For": fwd}), open_router)[0]  # noqa: E731
    assert ask("1.1.1.1, 10.9.9.9") == 200
    assert ask("2.2.2.2, 10.9.9.9") == 429  # the same proxy-written address: the same client
    assert ask("10.9.9.8") == 200
    # Settings that could never admit are refused before anything is deployed.
    with pytest.raises(_sieve_error()):
        rs.Router(str(tmp_path / "set"), [FakeShard([])], admission={"rate": 1, "burst": 0.5})


def _sieve_error():
    from sieve import _sieve
    return _sieve.Error


class LiveShard:
    """A shard deployment's handle over a real shard served in this process (rs.ShardReplica);
    while `down`, every call fails as Ray's do when the replica's node is gone (ActorDiedError)."""

    def __init__(self, replica):
        self.replica = replica
        self.down = False
        self.stuck = None  # a threading.Event: calls wait for it (their timeout_s at most), then time out
        self.calls = 0
        self.waits = []

    def __getattr__(self, method):
        outer = self

        class Call:
            def remote(self, *args):
                outer.calls += 1
                self.args = args
                return self

            def result(self, timeout_s):
                import ray.exceptions as rex
                outer.waits.append(timeout_s)
                if outer.down:
                    raise rex.ActorDiedError()
                if outer.stuck is not None and not outer.stuck.wait(timeout_s):
                    raise rex.GetTimeoutError("no answer in time")
                return getattr(outer.replica, method)(*self.args)
        return Call()


def test_the_router_survives_its_shards_node_gone_and_answers_again_when_it_is_back(tmp_path, monkeypatch):
    """Every shard's replica gone at once (their node marked dead): the router stays up, answers
    each search with a 503 naming the shard (after its retries), keeps answering what needs no
    shard (BM25, /health), and answers as the set opened whole again once the replicas are back. The handles
    are in-process stand-ins for Serve's (the same calls and failures); the two-raylet test kills a
    real replica under load."""
    import asyncio
    import json
    import subprocess
    monkeypatch.setattr(rs.time, "sleep", lambda s: None)
    cli = os.environ.get("SIEVE_CLI", "build/sieve")
    model = str(tmp_path / "model")
    subprocess.run([cli, "make-fixture", "--out", model, "--seed", "5"], check=True, capture_output=True)
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps({"_id": f"d{i}", "text": f"the dog {i} bit the man near river {i % 7}"}) + "\n"
                              for i in range(30)))
    subprocess.run([cli, "index", "build", "--model", model, "--corpus", str(corpus), "--out", str(tmp_path / "set"),
                    "--shards", "2"], check=True, capture_output=True)
    shards = [LiveShard(rs.ShardReplica(str(tmp_path / "set" / f"shard-00{i}"), 1, ["F1"])) for i in range(2)]
    router = rs.Router(str(tmp_path / "set"), shards, verifier="F1", threads=1)
    local = _sieve_service(str(tmp_path / "set"))  # the same set opened whole in this process
    body = {"query": "the dog bit the man", "mode": "hybrid", "k": 5, "candidates": 10, "rerank": True}

    def call(path, payload=None):
        r = asyncio.run(router(FakeRequest("POST" if payload else "GET", path,
                                           json.dumps(payload).encode() if payload else b"")))
        return r.status_code, r.body

    def strip(raw):
        j = json.loads(raw)
        for r in j.get("results", []):
            r.pop("timings", None)
        return j
    want = strip(local.handle("POST", "/v1/search", json.dumps(body).encode(), {})[1])
    status, got = call("/v1/search", body)
    assert status == 200 and strip(got) == want
    for s in shards:
        s.down = True
    for _ in range(3):
        status, got = call("/v1/search", body)
        assert status == 503 and json.loads(got)["error"]["type"] == "shard_unavailable", got
    assert router.retried() > 0  # a replica that is gone is tried again before the 503
    assert call("/health")[0] == 200
    status, got = call("/v1/search", dict(body, mode="bm25", rerank=False))
    assert status == 200  # BM25 needs no shard
    for s in shards:
        s.down = False
    status, got = call("/v1/search", body)
    assert status == 200 and strip(got) == want
    # Shards that do not answer: the request's deadline (timeout_ms) reaches every shard call, and
    # the answer is a 504 at the deadline, not a 503 after the router's own 30 s per call.
    stuck = threading.Event()
    for s in shards:
        s.stuck = stuck
        s.waits.clear()
    t0 = time.monotonic()
    status, got = call("/v1/search", dict(body, timeout_ms=300))
    elapsed = time.monotonic() - t0
    stuck.set()
    assert status == 504 and "deadline" in json.loads(got)["error"]["message"], got
    assert elapsed < 5, elapsed
    assert all(w is not None and w <= 0.3 for s in shards for w in s.waits), [s.waits for s in shards]


def _sieve_service(path):
    from sieve import _sieve
    return _sieve.Service(path, verifier="F1", threads=1, workers=1)
