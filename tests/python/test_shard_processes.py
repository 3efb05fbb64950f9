"""Several machines simulated on one (issue 61, item 3): three `sieve shard serve` processes pinned
with taskset to cores of their own (the cores after the router's, shared when the machine has too
few), and a `sieve serve` router pinned to the first core that holds only the set's manifest
(shardset.json alone in its folder, as on another machine than its shards). Each process runs
only where it was pinned (its affinity, read back), and the router answers every search, a
document by id and a missing one exactly as one `sieve serve` over one index of the same
documents. Run by ctest (python.pytest) with SIEVE_CLI=build/sieve. Throughput as the shard
processes grow is bench/bench_shard_scaling.sh's (docs/scale.md)."""
import json
import os
import random
import re
import shutil
import subprocess
import threading
import urllib.error
import urllib.request

import pytest

CLI = os.environ.get("SIEVE_CLI", "build/sieve")
WORDS = "the dog bit man red car left of house not blue cat sat on mat under tree big river stone bird".split()


def run(*args):
    return subprocess.run([CLI, *args], capture_output=True, text=True, check=True).stdout


class Proc:
    """A process pinned to `cores`; `wait_for(pattern)` waits on its stderr lines (no sleeps)."""

    def __init__(self, cores, args):
        self.p = subprocess.Popen(["taskset", "-c", ",".join(map(str, cores)), CLI, *args], stdin=subprocess.DEVNULL,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.log, self.ended = [], False
        self.cv = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.p.stderr:
            with self.cv:
                self.log.append(line)
                self.cv.notify_all()
        with self.cv:
            self.ended = True
            self.cv.notify_all()

    def wait_for(self, pattern, timeout=300):
        rx = re.compile(pattern)
        found = []

        def seen():
            found[:] = [m for m in map(rx.search, self.log) if m][:1]
            return bool(found) or self.ended

        with self.cv:
            self.cv.wait_for(seen, timeout)
        assert found, f"no '{pattern}' from {self.p.args}:\n" + "".join(self.log[-20:])
        return found[0]

    def stop(self):
        self.p.terminate()
        try:
            self.p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


def post(url, path, body=None, method=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url + path, data=data, method=method or ("GET" if body is None else "POST"),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def without_timings(j):
    for r in j.get("results", []):
        r.pop("timings", None)
    return j


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    if shutil.which("taskset") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("taskset is missing (util-linux)")
        pytest.skip("taskset is missing")
    d = tmp_path_factory.mktemp("pinned")
    run("make-fixture", "--out", str(d / "model"), "--seed", "7")
    rng = random.Random(3)
    docs = [{"_id": f"d{i}", "text": " ".join(rng.choice(WORDS) for _ in range(5 + rng.randrange(20)))}
            for i in range(90)]
    (d / "c.jsonl").write_text("".join(json.dumps(x) + "\n" for x in docs))
    for out, extra in (("one", []), ("set", ["--shards", "3"])):
        run("index", "build", "--model", str(d / "model"), "--corpus", str(d / "c.jsonl"), "--out", str(d / out),
            "--chunk", "16", *extra)
    (d / "router").mkdir()
    shutil.copy(d / "set" / "shardset.json", d / "router" / "shardset.json")
    cores = sorted(os.sched_getaffinity(0))
    router_core, rest = cores[0], (cores[1:] or cores[:1])
    procs, urls, pins = [], [], []
    try:
        for i in range(3):
            mine = [rest[i % len(rest)]]
            p = Proc(mine, ["shard", "serve", "--index", str(d / "set" / f"shard-{i:03d}"), "--port", "0",
                            "--verifier", "F1", "--threads", "4"])
            procs.append(p)
            urls.append(p.wait_for(r"on (http://\S+) ready").group(1))
            pins.append((p, mine))
        router = Proc([router_core], ["serve", "--index", str(d / "router"), "--port", "0", "--verifier", "F1",
                                      "--threads", "1", *sum((["--shard-url", u] for u in urls), [])])
        procs.append(router)
        url = router.wait_for(r"listening on (http://\S+)").group(1)
        router.wait_for(r"sieve serve: ready")
        pins.append((router, [router_core]))
        one = Proc(cores, ["serve", "--index", str(d / "one"), "--port", "0", "--verifier", "F1", "--threads", "1"])
        procs.append(one)
        one_url = one.wait_for(r"listening on (http://\S+)").group(1)
        one.wait_for(r"sieve serve: ready")
        yield {"router": url, "one": one_url, "pins": pins, "docs": docs}
    finally:
        for p in procs:
            p.stop()


def test_each_process_runs_only_on_its_cores(world):
    for proc, cores in world["pins"]:
        assert sorted(os.sched_getaffinity(proc.p.pid)) == cores, proc.p.args


def test_the_pinned_router_over_pinned_shards_answers_as_one_index(world):
    bodies = [
        {"query": "the dog bit the man", "mode": "dense", "k": 8},
        {"queries": ["red car left of the house", "a cat under the tree"], "mode": "bm25", "k": 8},
        {"query": "the man bit the dog", "mode": "hybrid", "k": 6, "candidates": 30, "rerank": True},
        {"query": "blue bird on the stone", "mode": "hybrid", "k": 5, "with_text": True},
    ]
    for body in bodies:
        a, b = post(world["one"], "/v1/search", body), post(world["router"], "/v1/search", body)
        assert a[0] == b[0] == 200, (body, b)
        # The router's timings say how long it waited for its shards.
        assert all(r["timings"]["shards_ms"] > 0 for r in b[1]["results"]), b[1]
        assert without_timings(a[1]) == without_timings(b[1]), body
    for doc in ("d0", "d44", "d89", "missing"):
        assert post(world["one"], f"/v1/documents/{doc}") == post(world["router"], f"/v1/documents/{doc}"), doc
