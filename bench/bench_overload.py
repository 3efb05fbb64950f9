#!/usr/bin/env python3
"""`sieve serve` under a misbehaving client (issue 31, item 5): 64 well-behaved connections of mixed
traffic (dense, BM25 and gated hybrid searches, TEI /embed, /v1/verify), measured calm and while
one client misbehaves with its own key (rate 5/s, 2 in flight, in the key file):

  flood      8 connections sending searches back to back (its limits answer 429)
  huge       bodies over --max-body (413), bodies of 600 texts (422 over --max-texts), and a
             1 MB text to embed, one after the other on 2 connections
  slowloris  16 connections that send a request's headers a byte every 200 ms, never finishing
  slowread   2 connections that ask for 64 embeddings (a 250 KB answer) and read it 1 KB a second

Calm and storm runs alternate (--rounds, 2 each: a shared machine's speed drifts). Prints one
JSON line per run (requests, QPS, p50/p90/p99 in ms overall and per kind, errors, the server's
CPU seconds) and one for the misbehaving client (what it was answered; it runs in a process of
its own), then the verdict over the pooled rounds: the storm's p99 over the calm runs' (the
goal: at most 2).
Standard library only (asyncio sockets).

  bench/bench_overload.py --index DIR [--seconds 20] [--rounds 2] [--connections 64]
                          [--storm flood,huge,slowloris,slowread] [--serve-args "..."] [--out FILE]

DIR: an index of SciFact (bench/bench_ray_serve.sh builds one at /tmp/sieve_bench_ray_serve/one);
queries from ../shared/data/retrieval/scifact/queries.jsonl.
"""
import argparse
import asyncio
import json
import multiprocessing
import os
import random
import resource
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


async def misbehave(port, queries, until, max_body, parts):
    seen = {}
    tasks = []
    if "flood" in parts:
        tasks += [asyncio.create_task(flood(port, queries[i], until, seen)) for i in range(8)]
    if "huge" in parts:
        tasks += [asyncio.create_task(huge(port, max_body, until, seen)) for _ in range(2)]
    if "slowloris" in parts:
        tasks += [asyncio.create_task(slowloris(port, until, seen)) for _ in range(16)]
    if "slowread" in parts:
        tasks += [asyncio.create_task(slowread(port, queries[:64], until, seen)) for _ in range(2)]
    await asyncio.gather(*tasks)
    for k, v in list(seen.items()):
        if isinstance(v, list):
            seen[k] = {"n": len(v), "max": max(v), "mean": round(sum(v) / len(v), 1)}
    return seen


def misbehaving_process(port, queries, seconds, max_body, parts, out):
    """The misbehaving client in a process of its own (its event loop must not delay the others')."""
    seen = asyncio.run(misbehave(port, queries, time.monotonic() + seconds, max_body, parts))
    ru = resource.getrusage(resource.RUSAGE_SELF)
    seen["its own cpu_s"] = round(ru.ru_utime + ru.ru_stime, 1)
    out.put(seen)


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def run(port, queries, seconds, connections, seed):
    rng = random.Random(seed)
    until = time.monotonic() + seconds
    goods = [Good(port, queries, random.Random(rng.random())) for _ in range(connections)]
    t0 = time.monotonic()
    await asyncio.gather(*[g.run(until) for g in goods])
    wall = time.monotonic() - t0
    lat, errors = {}, {}
    for g in goods:
        for k, v in g.lat.items():
            lat.setdefault(k, []).extend(v)
        for k, v in g.errors.items():
            errors[str(k)] = errors.get(str(k), 0) + v
    every = [x for v in lat.values() for x in v]
    return every, {"connections": connections, "seconds": round(wall, 1),
            "requests": len(every), "qps": round(len(every) / wall, 1),
            "p50_ms": round(percentile(every, 50), 1), "p90_ms": round(percentile(every, 90), 1),
            "p99_ms": round(percentile(every, 99), 1), "errors": errors,
            "by_kind": {k: {"n": len(v), "p50_ms": round(percentile(v, 50), 1), "p99_ms": round(percentile(v, 99), 1)}
                        for k, v in sorted(lat.items())}}


def measured(name, proc, port, queries, seconds, connections, storm=None):
    """One run of the well-behaved connections, with the server's CPU seconds over it."""
    c0 = cpu_seconds(proc.pid)
    every, out = asyncio.run(run(port, queries, seconds, connections, 2))
    out = {"run": name, **out, "server_cpu_s": round(cpu_seconds(proc.pid) - c0, 1)}
    if storm:
        storm.join(60)
    return every, out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--index", required=True, help="index directory to serve")
    ap.add_argument("--seconds", type=float, default=20, help="length of each run (default 20)")
    ap.add_argument("--connections", type=int, default=64, help="well-behaved connections (default 64)")
    ap.add_argument("--queries", default=os.path.join(ROOT, "..", "shared", "data", "retrieval", "scifact", "queries.jsonl"))
    ap.add_argument("--cli", default=os.environ.get("SIEVE_CLI", os.path.join(ROOT, "build", "sieve")))
    ap.add_argument("--serve-args", default="", help="more sieve serve options")
    ap.add_argument("--rounds", type=int, default=2, help="calm and storm runs, alternating (default 2 each)")
    ap.add_argument("--storm", default="flood,huge,slowloris,slowread",
                    help="what the misbehaving client does (default: all of flood,huge,slowloris,slowread)")
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
        asyncio.run(run(port, queries, 3, 8, 1))  # warm-up
        # Calm and storm alternate (a shared machine's speed drifts): the verdict pools the rounds.
        pooled = {"calm": [], "storm": []}
        for r in range(a.rounds):
            every, calm = measured("calm", proc, port, queries, a.seconds, a.connections)
            pooled["calm"] += every
            lines.append({**calm, "round": r + 1})
            time.sleep(2)
            seen_q = multiprocessing.Queue()
            bad = multiprocessing.Process(target=misbehaving_process,
                                          args=(port, queries, a.seconds, max_body, a.storm.split(","), seen_q))
            bad.start()
            every, storm = measured("storm", proc, port, queries, a.seconds, a.connections, bad)
            pooled["storm"] += every
            lines.append({**storm, "round": r + 1})
            lines.append({"run": "misbehaving client", "round": r + 1, "answers": seen_q.get(timeout=60)})
            time.sleep(2)
        p = {k: (percentile(v, 50), percentile(v, 99)) for k, v in pooled.items()}
        lines.append({"verdict": {"rounds": a.rounds, "calm_p50_ms": round(p["calm"][0], 1),
                                  "calm_p99_ms": round(p["calm"][1], 1), "storm_p50_ms": round(p["storm"][0], 1),
                                  "storm_p99_ms": round(p["storm"][1], 1),
                                  "p99_ratio": round(p["storm"][1] / p["calm"][1], 2),
                                  "p50_ratio": round(p["storm"][0] / p["calm"][0], 2),
                                  "calm_requests": len(pooled["calm"]), "storm_requests": len(pooled["storm"]),
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
