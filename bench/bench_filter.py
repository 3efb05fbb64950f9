#!/usr/bin/env python3
"""Filtered dense search, deletes, upserts and compaction (issue 59), beside FAISS's IDSelector
search and hnswlib's filter, in one run on the same keys (docs/benchmarks.md, "Filters").

    build/bench-venv/bin/python bench/bench_filter.py [--docs 100000] [--queries 200] [--work DIR]

1. A corpus of DOCS dictionary sentences (`sieve corpus build`), each with a metadata field
   "bucket" (0..9999, drawn at random): a filter {"bucket": {"$lt": B}} passes B / 10,000 of them.
   Built once into WORK/ix with the default model (HNSW32, no token store) and kept between runs.
2. The same keys (Index.keys()) in FAISS (IndexHNSWFlat M=32, efConstruction 80, and IndexFlatIP)
   and hnswlib (M=32, ef_construction 80); queries are other sentences, encoded by the same model.
3. Per selectivity 100 / 10 / 1 / 0.1 / 0.01 %: recall@10 against the exact filtered top 10
   (NumPy over the passing keys) and p50 / p99 latency of one query at a time on one thread:
   sieve (its planner; and each side of it forced: scan, walk), FAISS HNSW with an
   IDSelectorBitmap at several efSearch, FAISS flat with the selector, hnswlib with a filter
   callback at several ef.
4. Then, on a copy of the index: delete throughput (batches of 1,000 ids), upsert throughput
   (batches of 100, encoding included), dense search latency while a compaction of the half
   deleted index runs, and the compaction's time and the process's peak RSS growth.
One JSON object per line on stdout; a last line "summary" holds, per selectivity, sieve's p50 and
recall beside the fastest anchor setting that reaches recall 0.95.
"""
import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import threading
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "build", "python"))
import sieve  # noqa: E402

SELECTIVITIES = [1.0, 0.1, 0.01, 0.001, 0.0001]
BUCKETS = 10000


def emit(**kv):
    print(json.dumps(kv), flush=True)


def distinct_lines(lines, need, seen=None, out=None):
    """Appends the non-empty, stripped, not yet seen `lines` to `out` until it holds `need`."""
    seen = set() if seen is None else seen
    out = [] if out is None else out
    for line in lines:
        line = line.strip()
        if len(out) >= need:
            break
        if line and line not in seen:
            seen.add(line)
            out.append(line)
    return out


def sentences(work, need):
    """`need` distinct dictionary sentences (sieve corpus build), cached in WORK."""
    path = os.path.join(work, "dict", "sentences.txt")
    if not os.path.exists(path):
        subprocess.run([os.path.join(ROOT, "build", "sieve"), "corpus", "build", "--out", os.path.join(work, "dict")],
                       check=True, stdout=subprocess.DEVNULL)
    with open(path, encoding="utf-8") as f:
        out = distinct_lines(f, need)
    if len(out) < need:
        sys.exit(f"bench_filter: only {len(out)} distinct sentences; ask for fewer --docs")
    return out


def timed(fn, queries):
    """Per-query seconds of fn(q) (one query at a time) and its answers."""
    times, answers = [], []
    for q in queries:
        t0 = time.perf_counter()
        answers.append(fn(q))
        times.append(time.perf_counter() - t0)
    t = np.array(times) * 1000
    return float(np.percentile(t, 50)), float(np.percentile(t, 99)), answers


def recall(answers, truth):
    hit = total = 0
    for a, t in zip(answers, truth):
        want = set(int(x) for x in t if x >= 0)
        hit += len(want & set(int(x) for x in a if x >= 0))
        total += len(want)
    return hit / total if total else 1.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=100000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--work", default="/tmp/sieve_bench_filter")
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--skip-writes", action="store_true", help="only the filtered search")
    args = ap.parse_args()
    import faiss
    import hnswlib

    os.makedirs(args.work, exist_ok=True)
    sieve.set_threads(1)
    faiss.omp_set_num_threads(1)
    texts = sentences(args.work, args.docs + args.queries)
    rng = np.random.default_rng(59)
    buckets = rng.integers(0, BUCKETS, size=args.docs)
    ix_dir = os.path.join(args.work, f"ix-{args.docs}")
    if not os.path.exists(ix_dir):
        t0 = time.perf_counter()
        docs = ({"_id": str(i), "text": texts[i], "metadata": {"bucket": int(buckets[i])}} for i in range(args.docs))
        sieve.Index.build(docs, ix_dir + ".tmp", vector_factory="HNSW32", store_tokens=False, open=False, force=True)
        os.rename(ix_dir + ".tmp", ix_dir)
        emit(case="build", docs=args.docs, seconds=time.perf_counter() - t0)
    ix = sieve.Index.open(ix_dir)
    keys = np.ascontiguousarray(ix.keys(), dtype=np.float32)
    n, dim = keys.shape
    enc = sieve.Encoder.load()
    Q = np.ascontiguousarray(enc.encode(texts[args.docs:args.docs + args.queries]), dtype=np.float32)
    k = args.k

    t0 = time.perf_counter()
    fhnsw = faiss.IndexHNSWFlat(dim, 32, faiss.METRIC_INNER_PRODUCT)
    fhnsw.hnsw.efConstruction = 80
    faiss.omp_set_num_threads(os.cpu_count() or 1)
    fhnsw.add(keys)
    faiss.omp_set_num_threads(1)
    fflat = faiss.IndexFlatIP(dim)
    fflat.add(keys)
    hn = hnswlib.Index(space="ip", dim=dim)
    hn.init_index(max_elements=n, M=32, ef_construction=80, random_seed=59)
    hn.add_items(keys, np.arange(n), num_threads=os.cpu_count() or 1)
    hn.set_num_threads(1)
    emit(case="anchors_built", seconds=time.perf_counter() - t0, faiss=faiss.__version__, hnswlib="0.8.0")

    rows = []
    for s in SELECTIVITIES:
        limit = int(round(s * BUCKETS))
        mask = buckets < limit
        passing = int(mask.sum())
        filt = json.dumps({"bucket": {"$lt": limit}})
        pidx = np.nonzero(mask)[0]
        sub = keys[pidx]
        truth = []
        for q in Q:
            sc = sub @ q
            top = np.argsort(-sc, kind="stable")[:k]
            truth.append(pidx[top])
        base = dict(selectivity=s, passing=passing)

        def add(engine, setting, p50, p99, answers):
            r = dict(base, engine=engine, setting=setting, recall=recall(answers, truth), p50_ms=p50, p99_ms=p99)
            rows.append(r)
            emit(case="filtered_search", **r)

        for plan in ("auto", "scan", "walk"):
            p50, p99, ans = timed(lambda q: ix._impl._dense_lists(q[None, :], k, filt, plan)[0][0], Q)
            add("sieve", plan, p50, p99, ans)
        bitmap = np.packbits(mask.astype(np.uint8), bitorder="little")
        sel = faiss.IDSelectorBitmap(n, faiss.swig_ptr(bitmap))
        for ef in (16, 64, 256, 1024, 4096):
            params = faiss.SearchParametersHNSW(sel=sel, efSearch=ef)
            p50, p99, ans = timed(lambda q: fhnsw.search(q[None, :], k, params=params)[1][0], Q)
            add("faiss-hnsw", f"ef{ef}", p50, p99, ans)
        fparams = faiss.SearchParameters(sel=sel)
        p50, p99, ans = timed(lambda q: fflat.search(q[None, :], k, params=fparams)[1][0], Q)
        add("faiss-flat", "exact", p50, p99, ans)
        allowed = mask.tolist()
        for ef in (16, 64, 256, 1024, 4096):
            hn.set_ef(ef)

            def hq(q):
                try:
                    return hn.knn_query(q[None, :], k=min(k, passing), filter=lambda i: allowed[i])[0][0]
                except RuntimeError:  # fewer than k found
                    return np.array([], dtype=np.int64)
            p50, p99, ans = timed(hq, Q)
            add("hnswlib", f"ef{ef}", p50, p99, ans)

    summary = []
    for s in SELECTIVITIES:
        here = [r for r in rows if r["selectivity"] == s]
        mine = next(r for r in here if r["engine"] == "sieve" and r["setting"] == "auto")
        good = [r for r in here if r["engine"] != "sieve" and r["recall"] >= 0.95]
        best = min(good, key=lambda r: r["p50_ms"]) if good else None
        summary.append({"selectivity": s, "sieve_p50_ms": mine["p50_ms"], "sieve_p99_ms": mine["p99_ms"],
                        "sieve_recall": mine["recall"],
                        "best_anchor": None if best is None else f"{best['engine']} {best['setting']}",
                        "anchor_p50_ms": None if best is None else best["p50_ms"],
                        "anchor_p99_ms": None if best is None else best["p99_ms"],
                        "anchor_recall": None if best is None else best["recall"]})
    emit(case="summary", rows=summary)
    if args.skip_writes:
        return

    # Writes and compaction on a copy.
    copy = os.path.join(args.work, "ix-writes")
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(ix_dir, copy)
    w = sieve.Index.open(copy)
    ids = [str(i) for i in range(0, n, 2)]
    t0 = time.perf_counter()
    for b in range(0, len(ids), 1000):
        w.delete(ids[b:b + 1000])
    dt = time.perf_counter() - t0
    emit(case="delete", documents=len(ids), batch=1000, seconds=dt, per_second=len(ids) / dt)
    up = [{"_id": str(i), "text": texts[i] + " (revised)", "metadata": {"bucket": 1}} for i in range(1, 2001, 2)]
    t0 = time.perf_counter()
    for b in range(0, len(up), 100):
        w.upsert(up[b:b + 100])
    dt = time.perf_counter() - t0
    emit(case="upsert", documents=len(up), batch=100, seconds=dt, per_second=len(up) / dt)
    # Search latency while the half-deleted index is compacted in this process.
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    quiet = timed(lambda q: w._impl._dense_lists(q[None, :], k, "", "auto")[0][0], Q)[:2]
    report = {}
    th = threading.Thread(target=lambda: report.update(w.compact()))
    th.start()
    during = []
    while th.is_alive():
        t1 = time.perf_counter()
        w._impl._dense_lists(Q[len(during) % len(Q)][None, :], k, "", "auto")
        during.append((time.perf_counter() - t1) * 1000)
    th.join()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    emit(case="search_during_compaction", quiet_p50_ms=quiet[0], quiet_p99_ms=quiet[1],
         during_p50_ms=float(np.percentile(during, 50)) if during else None,
         during_p99_ms=float(np.percentile(during, 99)) if during else None, searches=len(during))
    emit(case="compaction", **report, seconds_per_100k_documents=report["seconds"] * 100000 / max(1, report["documents_before"]),
         peak_rss_growth_mb=(peak - before) / 1024)


if __name__ == "__main__":
    main()
