#!/usr/bin/env python3
"""The twin benchmark's data and scoring (scripts/eval-twins.sh drives it; stdlib only).

NevIR-style: two documents that differ by one structural edit (a negation, a role swap, a CondaQA
crowd edit) and one query for each, which means its own document and not the twin. A pair counts
when both queries rank their own document above the twin (pairwise accuracy, Weller et al. 2024).

  twins.py pick --generated GEN.tsv --condaqa EDITS.tsv --out DIR
      writes DIR/rewrites.txt (the rewrites to perturb again) and DIR/condaqa-edits.txt
  twins.py assemble --generated GEN.tsv --rewrites-perturbed GEN2.tsv --condaqa EDITS.tsv
                    --condaqa-rewrites GEN3.tsv --scifact CORPUS.jsonl --cap N --out DIR
      writes DIR/twin-docs.jsonl, DIR/queries.jsonl, DIR/twins.jsonl, DIR/construction.json
  twins.py score --twins DIR/twins.jsonl --run NAME=RUN.jsonl ... [--scifact NAME=EVAL.json ...]
                 --json OUT.json --markdown OUT.md
"""
import argparse
import collections
import hashlib
import json
import sys

NEAR = ["negation", "role_swap"]
# Rewrites that keep the meaning, in order of preference (the ones that touch the fewest words first
# would make the query a near-copy of its document; a synonym or a passive makes it a real rewrite).
REWRITES = ["synonym", "passive", "possessive", "coordination", "adverb_move", "determiner", "contraction"]
CONDAQA_CHANGED = ["scope", "affirmative"]


def read_pairs(path):
    """(sentence1, sentence2, category) rows of a generator TSV (header skipped)."""
    out = []
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f):
            cols = line.rstrip("\n").split("\t")
            if i == 0 and cols[:2] == ["sentence1", "sentence2"]:
                continue
            if len(cols) >= 3:
                out.append((cols[0], cols[1], cols[2]))
    return out


def read_condaqa(path):
    """{original: {"paraphrase": [...], "scope": [...], "affirmative": [...]}} in file order."""
    by_orig = collections.OrderedDict()
    with open(path, encoding="utf-8") as f:
        header = f.readline().rstrip("\n").split("\t")
        col = {name: i for i, name in enumerate(header)}
        for line in f:
            c = line.rstrip("\n").split("\t")
            if len(c) < len(header):
                continue
            o, e, cat = c[col["sentence1"]].strip(), c[col["sentence2"]].strip(), c[col["category"]].strip()
            if o and e and o != e:
                by_orig.setdefault(o, collections.defaultdict(list))[cat].append(e)
    return by_orig


def by_source(rows):
    """{sentence1: {"near": {kind: s2}, "pos": [(kind, s2), ...]}} in input order."""
    out = collections.OrderedDict()
    for s1, s2, cat in rows:
        e = out.setdefault(s1, {"near": {}, "pos": []})
        if cat in NEAR:
            e["near"].setdefault(cat, s2)
        elif cat in REWRITES:
            e["pos"].append((cat, s2))
    for e in out.values():
        e["pos"].sort(key=lambda kv: REWRITES.index(kv[0]))
    return out


def cmd_pick(a):
    src = by_source(read_pairs(a.generated))
    rewrites = []
    for s, e in src.items():
        if e["near"] and e["pos"]:
            rewrites.extend(r for _, r in e["pos"])
    with open(f"{a.out}/rewrites.txt", "w", encoding="utf-8") as f:
        for r in dict.fromkeys(rewrites):
            f.write(r + "\n")
    edits = []
    for o, cats in read_condaqa(a.condaqa).items():
        if cats.get("paraphrase"):
            for c in CONDAQA_CHANGED:
                edits.extend(cats.get(c, []))
    with open(f"{a.out}/condaqa-edits.txt", "w", encoding="utf-8") as f:
        for e in dict.fromkeys(edits):
            f.write(e + "\n")
    print(f"twins: {len(dict.fromkeys(rewrites))} rewrites to perturb, {len(dict.fromkeys(edits))} CondaQA edits to rewrite",
          file=sys.stderr)
    return 0


def words(s):
    return s.lower().replace(",", " ").replace(".", " ").split()


def same_edit(s, n, r, m):
    """True when r -> m changes the same words as s -> n (as multisets): the near-miss of the rewrite
    is the rewrite of the near-miss, not another edit (another verb negated, other arguments swapped)."""
    cs, cn, cr, cm = (collections.Counter(words(x)) for x in (s, n, r, m))
    return cn - cs == cm - cr and cs - cn == cr - cm


def cmd_assemble(a):
    src = by_source(read_pairs(a.generated))
    perturbed = by_source(read_pairs(a.rewrites_perturbed))  # rewrite -> its near-misses
    with open(a.scifact, encoding="utf-8") as f:
        scifact_ids = set()
        blob = []
        for line in f:
            d = json.loads(line)
            scifact_ids.add(str(d["_id"]))
            blob.append(d.get("title", "") + " " + d.get("text", ""))
    blob = "\n".join(blob)

    docs, queries = collections.OrderedDict(), collections.OrderedDict()  # text -> id

    def doc_id(text):
        if text not in docs:
            docs[text] = "twin-" + hashlib.md5(text.encode("utf-8")).hexdigest()[:12]
            assert docs[text] not in scifact_ids
        return docs[text]

    def query_id(text):
        if text not in queries:
            queries[text] = "tq-" + hashlib.md5(text.encode("utf-8")).hexdigest()[:12]
        return queries[text]

    twins, counts = [], collections.Counter()
    for kind in NEAR:
        taken = 0
        for s, e in src.items():
            if taken >= a.cap:
                break
            n = e["near"].get(kind)
            if not n or not e["pos"]:
                continue
            counts[f"{kind}: sources with a {kind} and a rewrite"] += 1
            for rkind, r in e["pos"]:
                m = perturbed.get(r, {"near": {}})["near"].get(kind)
                if not m:
                    counts[f"{kind}: rewrite without a {kind}"] += 1
                    continue
                if len({s, n, r, m}) < 4:
                    counts[f"{kind}: a query equal to a document"] += 1
                    continue
                if not same_edit(s, n, r, m):
                    counts[f"{kind}: rewrite's {kind} is another edit"] += 1
                    continue
                twins.append({"kind": kind, "rewrite": rkind, "source": "scifact" if s in blob else "wordnet",
                              "a": doc_id(s), "b": doc_id(n), "qa": query_id(r), "qb": query_id(m),
                              "texts": {"a": s, "b": n, "qa": r, "qb": m}})
                taken += 1
                break

    # CondaQA: the original and a meaning-changing crowd edit; the original's query is a crowd
    # paraphrase; the edit's query a generator rewrite of the edit (when it has one).
    edit_rewrites = by_source(read_pairs(a.condaqa_rewrites))
    taken = 0
    for o, cats in read_condaqa(a.condaqa).items():
        paraphrases = cats.get("paraphrase", [])
        if not paraphrases:
            counts["condaqa: originals without a paraphrase edit (skipped)"] += 1
            continue
        p = paraphrases[0]
        for c in CONDAQA_CHANGED:
            for e in cats.get(c, []):
                if taken >= a.cap or len({o, e, p}) < 3:
                    continue
                pos = edit_rewrites.get(e, {"pos": []})["pos"]
                rewrite = next((r for _, r in pos if r not in (o, e, p)), None)
                t = {"kind": "condaqa" if rewrite else "condaqa_one_query", "rewrite": pos[0][0] if rewrite else None,
                     "edit": c, "source": "condaqa", "a": doc_id(o), "b": doc_id(e), "qa": query_id(p),
                     "qb": query_id(rewrite) if rewrite else None, "texts": {"a": o, "b": e, "qa": p, "qb": rewrite}}
                twins.append(t)
                taken += 1

    with open(f"{a.out}/twin-docs.jsonl", "w", encoding="utf-8") as f:
        for text, i in docs.items():
            f.write(json.dumps({"_id": i, "title": "", "text": text}, ensure_ascii=False) + "\n")
    with open(f"{a.out}/queries.jsonl", "w", encoding="utf-8") as f:
        for text, i in queries.items():
            f.write(json.dumps({"_id": i, "text": text}, ensure_ascii=False) + "\n")
    with open(f"{a.out}/twins.jsonl", "w", encoding="utf-8") as f:
        for t in twins:
            f.write(json.dumps(t, ensure_ascii=False) + "\n")
    kinds = collections.Counter(t["kind"] for t in twins)
    summary = {"pairs": dict(kinds), "documents": len(docs), "queries": len(queries), "skipped": dict(counts),
               "sources": dict(collections.Counter(t["source"] for t in twins)),
               "rewrites": dict(collections.Counter(f'{t["kind"]}/{t["rewrite"]}' for t in twins))}
    with open(f"{a.out}/construction.json", "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=1)
    print(f"twins: {dict(kinds)} pairs, {len(docs)} documents, {len(queries)} queries", file=sys.stderr)
    return 0


def read_run(path):
    """{query_id: [doc ids in rank order]} from `sieve search --output jsonl`."""
    run = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            j = json.loads(line)
            run[j["query_id"]] = [h["id"] for h in j["hits"]]
    return run


def pair_outcome(run, t):
    """(counts, own-above-twin per query, both twins missing for some query)."""
    inf = float("inf")
    ok, missing = [], False
    for q, own, other in (("qa", "a", "b"), ("qb", "b", "a")):
        if t[q] is None:
            continue
        hits = run.get(t[q], [])
        rank = {d: i for i, d in enumerate(hits)}
        r_own, r_other = rank.get(t[own], inf), rank.get(t[other], inf)
        missing = missing or (r_own == inf and r_other == inf)
        ok.append(r_own < r_other)
    return all(ok), ok, missing


def cmd_score(a):
    twins = [json.loads(l) for l in open(a.twins, encoding="utf-8")]
    kinds = list(dict.fromkeys(t["kind"] for t in twins))
    out = {"measure": "pairwise accuracy: both queries rank their own document above the twin (a document "
                      "absent from the results, dropped by the gate or beyond k, ranks below everything; both "
                      "absent = not counted as correct)",
           "pairs": dict(collections.Counter(t["kind"] for t in twins)), "systems": {}}
    for spec in a.run:
        name, path = spec.split("=", 1)
        run = read_run(path)
        res = {}
        for kind in kinds + ["all generated"]:
            sel = [t for t in twins if (t["kind"] == kind if kind != "all generated" else t["kind"] in NEAR)]
            if not sel:
                continue
            outcomes = [pair_outcome(run, t) for t in sel]
            queries = [x for _, q, _ in outcomes for x in q]
            res[kind] = {"pairs": len(sel), "pairwise_accuracy": sum(o for o, _, _ in outcomes) / len(sel),
                         "query_accuracy": sum(queries) / len(queries),
                         "both_missing": sum(m for _, _, m in outcomes)}
        out["systems"][name] = res
    if a.scifact:
        out["scifact_test"] = {}
        for spec in a.scifact:
            name, path = spec.split("=", 1)
            j = json.load(open(path, encoding="utf-8"))
            keep = {k: j[k] for k in ("system", "ndcg@10", "recall@100", "queries") if k in j}
            if "gate" in j:
                keep["gate"] = j["gate"]
            out["scifact_test"][name] = keep
    if a.notes:
        out["notes"] = a.notes
    with open(a.json, "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1)
    cols = kinds + ["all generated"]
    lines = ["| system | " + " | ".join(f"{k} ({out['pairs'].get(k, sum(out['pairs'].get(n, 0) for n in NEAR))})"
                                          for k in cols) + " |",
             "|---|" + "---:|" * len(cols)]
    for name, res in out["systems"].items():
        cells = []
        for k in cols:
            r = res.get(k)
            cells.append("" if r is None else f"{100 * r['pairwise_accuracy']:.1f} ({100 * r['query_accuracy']:.0f})" +
                         (f" ({r['both_missing']} both absent)" if r["both_missing"] else ""))
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    md = ("Pairwise accuracy, % (in brackets: % of queries that rank their own document above the twin); "
          "pairs per kind in the header\n\n") + "\n".join(lines) + "\n"
    if a.scifact:
        md += "\nSciFact test: stage 1 against stage 1 + gate over the top 100\n\n"
        md += "| system | nDCG@10 | recall@100 | candidates dropped | relevant dropped (of relevant in top 100) |\n"
        md += "|---|---:|---:|---:|---:|\n"
        for name, r in out["scifact_test"].items():
            g = r.get("gate")
            md += (f"| {name} | {r.get('ndcg@10', 0):.4f} | {r.get('recall@100', 0):.4f} | "
                   + (f"{g['dropped']} of {g['candidates']} | {g['relevant_dropped']} of {g['relevant']} |" if g else " | |")
                   + "\n")
    for n in a.notes or []:
        md += f"\nNote: {n}\n"
    with open(a.markdown, "w", encoding="utf-8") as f:
        f.write(md)
    sys.stdout.write(md)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("pick")
    p.add_argument("--generated", required=True)
    p.add_argument("--condaqa", required=True)
    p.add_argument("--out", required=True)
    p = sub.add_parser("assemble")
    for opt in ("--generated", "--rewrites-perturbed", "--condaqa", "--condaqa-rewrites", "--scifact", "--out"):
        p.add_argument(opt, required=True)
    p.add_argument("--cap", type=int, default=250, help="pairs per kind")
    p = sub.add_parser("score")
    p.add_argument("--twins", required=True)
    p.add_argument("--run", action="append", default=[], help="NAME=RUN.jsonl (sieve search --output jsonl)")
    p.add_argument("--scifact", action="append", default=[], help="NAME=EVAL.json (sieve eval retrieval)")
    p.add_argument("--note", dest="notes", action="append", default=[])
    p.add_argument("--json", required=True)
    p.add_argument("--markdown", required=True)
    a = ap.parse_args()
    return {"pick": cmd_pick, "assemble": cmd_assemble, "score": cmd_score}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
