#!/usr/bin/env python3
"""Writes to a shard set beside the same writes to one index (issue 59, item 6), in one run on
the same documents (docs/benchmarks.md, "Writes to a shard set").

    build/bench-venv/bin/python bench/bench_shard_writes.py [--docs 20000] [--shards 3] [--work DIR]

1. DOCS dictionary sentences (`sieve corpus build`, as bench_filter.py), each with a metadata
   field "bucket" (0..99), built with the default model (HNSW32, no token store) into one index
   and into a set of SHARDS shards (kept between runs in WORK).
2. On a fresh copy of each, one after the other, one thread: adds of new documents (batches of
   100, encoding included), upserts of held ids (batches of 100), deletes by id (batches of
   1,000), a delete by filter (1% of the documents), then a compaction; each as documents per
   second (the compaction: seconds), and dense search p50 before and after.
One JSON object per line on stdout; the last, "summary", puts the set's figures beside the index's.
"""
import argparse
import json
import os
import shutil
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "build", "python"))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import sieve  # noqa: E402
from bench_filter import emit, sentences  # noqa: E402


def p50_ms(ix, queries):
    times = []
    for q in queries:
        t0 = time.perf_counter()
        ix.search(q, k=10, mode="dense")
        times.append((time.perf_counter() - t0) * 1000)
    return float(np.percentile(times, 50))


def run(kind, src, work, texts, docs, queries):
    d = os.path.join(work, f"w-{kind}")
    shutil.rmtree(d, ignore_errors=True)
    shutil.copytree(src, d)
    ix = sieve.Index.open(d)
    out = {"kind": kind, "search_p50_ms_before": p50_ms(ix, queries)}

    def timed(name, count, fn):
        t0 = time.perf_counter()
        fn()
        dt = time.perf_counter() - t0
        out[name + "_per_second"] = count / dt
        emit(case=name, index=kind, documents=count, seconds=dt, per_second=count / dt)

    new = [{"_id": f"n{i}", "text": texts[docs + i], "metadata": {"bucket": i % 100}} for i in range(2000)]
    timed("add", len(new), lambda: [ix.add(new[b:b + 100]) for b in range(0, len(new), 100)])
    up = [{"_id": str(i), "text": texts[i] + " (revised)", "metadata": {"bucket": 7}} for i in range(1, 4001, 2)]
    timed("upsert", len(up), lambda: [ix.upsert(up[b:b + 100]) for b in range(0, len(up), 100)])
    ids = [str(i) for i in range(0, docs, 4)]
    timed("delete", len(ids), lambda: [ix.delete(ids[b:b + 1000]) for b in range(0, len(ids), 1000)])
    passing = len(ix.ids({"bucket": 3}))
    timed("delete_by_filter", passing, lambda: ix.delete(filter={"bucket": 3}))
    t0 = time.perf_counter()
    rep = ix.compact()
    out["compact_seconds"] = time.perf_counter() - t0
    emit(case="compact", index=kind, **rep)
    out["search_p50_ms_after"] = p50_ms(ix, queries)
    out["documents"] = len(ix)
    emit(case="writes", **out)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=20000)
    ap.add_argument("--shards", type=int, default=3)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--work", default="/tmp/sieve_bench_shard_writes")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    sieve.set_threads(1)
    texts = sentences(args.work, args.docs + 2000 + args.queries)
    rng = np.random.default_rng(59)
    buckets = rng.integers(0, 100, size=args.docs)
    corpus = os.path.join(args.work, f"corpus-{args.docs}.jsonl")
    if not os.path.exists(corpus):
        with open(corpus + ".tmp", "w", encoding="utf-8") as f:
            for i in range(args.docs):
                f.write(json.dumps({"_id": str(i), "text": texts[i], "metadata": {"bucket": int(buckets[i])}}) + "\n")
        os.rename(corpus + ".tmp", corpus)
    built = {}
    for kind, shards in (("one", 1), ("set", args.shards)):
        d = os.path.join(args.work, f"{kind}-{args.docs}-{shards}")
        if not os.path.exists(d):
            t0 = time.perf_counter()
            sieve.Index.build(corpus, d + ".tmp", vector_factory="HNSW32", store_tokens=False, shards=shards,
                              open=False, force=True)
            os.rename(d + ".tmp", d)
            emit(case="build", index=kind, shards=shards, docs=args.docs, seconds=time.perf_counter() - t0)
        built[kind] = d
    queries = texts[args.docs + 2000:args.docs + 2000 + args.queries]
    one = run("one", built["one"], args.work, texts, args.docs, queries)
    s = run("set", built["set"], args.work, texts, args.docs, queries)
    emit(case="summary", shards=args.shards, docs=args.docs,
         **{f"{k}_set_over_one": s[k] / one[k] for k in one if isinstance(one[k], float) and one[k] > 0})


if __name__ == "__main__":
    main()
