#!/usr/bin/env python3
"""sieve's semantic cache beside the cosine-threshold caches people use (issue 60), in one run on
the same pairs (docs/benchmarks.md, "Semantic cache").

    build/bench-venv/bin/python bench/bench_cache.py [--work DIR] [--entries 10000]

1. The pair sets the gate's recipe holds out, made here from ../shared/data exactly as
   scripts/train-gate.sh makes them (`sieve eval paraphrase-sets`, eval parts only): QQP, MRPC,
   PAWS, CondaQA, the cannot negations, the mixed set; and question twins of QQP's eval questions
   (`sieve nearmiss generate` with the recipe's kinds: a negation, another wh-word, a role swap,
   another number, another entity), each against its question, label 0, beside QQP's duplicates.
2. One entry per pair: the first question cached, the second looked up. A cache hit is a "true
   hit" when the pair is a paraphrase (label 1) and a "false hit" otherwise. The caches:
   - cosine at GPTCache's default (similarity_threshold 0.8 with its distance evaluation over
     FAISS L2 on unit keys: a hit when 4 - (2 - 2 cos) >= 3.2, i.e. cos >= 0.6);
   - cosine at redisvl's SemanticCache default (distance_threshold 0.1: cos >= 0.9);
   - cosine at the threshold whose true-hit rate on the set equals sieve's ("matched");
   - sieve: the default model's shipped gate at its calibrated threshold (the fast gate).
3. QQP whole: every eval first question stored in one sieve.Cache, every second one looked up
   (and, for the cosine caches, the dense top 1 of the same entries at their thresholds): false
   hits now also count another cached question served (another question on the topic).
4. Lookup latency (p50 / p99, one thread) and store throughput of sieve.Cache at `--entries`
   entries (dictionary sentences), beside the cosine cache's lookup (the same index, dense top 1).
One JSON object per line on stdout; the last, "summary", holds per set each cache's rates.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "build", "python"))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import sieve  # noqa: E402
from bench_filter import distinct_lines, emit, sentences  # noqa: E402

CLI = os.path.join(ROOT, "build", "sieve")
SETS = ["qqp", "qtwins", "mrpc", "paws", "condaqa", "cannot", "mixed", "sts", "long", "longq"]
QNEAR = "question_negation,wh_swap,question_role_swap,number_change,entity_swap"
GPTCACHE_COS = 0.6   # similarity_threshold 0.8 of max_distance 4 over squared L2 of unit keys
REDISVL_COS = 0.9    # distance_threshold 0.1 of cosine distance


def read_pairs(path):
    rows = []
    with open(path, encoding="utf-8") as f:
        next(f)
        for line in f:
            p = line.rstrip("\n").split("\t")
            if len(p) >= 4:
                rows.append((p[0], p[1], p[2], int(p[3])))
    return rows


def make_sets(work):
    sets_dir = os.path.join(work, "sets")
    if not os.path.exists(os.path.join(sets_dir, "report.json")):
        subprocess.run([CLI, "eval", "paraphrase-sets", "--shared", os.path.join(ROOT, "..", "shared", "data"),
                        "--out", sets_dir], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    twins = os.path.join(sets_dir, "qtwins-eval.tsv")
    if not os.path.exists(twins):
        qqp = read_pairs(os.path.join(sets_dir, "qqp-eval.tsv"))
        questions = list(dict.fromkeys(q for a, b, _, _ in qqp for q in (a, b)))
        qfile = os.path.join(work, "qqp-eval-questions.txt")
        with open(qfile, "w", encoding="utf-8") as f:
            f.write("\n".join(questions) + "\n")
        raw = os.path.join(work, "qtwins-eval.raw.tsv")
        subprocess.run([CLI, "nearmiss", "generate", "--in", qfile, "--kinds", QNEAR, "--seed", "42",
                        "--max-per-category", "600", "--out", raw], check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        with open(twins + ".tmp", "w", encoding="utf-8") as out:
            out.write("sentence1\tsentence2\tcategory\tlabel\n")
            for a, b, cat, label in qqp:
                if label == 1:
                    out.write(f"{a}\t{b}\tqqp_paraphrase\t1\n")
            with open(raw, encoding="utf-8") as f:  # sentence1, sentence2, category
                next(f)
                for line in f:
                    a, b, cat = line.rstrip("\n").split("\t")[:3]
                    out.write(f"{a}\t{b}\tqtwin_{cat}\t0\n")
        os.rename(twins + ".tmp", twins)
    sts = os.path.join(sets_dir, "sts-eval.tsv")  # STS Benchmark test's clear ends, as the recipe's sts-eval
    if not os.path.exists(sts):
        with open(os.path.join(ROOT, "..", "shared", "data", "pairs", "stsb-test.tsv"), encoding="utf-8") as f, \
                open(sts + ".tmp", "w", encoding="utf-8") as out:
            next(f)
            out.write("sentence1\tsentence2\tcategory\tlabel\n")
            for line in f:
                p = line.rstrip("\r\n").split("\t")  # (some of the files end their lines with CR LF)
                if len(p) >= 3 and (float(p[0]) >= 4 or float(p[0]) <= 2):
                    same = float(p[0]) >= 4
                    out.write(f"{p[1]}\t{p[2]}\tsts_{'same' if same else 'different'}\t{int(same)}\n")
        os.rename(sts + ".tmp", sts)
    for name, sources, count in (("long", ["qqp", "qtwins", "mrpc"], 800), ("longq", ["qqp"], 533)):
        path = os.path.join(sets_dir, f"{name}-eval.tsv")  # multi-sentence pairs, as the recipe's
        if not os.path.exists(path):
            subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "long-pairs.py"), "--pairs",
                            *[os.path.join(sets_dir, f"{s}-eval.tsv") for s in sources], "--count", str(count),
                            "--seed", "42", "--out", path], check=True, stderr=subprocess.DEVNULL)
    return {s: read_pairs(os.path.join(sets_dir, f"{s}-eval.tsv")) for s in SETS
            if os.path.exists(os.path.join(sets_dir, f"{s}-eval.tsv"))}


def rates(accepted, labels):
    labels = np.asarray(labels, dtype=bool)
    accepted = np.asarray(accepted, dtype=bool)
    pos, neg = labels.sum(), (~labels).sum()
    return {"true_hit": float((accepted & labels).sum() / pos) if pos else None,
            "false_hit": float((accepted & ~labels).sum() / neg) if neg else None,
            "positives": int(pos), "negatives": int(neg)}


def roc_auc(scores, labels):
    """ROC-AUC by ranks (ties count one half); None with one class only."""
    scores, labels = np.asarray(scores, dtype=np.float64), np.asarray(labels, dtype=bool)
    pos, neg = int(labels.sum()), int((~labels).sum())
    if not pos or not neg:
        return None
    order = np.argsort(scores, kind="mergesort")
    ranks = np.empty(len(scores))
    s = scores[order]
    i = 0
    while i < len(s):
        j = i
        while j < len(s) and s[j] == s[i]:
            j += 1
        ranks[order[i:j]] = (i + 1 + j) / 2.0
        i = j
    return float((ranks[labels].sum() - pos * (pos + 1) / 2.0) / (pos * neg))


def matched_threshold(cos, labels, target):
    """The cosine threshold whose true-hit rate on the positives is nearest `target` (from above)."""
    pos = np.sort(np.asarray(cos)[np.asarray(labels, dtype=bool)])[::-1]
    if len(pos) == 0 or target is None:
        return None
    n = int(np.ceil(target * len(pos)))
    return float(pos[max(0, min(len(pos) - 1, n - 1))]) if n > 0 else float(pos[0] + 1e-6)


def pairwise(name, rows, enc, gate):
    a = [r[0] for r in rows]
    b = [r[1] for r in rows]
    labels = [r[3] for r in rows]
    ka, kb = enc.encode(a), enc.encode(b)
    cos = np.sum(ka * kb, axis=1)
    scores = np.asarray(gate.score(list(zip(b, a))), dtype=np.float64)  # the lookup against the cached one
    out = {"set": name, "pairs": len(rows), "roc_auc": {"sieve": roc_auc(scores, labels), "cosine": roc_auc(cos, labels)}}
    sieve_acc = scores >= gate.threshold
    out["sieve"] = rates(sieve_acc, labels)
    out["cosine_gptcache_0.6"] = rates(cos >= GPTCACHE_COS, labels)
    out["cosine_redisvl_0.9"] = rates(cos >= REDISVL_COS, labels)
    t = matched_threshold(cos, labels, out["sieve"]["true_hit"])
    out["cosine_matched"] = dict(rates(cos >= t, labels) if t is not None else {}, threshold=t)
    # False hits per category (the structural twins, another entity or number, ...).
    cats = {}
    for i, r in enumerate(rows):
        if r[3] == 0:
            c = cats.setdefault(r[2], [0, 0, 0, 0])
            c[0] += 1
            c[1] += int(sieve_acc[i])
            c[2] += int(t is not None and cos[i] >= t)
            c[3] += int(cos[i] >= GPTCACHE_COS)
    out["false_hits_by_category"] = {k: {"n": v[0], "sieve": v[1] / v[0], "cosine_matched": v[2] / v[0],
                                         "cosine_gptcache_0.6": v[3] / v[0]} for k, v in sorted(cats.items())}
    emit(case="pairs", **out)
    return out


def qqp_whole(work, rows, thresholds):
    """Every first question cached at once; each second looked up against all of them, by sieve
    and by the cosine caches (the dense top 1 of the same entries, a hit at cos >= t)."""
    d = os.path.join(work, "qqp-cache")
    shutil.rmtree(d, ignore_errors=True)
    cache = sieve.Cache(d, threads=1)
    firsts = list(dict.fromkeys(r[0] for r in rows))
    by_id = {sieve._sieve.cache_entry_id(q, {}): q for q in firsts}
    dup = {}
    for a, b, _, label in rows:
        if label == 1:
            dup.setdefault(b, set()).add(a)
    t0 = time.perf_counter()
    for q in firsts:
        cache.store(q, q)  # the answer names the question it answers
    store_s = time.perf_counter() - t0
    ix = sieve.Index.open(d)
    names = ["sieve"] + [f"cosine_{name}" for name in thresholds]
    true_hits = dict.fromkeys(names, 0)
    false_hits = dict.fromkeys(names, 0)
    pos = 0
    times = []
    for a, b, _, label in rows:
        t1 = time.perf_counter()
        hit = cache.lookup(b)
        times.append((time.perf_counter() - t1) * 1000)
        served = {"sieve": None if hit is None else hit["answer"]}
        top = ix.search(b, k=1, mode="dense")
        for name, t in thresholds.items():
            served[f"cosine_{name}"] = by_id[top[0]["id"]] if top and top[0]["score"] >= t else None
        pos += label == 1
        for name, q in served.items():
            right = q is not None and q in dup.get(b, ())
            true_hits[name] += int(right and label == 1)
            false_hits[name] += int(q is not None and not right)
    out = {"entries": len(firsts), "lookups": len(rows), "store_per_second": len(firsts) / store_s,
           "lookup_p50_ms": float(np.percentile(times, 50)), "lookup_p99_ms": float(np.percentile(times, 99))}
    for name in names:
        out[name] = {"true_hit": true_hits[name] / max(1, pos), "false_hit_per_lookup": false_hits[name] / len(rows)}
    emit(case="qqp_populated", **out)
    return out


def prompts(work, need):
    """`need` distinct prompts: the dictionary sentences, then (past their ~444k) their rewrites and
    near-misses by `sieve nearmiss generate`, as bench/bench_scale.sh makes its million documents."""
    path = os.path.join(work, "dict", "sentences.txt")
    if not os.path.exists(path):
        sentences(work, 1)
    seen, out = set(), []
    with open(path, encoding="utf-8") as f:
        distinct_lines(f, need, seen, out)
    if len(out) >= need:
        return out
    variants = os.path.join(work, "dict", "variants.tsv")
    if not os.path.exists(variants):
        lines = os.path.join(work, "dict", "lines.txt")
        with open(lines, "w", encoding="utf-8") as f:
            f.writelines(t + "\n" for t in out)
        subprocess.run([CLI, "nearmiss", "generate", "-i", lines, "-o", variants[:-4] + ".tmp.tsv", "--kinds",
                        "negation,role_swap,binding_swap,spatial_flip,antonym,passive_role_swap,synonym,passive,"
                        "contraction,coordination,possessive,adverb_move,determiner,negated_antonym"],
                       check=True, stdout=subprocess.DEVNULL)
        os.rename(variants[:-4] + ".tmp.tsv", variants)
    with open(variants, encoding="utf-8") as f:
        next(f)
        distinct_lines((line.split("\t")[1] if "\t" in line else "" for line in f), need, seen, out)
    if len(out) < need:
        sys.exit(f"bench_cache: only {len(out)} distinct prompts can be made; ask for fewer --entries")
    return out


def read_through(folder):
    """Reads every file of `folder` once (the page cache then holds what fits): a warm cache."""
    for r, _, fs in os.walk(folder):
        for name in fs:
            with open(os.path.join(r, name), "rb") as f:
                while f.read(1 << 24):
                    pass


def latency(work, entries, queries, warm=False):
    d = os.path.join(work, f"lat-{entries}")
    texts = prompts(work, entries + queries)
    if not os.path.exists(d):
        t0 = time.perf_counter()
        docs = [{"_id": sieve._sieve.cache_entry_id(t, {}), "text": t,
                 "metadata": {"answer": "a" * 200, "scope": "{}"}} for t in texts[:entries]]
        sieve.set_threads(0)  # the build on every core; lookups are timed on one thread
        sieve.Index.build(docs, d + ".tmp", vector_factory="HNSW32", open=False, force=True)
        sieve.set_threads(1)
        os.rename(d + ".tmp", d)
        emit(case="latency_build", entries=entries, seconds=time.perf_counter() - t0)
    if warm:
        read_through(d)
    cache = sieve.Cache(d, threads=1)
    ix = sieve.Index.open(d)
    qs = texts[entries:entries + queries]
    out = {"entries": entries, "warm": warm}
    for name, fn in (("sieve", lambda q: cache.check(q)), ("cosine", lambda q: ix.search(q, k=1, mode="dense"))):
        fn(qs[0])
        times = []
        for q in qs:
            t1 = time.perf_counter()
            fn(q)
            times.append((time.perf_counter() - t1) * 1000)
        out[name + "_p50_ms"] = float(np.percentile(times, 50))
        out[name + "_p99_ms"] = float(np.percentile(times, 99))
    size = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(d) for f in fs)
    out["bytes_per_entry"] = size / len(cache)  # earlier runs' stores below are in it too
    t0 = time.perf_counter()
    n = 200
    for q in texts[entries + queries - n:entries + queries]:
        cache.store(q + " (new)", "answer")
    out["store_per_second"] = n / (time.perf_counter() - t0)
    emit(case="latency", **out)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", default="/tmp/sieve_bench_cache")
    ap.add_argument("--entries", type=int, nargs="*", default=[10000])
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--latency-only", action="store_true",
                    help="only part 4 (lookup latency, store throughput, bytes per entry)")
    ap.add_argument("--warm", action="store_true",
                    help="read each latency cache's files once before timing (the page cache holds what fits)")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    sieve.set_threads(1)
    model = sieve.default_model_dir()
    enc = sieve.Encoder.load(model)
    gate = sieve.Verifier.load("default", model=model)
    emit(case="setup", model=model, gate=gate.kind, threshold=gate.threshold)
    summary = {}
    if args.latency_only:
        summary["latency"] = [latency(args.work, n, args.queries, args.warm) for n in args.entries]
        emit(case="summary", **summary)
        return
    sets = make_sets(args.work)
    for name, rows in sets.items():
        r = pairwise(name, rows, enc, gate)
        summary[name] = {k: {kk: r[k].get(kk) for kk in ("true_hit", "false_hit", "threshold") if kk in r[k]}
                         for k in ("sieve", "cosine_gptcache_0.6", "cosine_redisvl_0.9", "cosine_matched")}
        summary[name]["roc_auc"] = r["roc_auc"]
        m, s = r["cosine_matched"].get("false_hit"), r["sieve"]["false_hit"]
        summary[name]["sieve_false_hits_over_matched_cosine"] = (s / m) if m else None
    matched = summary["qqp"]["cosine_matched"].get("threshold")
    summary["qqp_populated"] = qqp_whole(args.work, sets["qqp"], {"gptcache_0.6": GPTCACHE_COS,
                                                                   "redisvl_0.9": REDISVL_COS, "matched": matched})
    summary["latency"] = [latency(args.work, n, args.queries, args.warm) for n in args.entries]
    emit(case="summary", **summary)


if __name__ == "__main__":
    main()
