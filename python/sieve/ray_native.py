"""The native shard path on Ray (issue 61): Ray places sieve's own shard servers, restarts them
and publishes where they are; every query goes sieve to sieve, with no Python on its path.

    python3 -m sieve.ray native --index SET [--address RAY_ADDRESS] [--port 8000] [--replicas R]
                                [-- SIEVE_SERVE_OPTIONS...]

or, from Python, `sieve.ray_native.Deployment(index, ...)`. Without an address a local Ray is
started.

- Each replica of each shard is a Ray actor (`ShardServer`) that owns one `sieve shard serve`
  process (its child, killed with it: PR_SET_PDEATHSIG) on its node's address and a free port,
  and reports that address once the server says it is ready.
- The router is a Ray actor (`Router`) that owns one `sieve serve --index SET --shard-membership
  FILE --port PORT` process: the library's service, admission (keys, scopes, limits) and OpenAPI
  contract, unchanged. The membership file is the actor's own (node-local); each new membership
  is written there (atomically) and announced with SIGHUP, and the actor returns once the router
  has logged that generation.
- The driver's `Deployment` keeps the set whole: it waits (ray.wait, no polling of processes) on
  every actor's `wait_exit()`, which returns when its process ends (a crash, SIGKILL, the actor
  or its node lost). A shard replica that ends is dropped from the membership, a new one is
  started wherever Ray places it, and it joins the membership once ready; a router that ends is
  started again on the same port (clients keep one URL). A replica that Ray cannot place yet
  (its resources are on no node) starts when a node that has them joins.
- Between the router and a shard's replicas, the router's own failover applies (docs/scale.md):
  a call a replica does not answer goes to the next one within the request's deadline; a shard
  with no replica answering is a 503 naming it; every call names the shard copy it means.

Every node that runs a shard replica must have that shard's folder at the set's path (the shards
are placed with `shard_resources`, e.g. a custom resource of the nodes that hold them); the
router's node needs the set's folder (its manifest, BM25 databases, documents). Ray itself is not
a dependency of sieve: install it to use this module (scripts/setup.sh --oracles installs the
pinned versions the tests use into build/ray-venv).
"""
import argparse
import ctypes
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

from . import _sieve
from .ray import init_address, runtime_env
from .train import cli_path

_PR_SET_PDEATHSIG = 1


def _die_with_parent():  # runs in the child between fork and exec
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


class _Process:
    """A child process whose stderr is read line by line: `wait_for(pattern)` returns the first
    line logged since a given one that matches, or raises when the process ends first or the
    timeout passes. The last 200 lines are kept for error messages."""

    def __init__(self, args):
        self.args = args
        # Ray sets OMP_NUM_THREADS=1 in its workers (for an actor that reserves no CPU): sieve
        # sizes its own threads from the cores it may use (--threads of sieve serve decides).
        env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, env=env,
                                     stderr=subprocess.PIPE, text=True, preexec_fn=_die_with_parent)
        self._lines = []  # the last 200
        self._count = 0  # lines read in all
        self._ended = False
        self._cv = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stderr:
            with self._cv:
                self._lines.append(line.rstrip("\n"))
                self._count += 1
                del self._lines[:-200]
                self._cv.notify_all()
        self.proc.wait()
        with self._cv:
            self._ended = True
            self._cv.notify_all()

    def wait_for(self, pattern, timeout, after=0):
        """(match, lines read so far) for the first line matching `pattern` among lines number
        `after` on (0-based, counted since start)."""
        rx = re.compile(pattern)
        deadline = time.monotonic() + timeout
        with self._cv:
            while True:
                first = self._count - len(self._lines)  # the number of self._lines[0]
                for i in range(max(after, first), self._count):
                    m = rx.search(self._lines[i - first])
                    if m:
                        return m, i + 1
                after = self._count
                if self._ended:
                    raise RuntimeError(f"{' '.join(self.args[:3])} ended (exit {self.proc.returncode}) before "
                                       f"'{pattern}':\n" + self.log())
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"no '{pattern}' from {' '.join(self.args[:3])} in {timeout} s:\n" + self.log())
                self._cv.wait(left)

    def log(self):
        return "\n".join(self._lines[-40:])

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def _node_ip():
    import ray
    return ray.util.get_node_ip_address()


class _Owned:
    """What a Ray actor that owns one sieve process answers: its address, pid, node, end."""

    def url(self):
        return self._url

    def pid(self):
        return self._p.proc.pid

    def node_id(self):
        import ray
        return ray.get_runtime_context().get_node_id()

    def wait_exit(self):
        """Returns the process's exit status once it has ended."""
        return self._p.proc.wait()

    def stop(self):
        self._p.stop()


class ShardServer(_Owned):
    """A Ray actor owning one `sieve shard serve` process (one replica of one shard)."""

    def __init__(self, sieve, shard_dir, args=(), host="", ready_timeout=300):
        host = host or _node_ip()
        self._p = _Process([sieve, "shard", "serve", "--index", shard_dir, "--host", host, "--port", "0", *args])
        m, _ = self._p.wait_for(r"on (http://\S+) ready", ready_timeout)
        self._url = m.group(1)


class Router(_Owned):
    """A Ray actor owning one `sieve serve` over a shard set whose shards are the membership's."""

    def __init__(self, sieve, index, membership, port, host="", args=(), ready_timeout=600):
        self._host = host or _node_ip()
        self._dir = tempfile.mkdtemp(prefix="sieve-router-")
        self._file = os.path.join(self._dir, "membership.json")
        self._write(membership)
        self._generation = 1
        self._p = _Process([sieve, "serve", "--index", index, "--shard-membership", self._file, "--host", self._host,
                            "--port", str(port), *args])
        m, self._seen = self._p.wait_for(r"listening on (http://\S+)", ready_timeout)
        self._url = m.group(1)
        _, self._seen = self._p.wait_for(r"sieve serve: ready", ready_timeout, self._seen)

    def _write(self, membership):
        tmp = self._file + ".tmp"
        with open(tmp, "w") as f:
            json.dump({"shards": membership}, f)
        os.replace(tmp, self._file)

    def set_membership(self, membership, timeout=60):
        """Writes the membership and has the router read it (SIGHUP); returns its generation
        once the router has logged it."""
        self._write(membership)
        self._generation += 1
        self._p.proc.send_signal(signal.SIGHUP)
        m, self._seen = self._p.wait_for(r"SIGHUP: (shard membership (\d+)|the shard membership stays.*)",
                                         timeout, self._seen)
        if m.group(2) is None:
            raise RuntimeError("the router refused the membership: " + m.group(1))
        self._generation = int(m.group(2))
        return self._generation


def shard_count(index):
    with open(os.path.join(str(index), "shardset.json")) as f:
        return len(json.load(f)["shards"])


class Deployment:
    """Shards x replicas of `sieve shard serve` and one `sieve serve` router on Ray, kept whole.

    `shard_args`: extra options of every `sieve shard serve` (e.g. ["--verifier", "F1",
    "--threads", "1"]); `router_args`: of `sieve serve` (keys, limits, --verifier, --threads...).
    `shard_resources` / `router_resources`: Ray resources each actor needs (where it may run).
    Events (`events`, `wait_until`): every replica started, ended or published, for tests and
    operators; `membership()` is what the router was last given."""

    def __init__(self, index, *, replicas=1, port=8000, host="", sieve=None, shard_args=(), router_args=(),
                 shard_resources=None, router_resources=None, ready_timeout=600):
        import ray
        self._ray = ray
        self.index = os.path.abspath(str(index))
        self.shards = shard_count(self.index)
        self.replicas = replicas
        self._sieve = sieve or cli_path()
        self._shard_args = list(shard_args)
        self._router_args = list(router_args)
        self._shard_res = dict(shard_resources or {})
        self._router_res = dict(router_resources or {})
        self._port, self._host = port, host
        self._timeout = ready_timeout
        self._cv = threading.Condition()
        self.events = []  # (kind, shard, url)
        self._live = [dict() for _ in range(self.shards)]  # shard -> {url: actor}
        self._published = [[] for _ in range(self.shards)]
        self._pending = {}  # ready ref -> (shard, actor)
        self._exits = {}  # exit ref -> ("shard", shard, url, actor) | ("router", actor)
        self._closing = False
        self._shard_cls = ray.remote(num_cpus=0, max_concurrency=4)(ShardServer)
        self._router_cls = ray.remote(num_cpus=0, max_concurrency=4)(Router)
        for s in range(self.shards):
            for _ in range(replicas):
                self._start_replica(s)
        # Every shard answers before the router starts (its first membership lists them).
        while self._pending:
            ready, _ = ray.wait(list(self._pending), num_returns=1, timeout=self._timeout)
            if not ready:
                raise TimeoutError(f"shard replicas not ready in {self._timeout} s")
            self._on_ready(ready[0], publish=False)
        self._start_router()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    # --- what the deployment is ----------------------------------------------------------------
    @property
    def url(self):
        return self._url

    def membership(self):
        with self._cv:
            return [list(x) for x in self._published]

    def whole(self):
        """Every shard has `replicas` replicas in the router's membership."""
        with self._cv:
            return all(len(p) == self.replicas and set(p) == set(live) for p, live in zip(self._published, self._live))

    def wait_until(self, predicate, timeout):
        """Waits for `predicate(self)` to hold, re-checked at each event; False on timeout."""
        deadline = time.monotonic() + timeout
        with self._cv:
            while not predicate(self):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cv.wait(left)
            return True

    def shard_pids(self, shard):
        """{url: pid} of a shard's live replicas."""
        with self._cv:
            actors = dict(self._live[shard])
        return {u: self._ray.get(a.pid.remote(), timeout=60) for u, a in actors.items()}

    def router_pid(self):
        return self._ray.get(self._router.pid.remote(), timeout=60)

    def placement(self):
        """Where Ray placed each process: ({shard: {url: node id}}, the router's node id)."""
        with self._cv:
            live = [dict(x) for x in self._live]
        shards = {s: {u: self._ray.get(a.node_id.remote(), timeout=60) for u, a in x.items()} for s, x in enumerate(live)}
        return shards, self._ray.get(self._router.node_id.remote(), timeout=60)

    def add_replicas(self, n=1, resources=None):
        """`n` more replicas of every shard (placed with `resources` when given: e.g. a node that
        joins later); they join the membership once ready."""
        with self._cv:
            self.replicas += n
        for s in range(self.shards):
            for _ in range(n):
                self._start_replica(s, resources)

    # --- keeping it whole ----------------------------------------------------------------------
    def _event(self, kind, shard=None, url=None):
        with self._cv:
            self.events.append((kind, shard, url))
            self._cv.notify_all()

    def _start_replica(self, shard, resources=None):
        res = dict(self._shard_res if resources is None else resources)
        opts = {"resources": res} if res else {}
        actor = self._shard_cls.options(**opts).remote(self._sieve, os.path.join(self.index, _sieve.shard_dir_name(shard)),
                                                        self._shard_args, "", self._timeout)
        with self._cv:
            self._pending[actor.url.remote()] = (shard, actor, resources)

    def _on_ready(self, ref, publish=True):
        with self._cv:
            shard, actor, resources = self._pending.pop(ref)
        try:
            url = self._ray.get(ref)
        except Exception as e:  # the actor died starting (its node lost, a bad shard): again
            self._event("start_failed", shard, str(e).splitlines()[0] if str(e) else type(e).__name__)
            self._kill(actor)
            if not self._closing:
                self._start_replica(shard, resources)
            return
        with self._cv:
            self._live[shard][url] = actor
            self._exits[actor.wait_exit.remote()] = ("shard", shard, url, actor, resources)
        self._event("ready", shard, url)
        if publish:
            self._publish()

    def _start_router(self):
        opts = {"resources": self._router_res} if self._router_res else {}
        membership = self._membership_to_publish()
        self._router = self._router_cls.options(**opts).remote(self._sieve, self.index, membership, self._port,
                                                               self._host, self._router_args, self._timeout)
        self._url = self._ray.get(self._router.url.remote(), timeout=self._timeout)
        with self._cv:
            self._published = membership
            self._exits[self._router.wait_exit.remote()] = ("router", self._router)
        self._event("router", None, self._url)

    def _membership_to_publish(self):
        with self._cv:
            # A shard with no live replica keeps its last addresses (a membership lists at least
            # one a shard): its calls fail, a 503 naming it, until a replica is ready.
            return [sorted(live) if live else list(old) for live, old in zip(self._live, self._published)]

    def _publish(self):
        membership = self._membership_to_publish()
        try:
            self._ray.get(self._router.set_membership.remote(membership), timeout=120)
        except Exception as e:  # the router is down: its restart starts with the membership
            self._event("publish_failed", None, str(e).splitlines()[0] if str(e) else type(e).__name__)
            return
        with self._cv:
            self._published = membership
        self._event("published")

    def _kill(self, actor):
        try:
            self._ray.kill(actor)
        except Exception:
            pass

    def _watch(self):
        ray = self._ray
        while not self._closing:
            with self._cv:
                refs = list(self._pending) + list(self._exits)
            if not refs:
                return
            ready, _ = ray.wait(refs, num_returns=1, timeout=1.0)
            if not ready or self._closing:
                continue
            ref = ready[0]
            if ref in self._pending:
                self._on_ready(ref)
                continue
            with self._cv:
                what = self._exits.pop(ref)
            if what[0] == "router":
                self._kill(what[1])
                self._event("router_ended")
                try:
                    self._start_router()
                except Exception as e:
                    self._event("router_failed", None, str(e).splitlines()[0])
                continue
            _, shard, url, actor, resources = what
            with self._cv:
                self._live[shard].pop(url, None)
            self._kill(actor)
            self._event("ended", shard, url)
            self._publish()
            self._start_replica(shard, resources)

    def close(self):
        self._closing = True
        self._thread.join(timeout=30)
        with self._cv:
            actors = [a for live in self._live for a in live.values()] + [a for _, a, _ in self._pending.values()]
        try:
            self._ray.get(self._router.stop.remote(), timeout=60)
        except Exception:
            pass
        for a in [self._router, *actors]:
            self._kill(a)


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m sieve.ray native",
                                description="Serve a shard set on Ray the native way: `sieve shard serve` replicas "
                                            "placed and restarted by Ray, one `sieve serve` router over them "
                                            "(sieve/ray_native.py). Options after -- go to sieve serve.")
    p.add_argument("--index", required=True, help="the shard set (its folder on the router's node; each shard's "
                                                  "folder on the nodes that serve it)")
    p.add_argument("--address", default="", help="Ray cluster address (default: RAY_ADDRESS when set, else start "
                                                 "a local Ray)")
    p.add_argument("--host", default="", help="address the router binds (default: its node's address)")
    p.add_argument("--port", type=int, default=8000, help="the router's port (kept across its restarts)")
    p.add_argument("--replicas", type=int, default=1, help="replicas of each shard")
    p.add_argument("--shard-threads", type=int, default=16, help="calls each shard server serves at once")
    p.add_argument("--verifier", action="append", default=[], help="verifier the shard servers hold for stage 2 "
                                                                    "(repeatable; default: the model's)")
    p.add_argument("--shard-resource", default="", help="a Ray resource each shard replica needs (NAME or "
                                                        "NAME=AMOUNT): the nodes that hold the shards")
    p.add_argument("--router-resource", default="", help="a Ray resource the router needs (NAME[=AMOUNT])")
    p.add_argument("serve_args", nargs=argparse.REMAINDER, help="after --: options of sieve serve")
    a = p.parse_args(argv)

    def res(text):
        if not text:
            return None
        name, _, amount = text.partition("=")
        return {name: float(amount or 1)}

    import ray
    ray.init(address=init_address(a.address), runtime_env=runtime_env("SIEVE_CLI"), log_to_driver=False)
    shard_args = ["--threads", str(a.shard_threads)]
    for v in a.verifier:
        shard_args += ["--verifier", v]
    serve_args = [x for x in a.serve_args if x != "--"]
    d = Deployment(a.index, replicas=a.replicas, port=a.port, host=a.host, shard_args=shard_args,
                   router_args=serve_args, shard_resources=res(a.shard_resource), router_resources=res(a.router_resource))
    print(f"sieve: serving {a.index} at {d.url} ({d.shards} shards x {a.replicas} replicas); Ctrl-C stops",
          file=sys.stderr, flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    seen = 0
    while not stop.is_set():
        stop.wait(1.0)
        for kind, shard, url in d.events[seen:]:
            print(f"sieve: {kind}" + (f" shard {shard}" if shard is not None else "") + (f" {url}" if url else ""),
                  file=sys.stderr, flush=True)
        seen = len(d.events)
    d.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
