"""A semantic cache that never serves the answer to another question (docs/cache.md).

    cache = sieve.Cache("answers/")                     # a folder; created by the first store
    cache.store("does aspirin reduce fever?", "Yes: ...", scope={"model": "gpt-x"}, ttl_s=3600)
    cache.lookup("does aspirin lower a fever?", scope={"model": "gpt-x"})   # a hit: {"answer", ...}
    cache.lookup("does aspirin not reduce fever?", scope={"model": "gpt-x"})  # None: another question

A lookup searches the entries of its scope (exactly that scope: no other's entry is ever seen),
then the model's identity gate reads the best candidates: a hit is the best candidate the gate
accepts, not the nearest one. Entries expire after their ttl_s. The library's SemanticCache
(sieve/cache.h) does the work; this class converts.
"""
import json
import os
import urllib.error
import urllib.request

from . import _sieve


class Cache:
    """The cache in folder `path` (an index; created by the first store), or the one a sieve server
    serves when `path` is its URL ("http://host:8080", `sieve serve --cache DIR`; `api_key` for a
    server with keys: a read key looks up, a write key stores). `model`: the encoder (default: the
    cache's, else the default model); `verifier`: the gate ("default": the model's shipped one;
    "cosine" makes a cosine-threshold cache and needs `threshold`); `threshold`: the gate's
    acceptance score (default: its calibrated one); `candidates`: stage-1 candidates the gate
    reads; `scope_fields`: the fields a scope may name (default model, system, tenant). Over a URL
    those are the server's (its --cache-verifier, --cache-threshold)."""

    def __init__(self, path, model=None, *, verifier="default", threshold=None, candidates=8, scope_fields=None,
                 threads=0, api_key=None, timeout_s=30.0):
        self.path = os.fspath(path) if not isinstance(path, str) else path
        if self.path.startswith(("http://", "https://")):
            self._impl = _Remote(self.path, api_key, timeout_s)
        else:
            self._impl = _sieve.Cache(self.path, model or "", verifier, threshold, candidates, list(scope_fields or []),
                                      threads)

    def store(self, prompt, answer, scope=None, ttl_s=None):
        """Stores `answer` (a string, opaque to the cache) for `prompt` in `scope` (a dict of
        strings), expiring after `ttl_s` seconds (None: never). Returns the entry's id; the same
        prompt in the same scope has the same id, and storing it again replaces its answer."""
        if not isinstance(answer, str):
            raise TypeError("answer: a string (serialise other values first)")
        return self._impl.store(prompt, answer, _scope(scope), _ttl(ttl_s))

    def lookup(self, prompt, scope=None):
        """None on a miss; on a hit {"answer", "id", "prompt", "score", "stage1_score",
        "threshold"}: the cached prompt served, the gate's score and its threshold, and stage 1's."""
        r = self._impl.lookup(prompt, _scope(scope))
        if not r["hit"]:
            return None
        return {k: r[k] for k in ("answer", "id", "prompt", "score", "stage1_score", "threshold")}

    def check(self, prompt, scope=None):
        """The lookup's whole answer, hit or miss: {"hit", "id", "prompt", "answer", "score",
        "stage1_score", "threshold", "candidates"} (on a miss the scores are the best candidate's)."""
        return self._impl.lookup(prompt, _scope(scope))

    def get(self, id):  # noqa: A002 (the entry's id)
        """The live entry `id` ({"id", "prompt", "answer", "scope", "expires_at"}) or None."""
        return self._impl.get(id)

    def invalidate(self, ids=None, scope=None):
        """Removes the entries `ids` (a string or a list; unknown ones are ignored), or every entry
        whose scope has the values `scope` gives ({}: all of them). Returns how many went."""
        if (ids is None) == (scope is None):
            raise ValueError("give ids or a scope, not both and not neither")
        if ids is not None:
            return self._impl.invalidate([ids] if isinstance(ids, str) else list(ids))
        return self._impl.invalidate_scope(_scope(scope))

    def clear(self):
        """Removes every entry; returns how many went."""
        return self._impl.invalidate_scope({})

    def compact(self):
        """Rewrites the cache without its expired, replaced and invalidated entries (they stay on
        disk, invisible, until then); returns {"documents_before", "documents", "removed",
        "bytes_before", "bytes_after", "seconds"}. Local caches only (a server's is its own)."""
        if isinstance(self._impl, _Remote):
            raise TypeError("compact() of a cache served over HTTP: the server compacts its own")
        return self._impl.compact()

    def __len__(self):
        """Live entries (of a server's cache: what its GET /v1/info reports)."""
        return len(self._impl)

    @property
    def dead(self):
        """Entries on disk that no lookup sees (replaced, invalidated, expired): what compact()
        removes. A server compacts its cache on its own past --compact-dead-share of them."""
        return self._impl.dead

    @property
    def threshold(self):
        """The gate's threshold lookups use."""
        return self._impl.threshold


def _scope(scope):
    if scope is None:
        return {}
    if not isinstance(scope, dict):
        raise TypeError("scope: a dict of field -> string")
    out = {}
    for k, v in scope.items():
        if not isinstance(k, str) or not isinstance(v, str):
            raise TypeError(f"scope.{k}: a string (scope values are compared exactly)")
        out[k] = v
    return out


def _ttl(ttl_s):
    if ttl_s is None:
        return 0.0
    if isinstance(ttl_s, bool) or not isinstance(ttl_s, (int, float)):
        raise TypeError("ttl_s: a number of seconds")
    return float(ttl_s)


class _Remote:
    """The cache routes of a sieve server (docs/server.md), with _sieve.Cache's methods; the
    server's errors raise sieve.Error with its message (the field named)."""

    def __init__(self, url, api_key, timeout_s):
        self.url = url.rstrip("/")
        self.api_key = api_key
        self.timeout_s = timeout_s

    def _call(self, method, path, body=None, missing_ok=False):
        data = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = "Bearer " + self.api_key
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as r:
                return json.loads(r.read())
        except urllib.error.HTTPError as e:
            if e.code == 404 and missing_ok:
                return None
            try:
                message = json.loads(e.read())["error"]["message"]
            except Exception:  # noqa: BLE001 (a body that is not the server's error JSON)
                message = str(e)
            raise _sieve.Error(f"{method} {path}: {e.code}: {message}") from None

    def store(self, prompt, answer, scope, ttl_s):
        return self._call("POST", "/v1/cache", {"prompt": prompt, "answer": answer, "scope": scope, "ttl_s": ttl_s})["id"]

    def lookup(self, prompt, scope):
        return self._call("POST", "/v1/cache/lookup", {"prompt": prompt, "scope": scope})

    def get(self, id):  # noqa: A002
        return self._call("GET", "/v1/cache/" + urllib.request.quote(id, safe=""), missing_ok=True)

    def invalidate(self, ids):
        return self._call("POST", "/v1/cache/delete", {"ids": ids})["deleted"] if ids else 0

    def invalidate_scope(self, scope):
        return self._call("POST", "/v1/cache/delete", {"scope": scope})["deleted"]

    def _info(self):
        info = self._call("GET", "/v1/info").get("cache")
        if not info:
            raise _sieve.Error("GET /v1/info: this server has no cache (start it with --cache DIR)")
        return info

    def __len__(self):
        return int(self._info()["entries"])

    @property
    def dead(self):
        return int(self._info()["dead"])

    @property
    def threshold(self):
        return float(self._info()["threshold"])
