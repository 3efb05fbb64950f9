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
            def remote(self, *args, expect=""):
                outer.calls += 1
                outer.expected = expect
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
    # Stage 2's token states and keys too (the library passes the request's time left).
    remote.tokens(0, [1], 4, timeout_s=0.5)
    remote.keys(0, [1], timeout_s=0.5)
    assert all(0.4 < w <= 0.5 for w in shard.waits[3:5]), shard.waits
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
    _two_shard_set(tmp_path)
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
            def remote(self, *args, expect=""):
                outer.calls += 1
                self.args = args
                self.expect = expect
                return self

            def result(self, timeout_s):
                import ray.exceptions as rex
                outer.waits.append(timeout_s)
                if outer.down:
                    raise rex.ActorDiedError()
                if outer.stuck is not None and not outer.stuck.wait(timeout_s):
                    raise rex.GetTimeoutError("no answer in time")
                return getattr(outer.replica, method)(*self.args, expect=self.expect)
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
    # the answer comes at the deadline, the query marked not searched (as sieve serve marks a query
    # the deadline reached before it ran), not a 503 after the router's own 30 s per call. First
    # the calls of the 503s above end: a request that failed on one shard left the other's call
    # and its retries running on their own thread (without a deadline: those requests had none).
    assert router.wait_idle(30)
    stuck = threading.Event()
    for s in shards:
        s.stuck = stuck
        s.waits.clear()
    t0 = time.monotonic()
    status, got = call("/v1/search", dict(body, timeout_ms=300))
    elapsed = time.monotonic() - t0
    stuck.set()
    got = json.loads(got)
    assert status == 200 and got["deadline_exceeded"] is True, got
    assert got["results"][0]["stages_run"] == 0 and got["results"][0]["hits"] == [], got
    assert elapsed < 5, elapsed
    assert all(w is not None and w <= 0.3 for s in shards for w in s.waits), [s.waits for s in shards]


def test_a_held_429_gives_its_hold_back_when_the_client_goes_away(tmp_path):
    """The router holds a 429 for a client that ignores Retry-After; a client that disconnects
    during the hold (Serve cancels the request's task) must not keep the hold forever: with one
    hold allowed per client, the next refusal is held again."""
    import asyncio
    import json
    router = rs.Router(_two_shard_set(tmp_path), [FakeShard([]), FakeShard([])], threads=1,
                       admission={"rate": 1, "burst": 1, "refusal_delay_ms": 60000, "refusals_held": 1})
    search = json.dumps({"query": "dog", "mode": "bm25", "k": 3}).encode()

    async def scenario():
        first = await router(FakeRequest("POST", "/v1/search", search))
        assert first.status_code == 200
        held = asyncio.ensure_future(router(FakeRequest("POST", "/v1/search", search)))
        await asyncio.sleep(0)  # the task runs to its hold (admission is synchronous before it)
        assert not held.done()
        held.cancel()
        with pytest.raises(asyncio.CancelledError):
            await held
    asyncio.run(scenario())
    refusal, hold, client, _ = router._admission.admit("POST", "/v1/search", "", "10.0.0.1")
    assert refusal is not None and refusal[0] == 429
    assert hold > 0  # the cancelled hold was given back: this refusal may be held too
    router._admission.end_hold(client)


def test_the_router_counts_the_deadline_from_the_request_arrival(tmp_path):
    """A request that waited for one of the router's threads longer than its timeout_ms is past
    its deadline when a thread takes it up: the answer says so (the query not searched, no shard
    asked), as sieve serve's does for a query the deadline reached first, instead of a full answer late."""
    import asyncio
    import json
    from concurrent.futures import ThreadPoolExecutor
    path = _two_shard_set(tmp_path)
    shards = [LiveShard(rs.ShardReplica(os.path.join(path, f"shard-00{i}"), 1, [])) for i in range(2)]
    router = rs.Router(path, shards, threads=1)
    router._pool = ThreadPoolExecutor(max_workers=1)  # one thread, kept busy below
    search = json.dumps({"query": "dog", "mode": "dense", "k": 3, "timeout_ms": 200}).encode()
    release = threading.Event()
    busy = router._pool.submit(release.wait)

    async def scenario():
        waiting = asyncio.ensure_future(router(FakeRequest("POST", "/v1/search", search)))
        await asyncio.sleep(0.6)  # the request waits 0.6 s for the busy thread: longer than its 200 ms
        release.set()
        return await waiting
    r = asyncio.run(scenario())
    busy.result()
    got = json.loads(r.body)
    assert r.status_code == 200 and got["deadline_exceeded"] is True and got["results"][0]["stages_run"] == 0, got
    assert sum(s.calls for s in shards) == 0  # no shard was asked: the deadline had passed
    # A request that waits for nothing is answered in full (a deadline a loaded machine keeps).
    search = json.dumps({"query": "dog", "mode": "dense", "k": 3, "timeout_ms": 20000}).encode()
    r = asyncio.run(router(FakeRequest("POST", "/v1/search", search)))
    assert r.status_code == 200 and len(json.loads(r.body)["results"][0]["hits"]) == 3, r.body


def test_a_replica_serving_another_copy_of_its_shard_is_refused_never_used(tmp_path):
    """Every shard call carries the shard's identity as the router's set records it (its
    manifest's digest): a replica that serves another copy (restarted on a rebuilt folder, or
    pointed at another set's shard) refuses every call, a 503 naming the shard, never an answer
    whose ids name other documents; and a replica does not start on a shard its own set does not
    record (the folder rebuilt under the set)."""
    import asyncio
    import json
    import shutil
    a = _two_shard_set(tmp_path / "a")
    b = _two_shard_set(tmp_path / "b", text="a cat {i} saw the bird near the river")
    shards = [LiveShard(rs.ShardReplica(os.path.join(a, f"shard-00{i}"), 1, [])) for i in range(2)]
    router = rs.Router(a, shards, threads=1)
    search = {"query": "the dog bit the man", "mode": "dense", "k": 3}

    def call():
        r = asyncio.run(router(FakeRequest("POST", "/v1/search", json.dumps(search).encode())))
        return r.status_code, json.loads(r.body)
    status, got = call()
    assert status == 200 and len(got["results"][0]["hits"]) == 3
    shards[1].replica = rs.ShardReplica(os.path.join(b, "shard-001"), 1, [])  # set b records it: it starts
    status, got = call()
    assert status == 503 and got["error"]["type"] == "shard_unavailable", got
    assert "shard 1" in got["error"]["message"] and "another copy of the shard" in got["error"]["message"], got
    shutil.rmtree(os.path.join(a, "shard-001"))
    shutil.copytree(os.path.join(b, "shard-001"), os.path.join(a, "shard-001"))
    with pytest.raises(_sieve_error(), match="not the copy its set"):
        rs.ShardReplica(os.path.join(a, "shard-001"), 1, [])


def _two_shard_set(tmp_path, text="the dog {i} bit the man"):
    """A two-shard set of 30 short documents (`text` with {i}) built by the CLI on a fixture model."""
    import json
    import subprocess
    cli = os.environ.get("SIEVE_CLI", "build/sieve")
    os.makedirs(tmp_path, exist_ok=True)
    model = str(tmp_path / "model")
    subprocess.run([cli, "make-fixture", "--out", model, "--seed", "5"], check=True, capture_output=True)
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps({"_id": f"d{i}", "text": text.format(i=i)}) + "\n" for i in range(30)))
    subprocess.run([cli, "index", "build", "--model", model, "--corpus", str(corpus), "--out", str(tmp_path / "set"),
                    "--shards", "2"], check=True, capture_output=True)
    return str(tmp_path / "set")


def _sieve_service(path):
    from sieve import _sieve
    return _sieve.Service(path, verifier="F1", threads=1, workers=1)
