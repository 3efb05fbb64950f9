#!/usr/bin/env python3
"""Chooses a model's default stage 1 (BM25, dense, or a fusion of the two) on dev queries only,
then reports every candidate on the test queries.

Dev queries: SciFact's train split; for Cranfield and WikiQA (test qrels only) the dev half of
scripts/split-queries.py's split. Test: SciFact test, the other halves, and the full sets. The
choice maximises the worst margin over the dev sets of a setting's nDCG@10 against the better of
BM25 and dense alone (ties: the mean nDCG@10), so the default never trails either part where
that can be had.

How: each corpus is indexed once (OUT/index-NAME, reused), and sieve writes one dense and one BM25
run per set and part, 200 deep (`sieve eval retrieval --run-out`). Every candidate fusion (RRF,
min-max weighted, z-score weighted, each with a fixed dense weight or one that
moves per query with the gap between the lists' top z-scores; fused depth 100 or 200) is then computed here from those runs,
with nDCG@10 as sieve and trec_eval compute it, which takes seconds where a search per candidate
would take an encoder pass of every query. The chosen setting, the two parts and plain RRF are
then run by sieve itself on dev and test (`sieve eval retrieval`), and the figures this script
computed must equal sieve's (to 1e-9; RRF's exact ties excepted, see corpus_order): a check of
sieve's fusion and of this script together.

Usage: scripts/tune-fusion.py [--model NAME|DIR] [--shared ../shared/data] [--out OUT] [--write]
--write stores the choice as "search" in models/NAME.sieve.json. Progress goes to stderr; the
results go to OUT/dev.jsonl, OUT/test.jsonl and OUT/summary.md.
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
SPLIT = os.path.join(ROOT, "scripts", "split-queries.py")
RUN_DEPTH = 200
EVAL_DEPTH = 100  # sieve eval retrieval ranks this many per query (its --run-depth default)

# The per-query weight (`--weight-slope`): w + slope * (top z of dense - top z of BM25), in [0, 1].
SLOPES = (0, 0.025, 0.05, 0.075, 0.1)

BASELINES = [{"mode": "bm25"}, {"mode": "dense"},
             {"mode": "hybrid", "fusion": "rrf", "rrf_k": 60, "fusion_depth": 100}]


def candidates():
    yield from BASELINES
    for k in (10, 30):
        yield {"mode": "hybrid", "fusion": "rrf", "rrf_k": k, "fusion_depth": 100}
    for fusion in ("weighted", "zscore"):
        for w in (0.2, 0.3, 0.4, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9):
            for depth in (100, 200):
                for slope in SLOPES:
                    c = {"mode": "hybrid", "fusion": fusion, "dense_weight": w, "fusion_depth": depth}
                    if slope:
                        c["dense_weight_slope"] = slope
                    yield c


def label(c):
    if c["mode"] != "hybrid":
        return c["mode"]
    knob = f"k={c['rrf_k']}" if c["fusion"] == "rrf" else f"w={c['dense_weight']}"
    if c.get("dense_weight_slope"):
        knob += f",slope={c['dense_weight_slope']}"
    return f"hybrid-{c['fusion']}({knob},depth={c['fusion_depth']})"


def flags(c):
    f = ["--mode", c["mode"]]
    if c["mode"] == "hybrid":
        f += ["--fusion", c["fusion"], "--fusion-depth", str(c["fusion_depth"])]
        f += ["--rrf-k", str(c["rrf_k"])] if c["fusion"] == "rrf" else ["--dense-weight", str(c["dense_weight"])]
        if c.get("dense_weight_slope"):
            f += ["--weight-slope", repr(c["dense_weight_slope"])]
    return f


def sieve_eval(a, beir, qrels, index_dir, c, run_out=None):
    cmd = [a.sieve, "eval", "retrieval", "--beir", beir, "--qrels", qrels, "-m", a.model, "--index-dir", index_dir,
           "-k", "10,100"] + flags(c)
    if run_out:
        cmd += ["--run-depth", str(RUN_DEPTH), "--run-out", run_out]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        sys.exit(f"tune-fusion: {' '.join(cmd)} failed:\n{r.stderr[-2000:]}")
    j = json.loads(r.stdout)
    return {"ndcg@10": j["ndcg@10"], "recall@100": j["recall@100"], "mrr@10": j["mrr@10"], "queries": j["queries"]}


# --- runs, qrels and the fusions, written here from their definitions --------------------------

def read_run(path):
    """{query: [(doc, score), ...] best first} from a TREC run."""
    run = {}
    with open(path) as f:
        for line in f:
            q, _, d, rank, score, _ = line.split()
            run.setdefault(q, []).append((int(rank), d, float(score)))
    return {q: [(d, s) for _, d, s in sorted(v)] for q, v in run.items()}


def read_qrels(path):
    rels = {}
    with open(path) as f:
        for i, line in enumerate(f):
            parts = line.rstrip("\n").split("\t")
            if i == 0 and parts[0] == "query-id":
                continue
            if len(parts) == 4:  # TREC: qid 0 doc rel
                parts = [parts[0], parts[2], parts[3]]
            rels.setdefault(parts[0], {})[parts[1]] = int(parts[2])
    return {q: r for q, r in rels.items() if any(v > 0 for v in r.values())}


def minmax(scores):
    lo, hi = min(scores), max(scores)
    return [(s - lo) / (hi - lo) if hi > lo else 1.0 for s in scores]


def zscores(scores):
    mean = sum(scores) / len(scores)
    sd = math.sqrt(sum((s - mean) ** 2 for s in scores) / len(scores))
    return [(s - mean) / sd if sd > 0 else 0.0 for s in scores]


def corpus_order(beir):
    """{doc id: its line in corpus.jsonl}: sieve's internal document numbers, which break ties."""
    order = {}
    with open(os.path.join(beir, "corpus.jsonl")) as f:
        for line in f:
            if line.strip():
                order[str(json.loads(line)["_id"])] = len(order)
    return order


def query_weight(dense, bm25, c):
    """The dense weight of this query: c's weight moved by its slope times the gap between the
    lists' top z-scores (each list's best score against its own mean and spread), in [0, 1]."""
    slope = c.get("dense_weight_slope", 0)
    if not slope:
        return c["dense_weight"]

    def top_z(lst):
        return max(zscores([s for _, s in lst])) if lst else 0.0
    return min(1.0, max(0.0, c["dense_weight"] + slope * (top_z(dense) - top_z(bm25))))


def fuse(dense, bm25, c, order):
    """The fused list of candidate c from the two lists (each cut to the fused depth); equal
    scores in corpus order, as sieve orders them (RRF gives many: rank r in one list only)."""
    depth = c["fusion_depth"]
    lists = [(dense[:depth], True), (bm25[:depth], False)]
    score = {}
    if c["fusion"] == "rrf":
        for lst, _ in lists:
            for i, (d, _) in enumerate(lst):
                score[d] = score.get(d, 0.0) + 1.0 / (c["rrf_k"] + i + 1)
    else:
        w = query_weight(lists[0][0], lists[1][0], c)
        norm = minmax if c["fusion"] == "weighted" else zscores
        for lst, is_dense in lists:
            if not lst:
                continue
            weight = w if is_dense else 1.0 - w
            z = norm([s for _, s in lst])
            floor = min(z) if c["fusion"] == "zscore" else 0.0
            seen = {d for d, _ in lst}
            for (d, _), v in zip(lst, z):
                score[d] = score.get(d, 0.0) + weight * v
            other = lists[1][0] if is_dense else lists[0][0]
            for d, _ in other:  # in the other list only: this list's floor
                if d not in seen:
                    score[d] = score.get(d, 0.0) + weight * floor
    return sorted(score.items(), key=lambda kv: (-kv[1], order.get(kv[0], 0)))[:EVAL_DEPTH]


def ndcg10(ranked, rels):
    dcg = sum(rels.get(d, 0) / math.log2(i + 2) for i, (d, _) in enumerate(ranked[:10]))
    ideal = sorted((v for v in rels.values() if v > 0), reverse=True)[:10]
    return dcg / sum(v / math.log2(i + 2) for i, v in enumerate(ideal))


def mean_ndcg(c, runs, rels, order):
    dense, bm25 = runs
    vals = []
    for q, r in rels.items():
        if c["mode"] == "dense":
            ranked = dense.get(q, [])[:EVAL_DEPTH]
        elif c["mode"] == "bm25":
            ranked = bm25.get(q, [])[:EVAL_DEPTH]
        else:
            ranked = fuse(dense.get(q, []), bm25.get(q, []), c, order)
        vals.append(ndcg10(ranked, r))
    return statistics.fmean(vals)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="all-MiniLM-L6-v2")
    ap.add_argument("--shared", default=os.path.join(ROOT, "..", "shared", "data"))
    ap.add_argument("--out", default=None, help="default: build/tune-fusion/MODEL")
    ap.add_argument("--sieve", default=os.path.join(ROOT, "build", "sieve"))
    ap.add_argument("--write", action="store_true", help="store the choice in models/NAME.sieve.json")
    a = ap.parse_args()
    a.out = a.out or os.path.join(ROOT, "build", "tune-fusion", os.path.basename(a.model.rstrip("/")))
    ret = os.path.join(a.shared, "retrieval")
    if not os.path.isdir(ret):
        sys.exit(f"tune-fusion: {ret} is absent")
    os.makedirs(os.path.join(a.out, "runs"), exist_ok=True)
    sets = {}  # name -> (beir dir, {part: qrels file})
    sets["scifact"] = (os.path.join(ret, "scifact"), {"dev": os.path.join(ret, "scifact/qrels/train.tsv"),
                                                     "test": os.path.join(ret, "scifact/qrels/test.tsv")})
    for name in ("cranfield", "wikiqa"):
        split = os.path.join(a.out, "splits", name)
        subprocess.run([sys.executable, SPLIT, os.path.join(ret, name, "qrels/test.tsv"), split], check=True,
                       stdout=subprocess.DEVNULL)
        sets[name] = (os.path.join(ret, name), {"dev": os.path.join(split, "dev.tsv"),
                                                "test": os.path.join(split, "test.tsv"),
                                                "all": os.path.join(ret, name, "qrels/test.tsv")})
    names = list(sets)

    # 1. sieve's dense and BM25 runs, 200 deep, per set and part (kept: a rerun reuses them).
    runs, rels = {}, {}
    order = {name: corpus_order(beir) for name, (beir, _) in sets.items()}
    for name, (beir, parts) in sets.items():
        index_dir = os.path.join(a.out, "index-" + name)
        for p, qrels in parts.items():
            pair = []
            for mode in ("dense", "bm25"):
                path = os.path.join(a.out, "runs", f"{name}-{p}-{mode}.trec")
                if not os.path.isfile(path):
                    print(f"tune-fusion: {mode} run of {name}/{p}", file=sys.stderr, flush=True)
                    sieve_eval(a, beir, qrels, index_dir, {"mode": mode}, run_out=path + ".tmp")
                    os.replace(path + ".tmp", path)
                pair.append(read_run(path))
            runs[(name, p)] = tuple(pair)
            rels[(name, p)] = read_qrels(qrels)

    def score(rows, row):
        """(worst margin over the sets against the better of BM25 and dense, mean nDCG@10)."""
        best_single = {n: max(r[n]["ndcg@10"] for r in rows if r["search"]["mode"] != "hybrid") for n in names}
        margin = min(row[n]["ndcg@10"] - best_single[n] for n in names)
        mean = sum(row[n]["ndcg@10"] for n in names) / len(names)
        return (round(margin, 6), mean)

    # 2. Every candidate on the dev queries, from the runs.
    dev = []
    for c in candidates():
        row = {"setting": label(c), "search": c}
        for name in names:
            row[name] = {"ndcg@10": mean_ndcg(c, runs[(name, "dev")], rels[(name, "dev")], order[name])}
        dev.append(row)
    chosen = max(dev, key=lambda r: score(dev, r))
    print(f"tune-fusion: chosen on dev: {chosen['setting']}", file=sys.stderr, flush=True)

    # 3. sieve runs the chosen setting and the baselines on dev and test; its figures must equal ours.
    check = BASELINES + ([chosen["search"]] if chosen["search"] not in BASELINES else [])
    worst_gap = rrf_gap = 0.0
    results = {"dev": [], "test": []}
    for part in ("dev", "test"):
        for c in check:
            row = {"setting": label(c), "search": c}
            for name, (beir, parts) in sets.items():
                for p, qrels in parts.items():
                    if (part == "dev") != (p == "dev"):
                        continue
                    key = name if part == "dev" or p == "test" else f"{name}-{p}"
                    print(f"tune-fusion: sieve: {part} {label(c)} {name}/{p}", file=sys.stderr, flush=True)
                    row[key] = sieve_eval(a, beir, qrels, os.path.join(a.out, "index-" + name), c)
                    mine = mean_ndcg(c, runs[(name, p)], rels[(name, p)], order[name])
                    row[key]["computed_here"] = mine
                    if c.get("fusion") == "rrf":  # ties: see corpus_order
                        rrf_gap = max(rrf_gap, abs(mine - row[key]["ndcg@10"]))
                    else:
                        worst_gap = max(worst_gap, abs(mine - row[key]["ndcg@10"]))
            results[part].append(row)
    for row in dev:  # the dev table shows sieve's own figures where it ran the setting
        for srow in results["dev"]:
            if srow["search"] == row["search"]:
                row.update(srow)
    results["dev"] = dev
    for part in ("dev", "test"):
        with open(os.path.join(a.out, part + ".jsonl"), "w") as f:
            for row in results[part]:
                f.write(json.dumps(row) + "\n")
    if worst_gap > 1e-9:
        print(f"tune-fusion: warning: nDCG@10 computed here differs from sieve's by up to {worst_gap:.2e} "
              f"(ties ordered differently, or a fusion that differs)", file=sys.stderr)

    lines = ["| setting | " + " | ".join(f"{n} nDCG@10" for n in names) + " | worst margin | mean |",
             "|---|" + "---:|" * (len(names) + 2)]

    def table(rows):
        out = []
        for r in rows:
            m, mean = score(rows, r)
            mark = " **(chosen)**" if r["setting"] == chosen["setting"] else ""
            out.append(f"| {r['setting']}{mark} | " + " | ".join(f"{r[n]['ndcg@10']:.4f}" for n in names) +
                       f" | {m:+.4f} | {mean:.4f} |")
        return out
    md = ["# Stage-1 fusion for " + a.model, "", "## Dev queries (the choice is made here)", ""] + lines + table(dev)
    md += ["", "## Test queries (reported, never used to choose)", ""] + lines + table(results["test"])
    md += ["", "Test, all measures (sieve's own runs):", "",
           "| setting | set | nDCG@10 | Recall@100 | MRR@10 | queries |", "|---|---|---:|---:|---:|---:|"]
    for r in results["test"]:
        for key, v in r.items():
            if isinstance(v, dict) and "recall@100" in v:
                md.append(f"| {r['setting']} | {key} | {v['ndcg@10']:.4f} | {v['recall@100']:.4f} | {v['mrr@10']:.4f} | {v['queries']} |")
    md += ["", f"Largest difference between sieve's nDCG@10 and this script's: {worst_gap:.1e} (RRF: {rrf_gap:.1e}; "
           "its many exact ties, a rank-r document of one list against another list's rank-r one, fall in "
           "sieve's internal document order, which this script approximates by corpus order)."]
    with open(os.path.join(a.out, "summary.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    print(json.dumps({"chosen": chosen["search"], "setting": chosen["setting"], "largest_difference": worst_gap,
                      "largest_difference_rrf": rrf_gap,
                      "summary": os.path.join(a.out, "summary.md")}))
    if a.write:
        src = os.path.join(ROOT, "models", os.path.basename(a.model.rstrip("/")) + ".sieve.json")
        doc = json.load(open(src))
        m, _ = score(dev, chosen)
        s = dict(chosen["search"])
        tm, _ = score(results["test"], next(r for r in results["test"] if r["search"] == chosen["search"]))

        def figures(rows):
            row = next(r for r in rows if r["search"] == chosen["search"])
            best = {n: max((r for r in rows if r["search"]["mode"] != "hybrid"), key=lambda r: r[n]["ndcg@10"])
                    for n in names}
            return ", ".join(f"{n} {row[n]['ndcg@10']:.3f} vs {best[n]['search']['mode']} {best[n][n]['ndcg@10']:.3f}"
                             for n in names)
        s["note"] = (f"chosen by scripts/tune-fusion.py on dev queries only (SciFact train; the dev halves of "
                     f"Cranfield and WikiQA by scripts/split-queries.py): worst margin over the better of BM25 "
                     f"and dense {m:+.4f} nDCG@10 on dev ({figures(dev)}); on test {tm:+.4f} "
                     f"({figures(results['test'])}). docs/benchmarks.md")
        doc["search"] = s
        with open(src + ".tmp", "w") as f:
            json.dump(doc, f, indent=2)
            f.write("\n")
        os.replace(src + ".tmp", src)
        print(f"tune-fusion: wrote the choice into {src}", file=sys.stderr)


if __name__ == "__main__":
    main()
