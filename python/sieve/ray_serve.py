"""A shard set served on Ray Serve: one deployment per shard, a router in front, the JSON API of
`sieve serve` (docs/server.md) on Ray Serve's HTTP proxy.

    python3 -m sieve.ray serve --index SET [--address RAY_ADDRESS] [--port 8000] [--replicas R]

or, from Python, `sieve.ray_serve.run(index, ...)`. Without an address a local Ray is started.

- Each shard `shard-XXX` of the set is a deployment (`sieve-shard-XXX`, `replicas` replicas) that
  opens that shard alone, without an encoder, and answers the shard's dense lists for pooled
  query keys, its stored keys and its token states: what lives in RAM per shard.
- The router deployment (`sieve-router`) runs the library's own service (`sieve serve`'s request
  handling) over the shard set, with each shard's dense search and token reads sent to the
  shard's deployment: the query encoding, the merge of the dense lists by score, BM25 with the
  whole corpus's statistics (Xapian over every shard's database), the fusion and stage 2 are the
  library's, so the answers are those of `sieve serve` on the same set, and of one index over
  the same documents.
- The router needs the set's folder on its file system (BM25, documents and token ids are read
  there; shared storage when the shards run on other nodes); the shard replicas need their shard.
- Writes (POST/PUT/DELETE /v1/documents...) are the library's shard-set writes on that folder:
  each id to the shard that owns it, one transaction per batch (docs/formats.md, "Writes to a
  shard set"). Every shard call names the copy of the shard the router's snapshot records; a
  replica answers from that copy, opening one a write committed the first time it is asked for it.
- Each stage's calls go to every shard at once (the library's fan-out: one thread per shard),
  and none is waited for past the request's deadline (the body's `timeout_ms`, or the router's
  `--request-timeout-ms`, as `sieve serve`'s): 504 then.
- Stage 2 runs at the shards (`stage2_at_shards`, the default): each shard replica holds the
  router's token-map verifier and scores its own candidates against the query's token states, so
  only scores cross the wire, never a candidate's token states. The router and the shards agree
  on the verifier by its key (the file's SHA-256); a shard holding another one refuses.
- A call to a shard that fails (its replica died) is tried again on another replica, twice; a
  shard that still does not answer makes the request's answer a 503 with Retry-After.
- Admission is `sieve serve`'s (the library's Admission): API keys and scopes (`--api-key`,
  `--api-key-file`), per-client rate and concurrency limits (429 with Retry-After, held a while
  for clients that ignore it), the body cap (413, before the body is read when it declares its
  length), the trusted proxy header for the client's address.
- GET /router/stats (admin scope when keys are set): the router's counters ({"stage2_bytes_received", "retried"}): the bytes of
  the shards' stage-2 answers since start, and the shard calls retried.

Ray Serve is not a dependency of sieve: install it to use this module (scripts/setup.sh --oracles
installs the pinned versions the tests use into build/ray-venv).
"""
import argparse
import asyncio
import json
import os
import signal
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from . import _sieve
from .ray import init_address, runtime_env

ROUTER = "sieve-router"
APP = "sieve"


def shard_deployment_name(shard):
    return "sieve-" + _sieve.shard_dir_name(shard)


def _serve():
    try:
        import ray  # noqa: F401
        from ray import serve  # noqa: F401
    except ImportError as e:  # pragma: no cover - depends on the machine
        raise ImportError("sieve.ray_serve needs Ray Serve (pip install 'ray[serve]'; scripts/setup.sh --oracles)") from e
    return ray, serve


class _RemoteShards:
    """The shard deployments as the library sees a shard set's remote part (ShardRemote): called
    from the service's threads, never from an event loop. A call that met a replica that is gone
    or unavailable (its actor died, or Serve has none to route to yet) is retried: Ray Serve routes
    it to another replica, or to the one that replaced the dead one. A deterministic error (the
    shard refused the call) or a timeout is not retried: it would fail again, or wait again."""

    def __init__(self, handles, timeout_s=30.0, attempts=3, scores_at_shards=True, identities=None):
        self._handles = list(handles)
        # Each shard's identity as the router's set records it, carried on every call: a replica
        # that serves another copy of its shard refuses (ShardServer.check_identity), never answers.
        self._identities = list(identities) if identities is not None else [""] * len(self._handles)
        self._timeout = timeout_s
        self._attempts = attempts
        # Read once by the library: whether stage 2 asks the shards for scores (else token states).
        self.scores_at_shards = bool(scores_at_shards)
        self.retried = 0
        self._idle = threading.Condition()
        self._in_flight = 0  # shard calls started and not yet returned or failed (retries included)
        self.bytes_received = 0  # of the shards' answers (arrays' bytes): what stage 2 moves
        # The library calls every shard at once, each from a thread of its own. Ray 2.40 sets up
        # some per-process state on first use without a lock (ray/_private/state.py stores its
        # GCS state accessor before connecting it; a second thread then fails a fatal check in
        # the raylet and the router's process dies). So the state is set up here, and each
        # handle's first call is made alone (_first).
        self._first = threading.Lock()
        self._warm = set()
        try:
            import ray
            if ray.is_initialized():
                import ray._private.state as ray_state
                ray_state.state._check_connected()
        except ImportError:
            pass

    @staticmethod
    def retriable(error):
        """Whether a failed shard call may succeed on another try: the replica is gone or unavailable."""
        import ray.exceptions as rex
        from ray.serve.exceptions import BackPressureError
        if isinstance(error, (rex.GetTimeoutError, TimeoutError)):
            return False
        return isinstance(error, (rex.RayActorError, rex.ActorUnavailableError, BackPressureError))

    def _call(self, shard, method, *args, timeout_s=None, expect=""):
        """One call to a shard's deployment, waited for at most the router's timeout or the
        request's remaining time (`timeout_s`), whichever is shorter; retried while time remains."""
        with self._idle:
            self._in_flight += 1
        try:
            if shard not in self._warm:
                with self._first:  # a handle's first call alone (see __init__)
                    result = self._call_timed(shard, method, args, timeout_s, expect)
                    self._warm.add(shard)
                    return result
            return self._call_timed(shard, method, args, timeout_s, expect)
        finally:
            with self._idle:
                self._in_flight -= 1
                self._idle.notify_all()

    def in_flight(self):
        """Shard calls under way: a request that failed fast on one shard leaves the others' calls
        (and their retries) to finish on their own threads."""
        with self._idle:
            return self._in_flight

    def wait_idle(self, timeout_s):
        """Waits until no shard call is under way (at most timeout_s); whether none is."""
        with self._idle:
            return self._idle.wait_for(lambda: self._in_flight == 0, timeout_s)

    def _call_timed(self, shard, method, args, timeout_s, expect=""):
        end = None if timeout_s is None else time.monotonic() + timeout_s
        for attempt in range(self._attempts):
            wait = self._timeout if end is None else max(0.0, min(self._timeout, end - time.monotonic()))
            try:
                return getattr(self._handles[shard], method).remote(
                    *args, expect=expect or self._identities[shard]).result(timeout_s=wait)
            except Exception as e:
                pause = 0.2 * (attempt + 1)
                out_of_time = end is not None and time.monotonic() + pause >= end
                if attempt + 1 == self._attempts or out_of_time or not self.retriable(e):
                    raise
                self.retried += 1
                time.sleep(pause)

    # `expect`: the copy of the shard the router's snapshot of the set names (its identity); a
    # replica answers from that copy (opening it when the set has committed a write since).
    def dense_lists(self, shard, pooled, depth, ef_search, nprobe, timeout_s=None, filter="", now=0.0, expect=""):
        return self._call(shard, "dense_lists", pooled, depth, ef_search, nprobe, filter, now, timeout_s=timeout_s,
                          expect=expect)

    def tokens(self, shard, docs, max_rows, timeout_s=None, expect=""):
        got = self._call(shard, "tokens", docs, max_rows, timeout_s=timeout_s, expect=expect)
        self.bytes_received += sum(getattr(a, "nbytes", 0) for a in got)
        return got

    def scores(self, shard, verifier, query, query_ids, docs, timeout_s=None, expect=""):
        got = self._call(shard, "scores", verifier, query, query_ids, docs, timeout_s=timeout_s, expect=expect)
        self.bytes_received += getattr(got, "nbytes", 0)
        return got

    def keys(self, shard, docs, timeout_s=None, expect=""):
        return self._call(shard, "keys", docs, timeout_s=timeout_s, expect=expect)


class ShardReplica:
    """One shard of the set (a Ray Serve deployment's replica)."""

    def __init__(self, path, threads=1, verifiers=(), model=""):
        if threads > 0:
            _sieve.set_threads(threads)
        self._shard = _sieve.ShardServer(path, list(verifiers), model)  # refuses a copy its set does not record
        self.path = path

    # `expect`: the copy of the shard the caller's set records ("" = the latest here): the replica
    # answers from it, opening it when the set committed a write since, and refuses a copy that
    # is not on disk (another set's shard, a rebuilt one).
    def dense_lists(self, pooled, depth, ef_search, nprobe, filter="", now=0.0, expect=""):
        return self._shard.dense_lists(pooled, depth, ef_search, nprobe, filter, now, expect)

    def tokens(self, docs, max_rows, expect=""):
        return self._shard.tokens(docs, max_rows, expect)

    def keys(self, docs, expect=""):
        return self._shard.keys(docs, expect)

    def scores(self, verifier, query, query_ids, docs, expect=""):
        return self._shard.scores(verifier, query, query_ids, docs, expect)

    def info(self):
        """{"pid", "node", "documents"}: which process and node serve this replica (for tests)."""
        import ray
        return {"pid": os.getpid(), "node": ray.get_runtime_context().get_node_id(), "documents": len(self._shard)}


class Router:
    """The HTTP face: every request is admitted by the library's Admission (API keys and scopes,
    rate and concurrency limits, the body cap: `sieve serve`'s own), then goes to the library's
    service, which reaches the shards. `admission`: keyword arguments of _sieve.Admission
    (api_key_file, api_key, rate, burst, concurrent, max_body, refusal_delay_ms, ...);
    `client_address_header`: the trusted proxy's header that names the client (its rightmost
    address), as `sieve serve --client-address-header`."""

    THREADS = 64  # requests answered at once (the service blocks on the shards in these threads)

    def __init__(self, path, shards, model="", verifier="", threads=0, workers=0, timeout_s=30.0,
                 stage2_at_shards=True, request_timeout_ms=0, admission=None, client_address_header=""):
        self._remote = _RemoteShards(shards, timeout_s, scores_at_shards=stage2_at_shards,
                                     identities=_sieve.shard_set_identities(path))
        self._admission = _sieve.Admission(request_threads=self.THREADS, **(admission or {}))
        self._client_header = client_address_header.lower()
        self._service = _sieve.Service(path, model=model, verifier=verifier, remote=self._remote, threads=threads,
                                       workers=workers, request_timeout_ms=request_timeout_ms)
        self._pool = ThreadPoolExecutor(max_workers=self.THREADS, thread_name_prefix="sieve-router")

    def _address(self, request):
        values = request.headers.getlist(self._client_header) if self._client_header else []
        return _sieve.client_address(request.client.host if request.client else "", values[-1] if values else None)

    async def __call__(self, request):
        from starlette.responses import Response

        def answer(status, out, ctype, headers):
            return Response(content=out, status_code=status, media_type=ctype, headers=dict(headers))
        arrived = time.monotonic()  # the request's deadline counts from here (the C++ clock is this one)
        method, path = request.method, request.url.path
        declared = request.headers.get("content-length", "")
        if declared.isdigit():  # refused before the body is read
            refusal = self._admission.body_refusal(int(declared))
            if refusal:
                return answer(*refusal)
        refusal, hold, client, in_flight = self._admission.admit(
            method, path, request.headers.get("authorization", ""), self._address(request))
        if refusal:
            if hold > 0:  # a client that ignores Retry-After waits for its refusal
                try:
                    await asyncio.sleep(hold)
                finally:  # also when the client goes away (the task is cancelled) during the hold
                    self._admission.end_hold(client)
            return answer(*refusal)
        try:
            if path == "/router/stats" and method == "GET":
                return Response(content=json.dumps({"stage2_bytes_received": self._remote.bytes_received,
                                                    "retried": self._remote.retried,
                                                    "shard_calls_in_flight": self._remote.in_flight()}),
                                media_type="application/json")
            body = await request.body()
            refusal = self._admission.body_refusal(len(body))  # a body sent without its length
            if refusal:
                return answer(*refusal)
            query = dict(request.query_params)

            def handle():  # on a pool thread: the time spent waiting for it counts against the deadline
                return self._service.handle(method, path, body, query, waited_s=max(0.0, time.monotonic() - arrived))
            return answer(*await asyncio.get_running_loop().run_in_executor(self._pool, handle))
        finally:
            if in_flight:
                self._admission.release(client)

    def retried(self):
        return self._remote.retried

    def wait_idle(self, timeout_s):
        """Waits until no shard call is under way (at most timeout_s); whether none is."""
        return self._remote.wait_idle(timeout_s)

    def bytes_received(self):
        """Bytes of the shards' answers to stage-2 calls since start (token states or scores)."""
        return self._remote.bytes_received


def application(index, *, replicas=1, router_replicas=1, model="", verifier="", threads=0, shard_threads=1,
                shard_cpus=0.0, router_cpus=0.0, shard_resources=None, timeout_s=30.0, stage2_at_shards=True,
                request_timeout_ms=0, admission=None, client_address_header=""):
    """The Ray Serve application of shard set `index`: a router bound to one deployment per shard.
    `shard_resources` ({"name": amount}) places the shard replicas on nodes that have them.
    `stage2_at_shards`: the shards score their own candidates with the router's verifier (False:
    they send the candidates' token states and the router scores them). `request_timeout_ms`: every
    request's deadline when its body gives no timeout_ms, and the most one may ask (0: none).
    `admission`, `client_address_header`: the router's keys, limits and body cap (Router)."""
    ray, serve = _serve()
    index = _check_set(index)
    manifest = json.load(open(os.path.join(index, "shardset.json"), encoding="utf-8"))
    shard_dirs = [os.path.join(index, s["dir"]) for s in manifest["shards"]]
    opts = {"num_cpus": shard_cpus}
    if shard_resources:
        opts["resources"] = dict(shard_resources)
    shard_app = serve.deployment(ShardReplica)
    bound = [shard_app.options(name=shard_deployment_name(i), num_replicas=replicas, ray_actor_options=opts,
                               max_ongoing_requests=64).bind(d, shard_threads, [verifier or "default"], model)
             for i, d in enumerate(shard_dirs)]
    router = serve.deployment(Router).options(name=ROUTER, num_replicas=router_replicas,
                                              ray_actor_options={"num_cpus": router_cpus},
                                              max_ongoing_requests=256)
    _sieve.Admission(**(admission or {}))  # bad settings refused here, before anything is deployed
    return router.bind(index, bound, model, verifier, threads, 0, timeout_s, stage2_at_shards, request_timeout_ms,
                       admission or {}, client_address_header)


def _check_set(index):
    index = os.path.abspath(str(index))
    if not _sieve.is_shard_set(index):
        raise ValueError(f"'{index}' is not a shard set (build one with `sieve index build --shards N` or sieve.ray)")
    return index


def run(index, *, host="127.0.0.1", port=8000, address=None, node_ip_address=None, **options):
    """Deploys the application of `index` (see application()) on the Ray cluster at `address` (a
    local one when None and none is running) with the HTTP proxy on host:port; returns when every
    replica is up, leaving it running (serve.shutdown() stops it). `node_ip_address`: this
    machine's address in the cluster, when it has several."""
    ray, serve = _serve()
    _check_set(index)  # before starting anything
    if not ray.is_initialized():
        kwargs = {"address": init_address(address)}
        if node_ip_address:
            kwargs["_node_ip_address"] = node_ip_address
        ray.init(include_dashboard=False, log_to_driver=False, runtime_env=runtime_env(), **kwargs)
    serve.start(http_options={"host": host, "port": port})
    serve.run(application(index, **options), name=APP, route_prefix="/")
    return f"http://{host}:{port}"


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m sieve.ray serve", description=__doc__.split("\n\n")[0])
    p.add_argument("--index", required=True, help="the shard set to serve (its folder, on every node that serves it)")
    p.add_argument("--address", default="", help="Ray cluster address (default: RAY_ADDRESS when set, else start a "
                   "local Ray; never the last cluster `ray start` ran)")
    p.add_argument("--node-ip-address", default="", help="this machine's address in the Ray cluster (several networks)")
    p.add_argument("--host", default="127.0.0.1", help="address of Ray Serve's HTTP proxy")
    p.add_argument("--port", type=int, default=8000, help="port of Ray Serve's HTTP proxy")
    p.add_argument("--replicas", type=int, default=1, help="replicas of each shard's deployment")
    p.add_argument("--router-replicas", type=int, default=1, help="replicas of the router")
    p.add_argument("--model", default="", help="the query encoder (default: the one the set was built with)")
    p.add_argument("--verifier", default="", help="stage 2's verifier, as `sieve serve --verifier`")
    p.add_argument("--threads", type=int, default=0, help="the router's compute threads (0: all cores)")
    p.add_argument("--shard-threads", type=int, default=1, help="compute threads of each shard replica")
    p.add_argument("--request-timeout-ms", type=int, default=0, help="every request's deadline when its body "
                   "gives no timeout_ms, and the most one may ask; shards are not waited for past it (0: none)")
    p.add_argument("--api-key", default="", help="one key every route but /health, / and /openapi.json needs "
                   "(Authorization: Bearer KEY), as sieve serve --api-key")
    p.add_argument("--api-key-file", default="", help="scoped keys with their own limits, one a line, as sieve serve's")
    p.add_argument("--rate-limit", type=float, default=0.0, help="requests per second per client (key, else address)")
    p.add_argument("--burst", type=float, default=0.0, help="requests a client may send at once (0: the rate)")
    p.add_argument("--max-concurrent", type=int, default=0, help="requests in flight per client (0: no limit)")
    p.add_argument("--max-body", type=int, default=16 << 20, help="request bodies over this many bytes: 413")
    p.add_argument("--client-address-header", default="", help="the trusted proxy's header naming the client "
                   "(its rightmost address), e.g. X-Forwarded-For")
    p.add_argument("--stage2-at-router", action="store_true", help="stage 2 reads the candidates' token states "
                   "at the router (default: each shard scores its own candidates; only scores cross the wire)")
    p.add_argument("--shard-cpus", type=float, default=0.0, help="CPUs Ray reserves per shard replica")
    p.add_argument("--shard-resource", action="append", default=[], metavar="NAME[=AMOUNT]",
                   help="a custom Ray resource the shard replicas' nodes must have (repeatable)")
    a = p.parse_args(argv)
    resources = {}
    for r in a.shard_resource:
        name, _, amount = r.partition("=")
        resources[name] = float(amount or 1)
    try:
        url = run(a.index, host=a.host, port=a.port, address=a.address or None,
                  node_ip_address=a.node_ip_address or None, replicas=a.replicas,
                  router_replicas=a.router_replicas, model=a.model, verifier=a.verifier, threads=a.threads,
                  shard_threads=a.shard_threads, shard_cpus=a.shard_cpus, shard_resources=resources or None,
                  stage2_at_shards=not a.stage2_at_router, request_timeout_ms=a.request_timeout_ms,
                  admission={"api_key": a.api_key, "api_key_file": a.api_key_file, "rate": a.rate_limit,
                             "burst": a.burst, "concurrent": a.max_concurrent, "max_body": a.max_body},
                  client_address_header=a.client_address_header)
    except (ValueError, _sieve.Error) as e:
        print(f"sieve.ray serve: error: {e}", file=sys.stderr)
        return 1
    print(f"sieve.ray serve: serving {a.index} on {url} (Ctrl-C stops)", file=sys.stderr, flush=True)

    def _stop(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, _stop)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        import ray
        from ray import serve
        serve.shutdown()
        ray.shutdown()  # stops a local Ray this command started
    return 0
