"""A shard set served on Ray Serve (python/sieve/ray_serve.py) on a local Ray cluster of two nodes
(two raylets, the shard replicas on the second): every answer equals the one of the library's
service over one index of the same documents (search in every mode, with the gate and reranked,
embeddings, rerank, documents), stage 2 runs at the shards (only scores reach the router), and a
shard replica killed with SIGKILL under load is replaced,
after which no request fails. Run by ctest (python.ray_serve) with build/ray-venv's interpreter;
skipped when Ray Serve is not installed."""
import json
import re
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from oracles import oracle  # noqa: E402  (pytest.importorskip, but a failure under CI=true)

ray = oracle("ray")
serve = oracle("ray.serve")
from ray.cluster_utils import Cluster  # noqa: E402

import sieve  # noqa: E402, F401
from sieve import _sieve  # noqa: E402
import sieve.ray_serve as rs  # noqa: E402

CLI = os.environ.get("SIEVE_CLI", "build/sieve")
WORDS = ("the dog bit man red car left of house not blue cat sat on mat under tree big small river stone bird "
         "green door city light water").split()

# Requests whose answers must be equal, byte for byte once the timings are dropped.
BODIES = [
    ("/v1/search", {"query": "the dog bit the man", "mode": "dense", "k": 7}),
    ("/v1/search", {"queries": ["red car left of the house", "a cat under the tree"], "mode": "bm25", "k": 7}),
    ("/v1/search", {"query": "blue bird on the stone", "mode": "hybrid", "k": 7}),
    ("/v1/search", {"query": "the man bit the dog", "mode": "hybrid", "k": 5, "candidates": 20, "rerank": True}),
    ("/v1/search", {"query": "green door of the city", "mode": "dense", "k": 5, "candidates": 20, "gate": True,
                    "threshold": 0.2}),
    ("/v1/search", {"query": "water under the bridge", "k": 3, "with_text": True}),
    ("/v1/embeddings", {"input": ["the dog bit the man", "the man bit the dog"]}),
    ("/embed", {"inputs": "small river"}),
    ("/rerank", {"query": "the cat sat", "texts": ["a cat sat on the mat", "the dog ran"]}),
]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(*args):
    return subprocess.run([CLI, *args], capture_output=True, text=True, check=True).stdout


def http(url, path, body=None, timeout=60, method=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url + path, data=data, method=method or ("GET" if body is None else "POST"),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def comparable(raw):
    j = json.loads(raw)
    for r in j.get("results", []) if isinstance(j, dict) else []:
        r.pop("timings", None)
    return j


def world_corpus(d, shards):
    """A fixture model (fast: what is tested is the serving, not the model), 150 documents, one
    index of them (d/one) and a shard set of `shards` shards (d/set) in folder `d`: (corpus path,
    documents, model folder)."""
    model = str(d / "model")
    run("make-fixture", "--out", model, "--seed", "5")
    rng = random.Random(11)
    docs = [{"_id": f"d{i}", "title": " ".join(rng.choice(WORDS) for _ in range(2)) if i % 4 else "",
             "text": " ".join(rng.choice(WORDS) for _ in range(4 + rng.randrange(30)))} for i in range(150)]
    corpus = d / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(x) + "\n" for x in docs))
    run("index", "build", "--model", model, "--corpus", str(corpus), "--out", str(d / "one"), "--chunk", "16")
    run("index", "build", "--model", model, "--corpus", str(corpus), "--out", str(d / "set"), "--chunk", "16",
        "--shards", str(shards))
    return corpus, docs, model


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    d = tmp_path_factory.mktemp("rayserve")
    corpus, docs, model = world_corpus(d, 3)
    # Two raylets: the head (the router) and a node with the "shardhost" resource (the shards).
    # The GCS marks a raylet dead after health_check_failure_threshold missed checks (default 5 x
    # 3 s, timeout 10 s): on a loaded 2-core machine a raylet busy loading models missed them
    # during serve.run. Two minutes of misses are allowed here; a real node loss still shows.
    cluster = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 1, "include_dashboard": False,
        "_system_config": {"health_check_failure_threshold": 40, "health_check_period_ms": 3000,
                           "health_check_timeout_ms": 20000}})
    cluster.add_node(num_cpus=1, resources={"shardhost": 8})
    ray.init(address=cluster.address, log_to_driver=False, runtime_env={"env_vars": {
        "PYTHONPATH": os.environ.get("PYTHONPATH", "")}})
    port = free_port()
    url = rs.run(d / "set", port=port, replicas=2, verifier="F1", threads=1, shard_resources={"shardhost": 0.5})
    one = _sieve.Service(str(d / "one"), verifier="F1", threads=1, workers=1)
    yield {"dir": d, "url": url, "one": one, "docs": docs}
    serve.shutdown()
    ray.shutdown()
    cluster.shutdown()


def reference(world, path, body):
    status, out, _, _ = world["one"].handle("POST", path, json.dumps(body).encode(), {})
    return status, out


def test_answers_equal_one_index(world):
    for path, body in BODIES:
        status, got = http(world["url"], path, body)
        want_status, want = reference(world, path, body)
        assert status == want_status == 200, (path, body, got)
        assert comparable(got) == comparable(want), (path, body)
    # Documents' own texts as queries, whose best hits lie in every shard.
    body = {"queries": [x["text"] for x in world["docs"][::10]], "mode": "hybrid", "k": 10, "candidates": 30,
            "rerank": True}
    status, got = http(world["url"], "/v1/search", body)
    assert status == 200 and comparable(got) == comparable(reference(world, "/v1/search", body)[1])
    shards_hit = {int(h["id"][1:]) // 50 for r in json.loads(got)["results"] for h in r["hits"]}
    assert shards_hit == {0, 1, 2}  # 150 documents in shards of 48, 48, 54: ids d0-d149 across all three
    status, got = http(world["url"], "/v1/documents/d42")
    assert status == 200 and json.loads(got)["text"] == world["docs"][42]["text"]
    assert http(world["url"], "/health")[0] == 200
    # Errors are the service's own: the same status and JSON body.
    for path, body in [("/v1/search", {"query": "x", "k": 0}), ("/v1/search", {"query": "x", "mode": "sideways"}),
                       ("/rerank", {"query": "x"})]:
        status, got = http(world["url"], path, body)
        want_status, want = reference(world, path, body)
        assert status == want_status and status in (400, 422) and json.loads(got) == json.loads(want), (path, got)


def test_stage2_runs_at_the_shards(world):
    # Reranked with F1 (which the shard replicas hold): the router receives one float32 score per
    # candidate, never the candidates' token states (rows x dim floats each), and answers as one index.
    router = serve.get_deployment_handle(rs.ROUTER, app_name=rs.APP)
    before = router.bytes_received.remote().result(timeout_s=30)
    body = {"query": "the man bit the dog", "mode": "hybrid", "k": 5, "candidates": 20, "rerank": True}
    status, got = http(world["url"], "/v1/search", body)
    assert status == 200 and comparable(got) == comparable(reference(world, "/v1/search", body)[1])
    moved = router.bytes_received.remote().result(timeout_s=30) - before
    assert 0 < moved <= 20 * 4, moved


def same_write(world, method, path, body):
    """A write sent to the router at world["url"] and to the reference service world["one"]: both
    200, the router's answer (JSON)."""
    status, got = http(world["url"], path, body, method=method)
    want_status, want, _, _ = world["one"].handle(method, path, b"" if body is None else json.dumps(body).encode(), {})
    assert status == want_status == 200, (method, path, got)
    return json.loads(got)


def test_writes_through_the_router_are_seen_by_every_shard(world):
    """Adds, an upsert and deletes through the router go to the shards that own the ids (the
    library's set write on the set's folder); every search after a write's answer sees it on
    every shard (the replicas open the copy the router's snapshot names) and equals one index
    given the same writes."""
    def same(method, path, body):
        return same_write(world, method, path, body)

    def searches_equal(when):
        for _ in range(3):  # two replicas per shard: each is asked
            for path, body in BODIES[:6]:
                status, got = http(world["url"], path, body)
                assert status == 200 and comparable(got) == comparable(reference(world, path, body)[1]), (when, body)

    rng = random.Random(5)
    new = [{"_id": f"w{i}", "text": " ".join(rng.choice(WORDS) for _ in range(12)), "metadata": {"kind": "w"}}
           for i in range(12)]
    got = same("POST", "/v1/documents", {"documents": new})
    assert got["added"] == 12 and got["documents"] == 162
    searches_equal("after an add")
    # The new documents are found where they went (their own texts as dense queries).
    status, out = http(world["url"], "/v1/search", {"queries": [d["text"] for d in new], "mode": "dense", "k": 1})
    assert status == 200 and [r["hits"][0]["id"] for r in json.loads(out)["results"]] == [d["_id"] for d in new]
    same("PUT", "/v1/documents/d60", {"text": "the man bit the dog under the green tree"})
    same("DELETE", "/v1/documents/d100", None)
    assert same("POST", "/v1/documents/delete", {"filter": {"kind": "w"}})["deleted"] == 12
    searches_equal("after an upsert and deletes")
    status, out = http(world["url"], "/v1/search", {"query": "the man bit the dog under the green tree", "mode": "dense", "k": 1})
    assert status == 200 and json.loads(out)["results"][0]["hits"][0]["id"] == "d60"
    assert http(world["url"], "/v1/documents/d100")[0] == 404


def replicas_of(shard):
    """{replica info} of every replica now serving the shard's deployment (asked through Serve)."""
    h = serve.get_deployment_handle(rs.shard_deployment_name(shard), app_name=rs.APP)
    seen = {}
    for _ in range(40):
        info = h.info.remote().result(timeout_s=30)
        seen[info["pid"]] = info
        if len(seen) >= 2:
            break
    return seen


def test_shards_run_on_the_other_node(world):
    # The node with the "shardhost" resource (not the driver's: on one machine both raylets share
    # an address, and the driver may attach to either).
    hosts = [n["NodeID"] for n in ray.nodes() if n["Alive"] and "shardhost" in n["Resources"]]
    assert len(hosts) == 1 and len([n for n in ray.nodes() if n["Alive"]]) == 2
    for shard in range(3):
        for info in replicas_of(shard).values():
            assert info["node"] == hosts[0]


def test_a_killed_replica_is_replaced_and_no_request_after_fails(world):
    path, body = BODIES[3]
    _, want = reference(world, path, body)
    want = comparable(want)
    victim = next(iter(replicas_of(1)))
    router = serve.get_deployment_handle(rs.ROUTER, app_name=rs.APP)
    retried_before = router.retried.remote().result(timeout_s=30)
    results = []  # (time, ok)
    stop = threading.Event()

    def load():
        while not stop.is_set():
            status, got = http(world["url"], path, body)
            results.append((time.time(), status == 200 and comparable(got) == want))

    threads = [threading.Thread(target=load) for _ in range(4)]
    for t in threads:
        t.start()
    time.sleep(2)
    killed_at = time.time()
    os.kill(victim, signal.SIGKILL)
    # The restart window: until Serve runs two replicas of the shard again, the dead one replaced.
    deadline = time.time() + 120
    while time.time() < deadline:
        try:
            pids = set(replicas_of(1))
        except Exception:
            pids = set()
        if len(pids) == 2 and victim not in pids:
            break
        time.sleep(1)
    else:
        stop.set()
        pytest.fail("the killed replica was not replaced within 120 s")
    restarted_at = time.time()
    time.sleep(3)
    stop.set()
    for t in threads:
        t.join()
    before = [ok for t, ok in results if t < killed_at]
    window = [ok for t, ok in results if killed_at <= t <= restarted_at]
    after = [ok for t, ok in results if t > restarted_at]
    retried = router.retried.remote().result(timeout_s=30) - retried_before
    figures = {"replaced_after_s": round(restarted_at - killed_at, 1), "requests_before": len(before),
               "in_window": len(window), "failed_in_window": window.count(False), "after": len(after),
               "failed_after": after.count(False), "shard_calls_retried": retried}
    print(json.dumps(figures))  # pytest -s shows it
    assert before and all(before), figures
    # No request failed while Serve replaced the replica. Serve's handles route around a dead
    # replica themselves (measured: 88 requests in the window, none failed, no call of the router
    # retried), so the router's own retries of a replica that is gone are tested with scripted
    # failures in test_ray_units.py; their count is reported here.
    assert window and all(window), figures
    assert len(after) >= 4 and all(after), figures


def test_the_router_keeps_the_service_contract(world):
    """schemathesis against the router's own spec (GET /openapi.json), as tests/contract does
    against sieve serve: every operation, generated valid and invalid bodies and the spec's links,
    every check (no 5xx, responses match their schemas, errors are the documented JSON, undeclared
    methods 405). A small fixed budget: the full run is tests/contract's, on one server. Last in
    this file: its generated writes reach the set, after which it no longer equals the reference."""
    check_contract(world["url"], world["dir"] / "schemathesis", 20261205)


def check_contract(url, work, seed):
    """schemathesis against the router at `url`'s own spec (GET /openapi.json), as tests/contract
    does against sieve serve: every operation, generated valid and invalid bodies and the spec's
    links, every check, a small fixed budget; it must have tested every operation it loaded."""
    build = os.environ.get("SIEVE_BUILD_DIR") or os.path.dirname(os.path.abspath(CLI))
    st = os.path.join(build, "contract-venv", "bin", "schemathesis")
    if not os.path.exists(st):
        if os.environ.get("CI") == "true":
            pytest.fail(f"{st} is missing (scripts/setup.sh --oracles installs it)")
        pytest.skip(f"{st} is missing")
    work.mkdir(exist_ok=True)
    r = subprocess.run([st, "run", url + "/openapi.json", "--checks", "all", "--max-examples", "15",
                        "--seed", str(seed), "--phases", "examples,coverage,fuzzing,stateful", "--no-color"],
                       cwd=work, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-2000:]
    # It exercised every operation it loaded, and the router's spec has its routes (not an empty spec).
    loaded = re.search(r"Operations:\s*(\d+) selected / (\d+) total", r.stdout)
    tested = re.search(r"Tested:\s*(\d+)", r.stdout)
    assert loaded and tested and int(loaded.group(2)) >= 10, r.stdout[-3000:]
    assert int(tested.group(1)) == int(loaded.group(1)) == int(loaded.group(2)), r.stdout[-3000:]
