#!/usr/bin/env python3
"""Chooses a model's default stage 1 (BM25, dense, or a fusion of the two) on dev queries only,
then reports every candidate on the test queries.

Dev queries: SciFact's train split; for Cranfield and WikiQA (test qrels only) the dev half of
scripts/split-queries.py's split. Test: SciFact test, the other halves, and the full sets. The
choice maximises the worst margin over the dev sets of a setting's nDCG@10 against the better of
BM25 and dense alone (ties: the mean nDCG@10), so the default never trails either part where
that can be had. Each corpus is indexed once (OUT/index-NAME) and reused.

Usage: scripts/tune-fusion.py [--model NAME|DIR] [--shared ../shared/data] [--out OUT] [--write]
--write stores the choice as "search" in models/NAME.sieve.json. Progress goes to stderr; the
results go to OUT/dev.jsonl, OUT/test.jsonl and OUT/summary.md.
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
SPLIT = os.path.join(ROOT, "scripts", "split-queries.py")


BASELINES = [{"mode": "bm25"}, {"mode": "dense"},
             {"mode": "hybrid", "fusion": "rrf", "rrf_k": 60, "fusion_depth": 100}]


def candidates():
    yield from BASELINES
    for k in (10, 30):
        yield {"mode": "hybrid", "fusion": "rrf", "rrf_k": k, "fusion_depth": 100}
    for w in (0.2, 0.3, 0.4, 0.5, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9):
        for depth in (100, 200):  # eval ranks 100 per query, and the fused depth is at least k
            yield {"mode": "hybrid", "fusion": "weighted", "dense_weight": w, "fusion_depth": depth}


def label(c):
    if c["mode"] != "hybrid":
        return c["mode"]
    knob = f"k={c['rrf_k']}" if c["fusion"] == "rrf" else f"w={c['dense_weight']}"
    return f"hybrid-{c['fusion']}({knob},depth={c['fusion_depth']})"


def flags(c):
    f = ["--mode", c["mode"]]
    if c["mode"] == "hybrid":
        f += ["--fusion", c["fusion"], "--fusion-depth", str(c["fusion_depth"])]
        f += ["--rrf-k", str(c["rrf_k"])] if c["fusion"] == "rrf" else ["--dense-weight", str(c["dense_weight"])]
    return f


def evaluate(sieve, model, beir, qrels, index_dir, c):
    cmd = [sieve, "eval", "retrieval", "--beir", beir, "--qrels", qrels, "-m", model, "--index-dir", index_dir,
           "-k", "10,100"] + flags(c)
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        sys.exit(f"tune-fusion: {' '.join(cmd)} failed:\n{r.stderr[-2000:]}")
    j = json.loads(r.stdout)
    return {"ndcg@10": j["ndcg@10"], "recall@100": j["recall@100"], "mrr@10": j["mrr@10"], "queries": j["queries"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="all-MiniLM-L6-v2")
    ap.add_argument("--shared", default=os.path.join(ROOT, "..", "shared", "data"))
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "tune-fusion"))
    ap.add_argument("--sieve", default=os.path.join(ROOT, "build", "sieve"))
    ap.add_argument("--write", action="store_true", help="store the choice in models/NAME.sieve.json")
    a = ap.parse_args()
    ret = os.path.join(a.shared, "retrieval")
    if not os.path.isdir(ret):
        sys.exit(f"tune-fusion: {ret} is absent")
    os.makedirs(a.out, exist_ok=True)
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

    def score(rows, row):
        """(worst margin over the sets against the better of BM25 and dense, mean nDCG@10)."""
        best_single = {n: max(r[n]["ndcg@10"] for r in rows if r["search"]["mode"] != "hybrid") for n in names}
        margin = min(row[n]["ndcg@10"] - best_single[n] for n in names)
        mean = sum(row[n]["ndcg@10"] for n in names) / len(names)
        return (round(margin, 6), mean)

    results = {"dev": [], "test": []}
    chosen = None
    for part in ("dev", "test"):
        if part == "dev":
            cands = list(candidates())
        else:  # the test queries see only the two parts, plain RRF and the choice
            cands = BASELINES + ([chosen["search"]] if chosen["search"] not in BASELINES else [])
        for c in cands:
            row = {"setting": label(c), "search": c}
            for name, (beir, parts) in sets.items():
                index_dir = os.path.join(a.out, "index-" + name)
                for p, qrels in parts.items():
                    if (part == "dev") != (p == "dev"):
                        continue
                    key = name if part == "dev" or p == "test" else f"{name}-{p}"
                    print(f"tune-fusion: {part} {label(c)} {name}/{p}", file=sys.stderr, flush=True)
                    row[key] = evaluate(a.sieve, a.model, beir, qrels, index_dir, c)
            results[part].append(row)
        with open(os.path.join(a.out, part + ".jsonl"), "w") as f:
            for row in results[part]:
                f.write(json.dumps(row) + "\n")
        if part == "dev":
            chosen = max(results["dev"], key=lambda r: score(results["dev"], r))
    dev = results["dev"]
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
    md += ["", "Test, all measures:", "", "| setting | set | nDCG@10 | Recall@100 | MRR@10 | queries |", "|---|---|---:|---:|---:|---:|"]
    for r in results["test"]:
        for key, v in r.items():
            if isinstance(v, dict) and "ndcg@10" in v:
                md.append(f"| {r['setting']} | {key} | {v['ndcg@10']:.4f} | {v['recall@100']:.4f} | {v['mrr@10']:.4f} | {v['queries']} |")
    with open(os.path.join(a.out, "summary.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    print(json.dumps({"chosen": chosen["search"], "setting": chosen["setting"], "summary": os.path.join(a.out, "summary.md")}))
    if a.write:
        src = os.path.join(ROOT, "models", a.model + ".sieve.json")
        doc = json.load(open(src))
        m, _ = score(dev, chosen)
        s = dict(chosen["search"])
        s["note"] = (f"chosen by scripts/tune-fusion.py on dev queries only (SciFact train; the dev halves of "
                     f"Cranfield and WikiQA by scripts/split-queries.py): worst dev margin over the better of "
                     f"BM25 and dense {m:+.4f} nDCG@10; docs/benchmarks.md has the test figures")
        doc["search"] = s
        with open(src + ".tmp", "w") as f:
            json.dump(doc, f, indent=2)
            f.write("\n")
        os.replace(src + ".tmp", src)
        print(f"tune-fusion: wrote the choice into {src}", file=sys.stderr)


if __name__ == "__main__":
    main()
