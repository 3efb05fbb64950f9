#!/usr/bin/env python3
"""`sieve serve` under a misbehaving client (issue 31, item 5): 64 well-behaved connections of mixed
traffic (dense, BM25 and gated hybrid searches, TEI /embed, /v1/verify) measured twice, calm and
while one client misbehaves with its own key (rate and concurrency limited in the key file):

  flood      8 connections sending searches back to back (its limits answer 429)
  huge       bodies over --max-body (413), bodies of 600 texts (422 over --max-texts), and a
             1 MB text to embed, one after the other on 2 connections
  slowloris  16 connections that send a request's headers a byte every 200 ms, never finishing
  slowread   2 connections that ask for 256 embeddings and read the answer 1 KB a second

Prints one JSON line per run (requests, QPS, p50/p90/p99 in ms overall and per kind, errors) and
one for the misbehaving client (what it was answered), then the verdict: the storm's p99 over the
calm run's (the goal: at most 2). Standard library only (asyncio sockets).

  bench/bench_overload.py --index DIR [--seconds 20] [--connections 64] [--out FILE]

DIR: an index of SciFact (bench/bench_ray_serve.sh builds one at /tmp/sieve_bench_ray_serve/one);
queries from ../shared/data/retrieval/scifact/queries.jsonl.
"""
import argparse
import asyncio
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def percentile(xs, p):
    if not xs:
        return None
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


async def read_response(reader):
    """Status and body of one HTTP/1.1 response (Content-Length framed, as sieve serve answers)."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    length = 0
    close = False
    for line in lines[1:]:
        k, _, v = line.partition(":")
        if k.strip().lower() == "content-length":
            length = int(v)
        if k.strip().lower() == "connection" and v.strip().lower() == "close":
            close = True
    body = await reader.readexactly(length) if length else b""
    return status, body, close


def request(path, body, key):
    data = json.dumps(body).encode()
    return (f"POST {path} HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer {key}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n").encode() + data


class Good:
    """One well-behaved connection: a mix of requests, back to back, each one timed."""

    def __init__(self, port, queries, rng):
        self.port, self.queries, self.rng = port, queries, rng
        self.lat = {}  # kind -> [ms]
        self.errors = {}

    def next_request(self):
        q = self.rng.choice(self.queries)
        r = self.rng.random()
        if r < 0.35:
            return "dense", request("/v1/search", {"query": q, "mode": "dense", "k": 10}, "good")
        if r < 0.55:
            return "bm25", request("/v1/search", {"query": q, "mode": "bm25", "k": 10}, "good")
        if r < 0.70:
            return "hybrid_gate", request("/v1/search", {"query": q, "mode": "hybrid", "k": 10, "gate": True,
                                                          "candidates": 50}, "good")
        if r < 0.90:
            return "embed", request("/embed", {"inputs": [q]}, "good")
        return "verify", request("/v1/verify", {"pairs": [[q, self.rng.choice(self.queries)]]}, "good")

    async def run(self, until):
        reader = writer = None
        while time.monotonic() < until:
            if writer is None:
                reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
            kind, req = self.next_request()
            t0 = time.monotonic()
            writer.write(req)
            await writer.drain()
            status, _, close = await read_response(reader)
            ms = 1000 * (time.monotonic() - t0)
            if status == 200:
                self.lat.setdefault(kind, []).append(ms)
            else:
                self.errors[status] = self.errors.get(status, 0) + 1
            if close:
                writer.close()
                writer = None
        if writer:
            writer.close()


async def flood(port, query, until, seen):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    while time.monotonic() < until:
        writer.write(request("/v1/search", {"query": query, "mode": "hybrid", "gate": True, "k": 10}, "bad"))
        await writer.drain()
        status, _, close = await read_response(reader)
        seen[f"flood {status}"] = seen.get(f"flood {status}", 0) + 1
        if close:
            writer.close()
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.close()


async def huge(port, max_body, until, seen):
    bodies = [
        ("over max-body", None),
        ("600 texts", request("/embed", {"inputs": ["some text to embed"] * 600}, "bad")),
        ("1 MB text", request("/embed", {"inputs": ["word " * 200000], "truncate": True}, "bad")),
    ]
    chunk = b"x" * 65536
    i = 0
    while time.monotonic() < until:
        name, req = bodies[i % len(bodies)]
        i += 1
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            if req is None:  # a body 4 times the limit, streamed as fast as the server takes it
                n = 4 * max_body
                writer.write((f"POST /v1/search HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer bad\r\n"
                              f"Content-Type: application/json\r\nContent-Length: {n}\r\n\r\n").encode())
                sent = 0
                while sent < n and time.monotonic() < until:
                    writer.write(chunk)
                    await writer.drain()
                    sent += len(chunk)
            else:
                writer.write(req)
                await writer.drain()
            status, _, _ = await asyncio.wait_for(read_response(reader), 30)
            seen[f"huge {name} {status}"] = seen.get(f"huge {name} {status}", 0) + 1
            writer.close()
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.TimeoutError) as e:
            seen[f"huge {name} {type(e).__name__}"] = seen.get(f"huge {name} {type(e).__name__}", 0) + 1


async def slowloris(port, until, seen):
    head = b"POST /v1/search HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer bad\r\n" + b"X-Slow: " + b"a" * 4000
    while time.monotonic() < until:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        seen["slowloris connections"] = seen.get("slowloris connections", 0) + 1
        t0 = time.monotonic()
        try:
            for b in head:
                if time.monotonic() >= until:
                    break
                writer.write(bytes([b]))
                await writer.drain()
                await asyncio.sleep(0.2)
                if reader.at_eof():
                    break
        except ConnectionError:
            pass
        seen.setdefault("slowloris held s", []).append(round(time.monotonic() - t0, 1))
        writer.close()


async def slowread(port, texts, until, seen):
    while time.monotonic() < until:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(request("/v1/embeddings", {"input": texts}, "bad"))
        await writer.drain()
        got = 0
        try:
            while time.monotonic() < until:
                b = await reader.read(1024)
                if not b:
                    break
                got += len(b)
                await asyncio.sleep(1)
        except ConnectionError:
            pass
        seen.setdefault("slowread bytes", []).append(got)
        writer.close()


async def run(port, queries, seconds, connections, storm, max_body, seed):
    rng = random.Random(seed)
    until = time.monotonic() + seconds
    goods = [Good(port, queries, random.Random(rng.random())) for _ in range(connections)]
    tasks = [asyncio.create_task(g.run(until)) for g in goods]
    seen = {}
    if storm:
        tasks += [asyncio.create_task(flood(port, queries[i], until, seen)) for i in range(8)]
        tasks += [asyncio.create_task(huge(port, max_body, until, seen)) for _ in range(2)]
        tasks += [asyncio.create_task(slowloris(port, until, seen)) for _ in range(16)]
        tasks += [asyncio.create_task(slowread(port, queries[:256], until, seen)) for _ in range(2)]
    t0 = time.monotonic()
    await asyncio.gather(*tasks[:connections])  # the well-behaved connections' window
    wall = time.monotonic() - t0
    await asyncio.gather(*tasks[connections:])  # the misbehaving ones end at `until` or their timeouts
    lat, errors = {}, {}
    for g in goods:
        for k, v in g.lat.items():
            lat.setdefault(k, []).extend(v)
        for k, v in g.errors.items():
            errors[str(k)] = errors.get(str(k), 0) + v
    every = [x for v in lat.values() for x in v]
    out = {"run": "storm" if storm else "calm", "connections": connections, "seconds": round(wall, 1),
           "requests": len(every), "qps": round(len(every) / wall, 1),
           "p50_ms": round(percentile(every, 50), 1), "p90_ms": round(percentile(every, 90), 1),
           "p99_ms": round(percentile(every, 99), 1), "errors": errors,
           "by_kind": {k: {"n": len(v), "p50_ms": round(percentile(v, 50), 1), "p99_ms": round(percentile(v, 99), 1)}
                       for k, v in sorted(lat.items())}}
    for k, v in list(seen.items()):
        if isinstance(v, list):
            seen[k] = {"n": len(v), "max": max(v), "mean": round(sum(v) / len(v), 1)}
    return out, seen


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--index", required=True, help="index directory to serve")
    ap.add_argument("--seconds", type=float, default=20, help="length of each run (default 20)")
    ap.add_argument("--connections", type=int, default=64, help="well-behaved connections (default 64)")
    ap.add_argument("--queries", default=os.path.join(ROOT, "..", "shared", "data", "retrieval", "scifact", "queries.jsonl"))
    ap.add_argument("--cli", default=os.environ.get("SIEVE_CLI", os.path.join(ROOT, "build", "sieve")))
    ap.add_argument("--serve-args", default="", help="more sieve serve options")
    ap.add_argument("--out", help="also write the JSON lines here")
    a = ap.parse_args()
    queries = [json.loads(line)["text"] for line in open(a.queries)][:500]
    work = tempfile.mkdtemp(prefix="sieve_overload_")
    keys = os.path.join(work, "keys")
    with open(keys, "w") as f:  # the good clients' key has no limits; the bad one's are its line's
        f.write("good read rate=0 concurrent=0\nbad read rate=5 burst=5 concurrent=2\n")
    max_body = 16 << 20
    log = open(os.path.join(work, "serve.log"), "w")
    proc = subprocess.Popen([a.cli, "serve", "--index", a.index, "--port", "0", "--api-key-file", keys,
                             "--max-body", str(max_body), *a.serve_args.split()], stderr=log, stdout=subprocess.DEVNULL)
    try:
        port = None
        for _ in range(600):
            text = open(log.name).read()
            m = re.search(r"127\.0\.0\.1:(\d+)", text)
            if "ready" in text and m:
                port = int(m.group(1))
                break
            if proc.poll() is not None:
                sys.exit("bench_overload: sieve serve exited: " + text)
            time.sleep(0.2)
        if not port:
            sys.exit("bench_overload: sieve serve did not get ready")
        lines = []
        asyncio.run(run(port, queries, 3, 8, False, max_body, 1))  # warm-up
        calm, _ = asyncio.run(run(port, queries, a.seconds, a.connections, False, max_body, 2))
        lines.append(calm)
        time.sleep(2)
        storm, seen = asyncio.run(run(port, queries, a.seconds, a.connections, True, max_body, 2))
        lines.append(storm)
        lines.append({"run": "misbehaving client", "answers": seen})
        lines.append({"verdict": {"p99_ratio": round(storm["p99_ms"] / calm["p99_ms"], 2),
                                  "p50_ratio": round(storm["p50_ms"] / calm["p50_ms"], 2),
                                  "goal_p99_ratio_at_most": 2}})
        text = "\n".join(json.dumps(x) for x in lines) + "\n"
        sys.stdout.write(text)
        if a.out:
            with open(a.out, "w") as f:
                f.write(text)
    finally:
        proc.terminate()
        proc.wait(30)


if __name__ == "__main__":
    main()
