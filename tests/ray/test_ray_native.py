"""The native shard path on Ray (python/sieve/ray_native.py) on a local Ray cluster of two nodes (two
raylets; the shard servers on the second): `sieve shard serve` replicas placed by Ray, one `sieve
serve` router over them. Every answer equals the library's service over one index of the same
documents; the failure drills: a shard replica killed under load (no wrong answer, no failed
request: the router's call goes to the other replica; the set whole again once Ray has started a
replacement), the router killed (started again on its port: the same URL answers), a node that
joins after start-up (replicas waiting for its resources start there and join the membership);
writes through the router reach every shard.
Every wait is on the deployment's own events, never a fixed sleep. Run by ctest (python.ray_native)
with build/ray-venv's interpreter; skipped when Ray is not installed (a failure under CI=true)."""
import json
import os
import signal
import sys
import threading

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from oracles import oracle  # noqa: E402

ray = oracle("ray")
from ray.cluster_utils import Cluster  # noqa: E402

import sieve  # noqa: E402, F401
from sieve import _sieve  # noqa: E402
import sieve.ray_native as rn  # noqa: E402
from test_ray_serve import BODIES, CLI, check_contract, comparable, free_port, http, same_write, world_corpus  # noqa: E402

HEALTH = {"health_check_failure_threshold": 40, "health_check_period_ms": 3000, "health_check_timeout_ms": 20000}


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    d = tmp_path_factory.mktemp("raynative")
    corpus, docs, model = world_corpus(d, 3)
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False,
                                                             "resources": {"routerhost": 1},
                                                             "_system_config": HEALTH})
    cluster.add_node(num_cpus=1, resources={"shardhost": 8})
    ray.init(address=cluster.address, log_to_driver=False, runtime_env={"env_vars": {
        "PYTHONPATH": os.environ.get("PYTHONPATH", "")}})
    dep = rn.Deployment(d / "set", replicas=2, port=free_port(), host="127.0.0.1", sieve=os.path.abspath(CLI),
                        shard_args=["--verifier", "F1", "--threads", "2"],
                        router_args=["--verifier", "F1", "--threads", "1", "--connections", "8"],
                        shard_resources={"shardhost": 0.5}, router_resources={"routerhost": 0.5})
    one = _sieve.Service(str(d / "one"), verifier="F1", threads=1, workers=1)
    yield {"dir": d, "dep": dep, "url": dep.url, "one": one, "docs": docs, "cluster": cluster}
    dep.close()
    ray.shutdown()
    cluster.shutdown()


def reference(world, path, body):
    status, out, _, _ = world["one"].handle("POST", path, json.dumps(body).encode(), {})
    return status, out


def answers_equal(world, rounds=2):
    for _ in range(rounds):  # two replicas a shard: the router asks each in turn
        for path, body in BODIES:
            status, got = http(world["url"], path, body)
            want_status, want = reference(world, path, body)
            assert status == want_status == 200, (path, body, got)
            assert comparable(got) == comparable(want), (path, body)


def router_view(world):
    status, raw = http(world["url"], "/v1/info")
    assert status == 200, raw
    return json.loads(raw)["shard_servers"]


def test_answers_equal_one_index(world):
    answers_equal(world)
    body = {"queries": [x["text"] for x in world["docs"][::10]], "mode": "hybrid", "k": 10, "candidates": 30,
            "rerank": True}
    status, got = http(world["url"], "/v1/search", body)
    assert status == 200 and comparable(got) == comparable(reference(world, "/v1/search", body)[1])
    assert {int(h["id"][1:]) // 50 for r in json.loads(got)["results"] for h in r["hits"]} == {0, 1, 2}
    # The router's view is the deployment's membership: 3 shards x 2 replicas, every one answering.
    dep = world["dep"]
    view = router_view(world)
    assert [[r["url"] for r in s] for s in view["shards"]] == dep.membership()
    assert all(len(s) == 2 and all(not r["down"] and r["calls"] > 0 for r in s) for s in view["shards"]), view


def test_the_shard_servers_run_on_the_node_ray_placed_them(world):
    nodes = {n["NodeID"]: n for n in ray.nodes() if n["Alive"]}
    host = [i for i, n in nodes.items() if "shardhost" in n["Resources"]]
    assert len(host) == 1 and len(nodes) == 2
    shards, router = world["dep"].placement()
    assert [len(x) for x in shards.values()] == [2, 2, 2]
    assert {n for x in shards.values() for n in x.values()} == set(host)
    assert router != host[0] and "routerhost" in nodes[router]["Resources"]


def run_load(world, bodies, stop, results, after, threads=2):
    """Threads sending `bodies` in turn until `stop`; each answer is recorded (phase, ok); a
    thread ends once `after` answers were recorded in phase "after"."""
    wants = [comparable(reference(world, p, b)[1]) for p, b in bodies]
    phase = {"now": "before"}
    warm = threading.Event()  # set once 6 answers came

    def load():
        i = 0
        while not stop.is_set():
            path, body = bodies[i % len(bodies)]
            status, got = http(world["url"], path, body)
            ok = status == 200 and comparable(got) == wants[i % len(bodies)]
            results.append((phase["now"], ok, status if not ok else 200))
            if len(results) >= 6:
                warm.set()
            i += 1
            if sum(1 for p, _, _ in results if p == "after") >= after:
                return

    ts = [threading.Thread(target=load) for _ in range(threads)]
    for t in ts:
        t.start()
    return phase, warm, ts


def test_a_shard_replica_killed_under_load_gives_no_wrong_answer_and_is_replaced(world):
    dep = world["dep"]
    pids = dep.shard_pids(1)
    victim_url, victim = sorted(pids.items())[0]
    bodies = [BODIES[0], BODIES[3], BODIES[2]]  # dense, hybrid + rerank, hybrid
    stop, results = threading.Event(), []
    seen = len(dep.events)
    phase, warm, threads = run_load(world, bodies, stop, results, after=12)
    try:
        # Some answers first, then the kill; the load goes on through the replacement.
        assert warm.wait(120)
        phase["now"] = "window"
        os.kill(victim, signal.SIGKILL)
        replaced = dep.wait_until(lambda d: any(e[0] == "ended" and e[2] == victim_url for e in d.events[seen:])
                                  and d.whole(), 240)
        assert replaced, dep.events[seen:]
        phase["now"] = "after"
        for t in threads:
            t.join(timeout=300)
    finally:
        stop.set()
    figures = {p: [len([r for r in results if r[0] == p]), [r[2] for r in results if r[0] == p and not r[1]]]
               for p in ("before", "window", "after")}
    print(json.dumps({"events": dep.events[seen:], "answers_and_failures": figures}))
    # Not one wrong answer or failed request: the router tried the shard's other replica.
    assert all(ok for _, ok, _ in results), figures
    assert figures["window"][0] > 0 and figures["after"][0] >= 12, figures
    members = dep.membership()[1]
    assert victim_url not in members and len(members) == 2
    view = router_view(world)
    assert [r["url"] for r in view["shards"][1]] == members
    answers_equal(world, rounds=1)


def test_the_router_killed_is_started_again_at_the_same_url(world):
    dep = world["dep"]
    seen = len(dep.events)
    os.kill(dep.router_pid(), signal.SIGKILL)
    assert dep.wait_until(lambda d: any(e[0] == "router" for e in d.events[seen:]), 600), dep.events[seen:]
    assert dep.url == world["url"]
    answers_equal(world, rounds=1)
    assert [[r["url"] for r in s] for s in router_view(world)["shards"]] == dep.membership()


def test_a_node_that_joins_later_takes_the_replicas_waiting_for_it(world):
    dep = world["dep"]
    seen = len(dep.events)
    dep.add_replicas(1, resources={"latehost": 1})  # no node has it yet: the replicas wait
    assert not dep.whole()
    assert all(len(m) == 2 for m in dep.membership())
    world["cluster"].add_node(num_cpus=1, resources={"latehost": 8})
    assert dep.wait_until(lambda d: d.whole(), 600), dep.events[seen:]
    assert all(len(m) == 3 for m in dep.membership())
    view = router_view(world)
    assert [[r["url"] for r in s] for s in view["shards"]] == dep.membership()
    answers_equal(world, rounds=1)
    latehost = [n["NodeID"] for n in ray.nodes() if n["Alive"] and "latehost" in n["Resources"]]
    shards, _ = dep.placement()
    assert [sorted(x.values()).count(latehost[0]) for x in shards.values()] == [1, 1, 1], shards


def test_writes_through_the_router_reach_every_shard(world):
    """Adds, an upsert and deletes through the native router (the library's set writes on the
    set's folder); each shard server opens the copy the router's snapshot names at its next call,
    so every search after a write's answer (BM25 with the new statistics too) equals one index
    given the same writes."""
    def same(method, path, body):
        return same_write(world, method, path, body)

    new = [{"_id": f"w{i}", "text": f"the red stone bird {i} sat under the green water tree", "metadata": {"kind": "w"}}
           for i in range(9)]
    assert same("POST", "/v1/documents", {"documents": new})["added"] == 9
    answers_equal(world, rounds=1)
    same("PUT", "/v1/documents/d61", {"text": "the man bit the dog under the green tree"})
    same("DELETE", "/v1/documents/d101", None)
    assert same("POST", "/v1/documents/delete", {"filter": {"kind": "w"}})["deleted"] == 9
    answers_equal(world, rounds=1)
    status, out = http(world["url"], "/v1/search", {"query": "the man bit the dog under the green tree", "mode": "bm25",
                                                    "k": 1})
    assert status == 200 and json.loads(out)["results"][0]["hits"][0]["id"] == "d61"


def test_the_router_keeps_the_service_contract(world):
    """schemathesis against the native router's spec, as against the Ray Serve router
    (test_ray_serve.py): every operation, every check, a small fixed budget. Last: its generated
    writes reach the set."""
    check_contract(world["url"], world["dir"] / "schemathesis", 20261207)
