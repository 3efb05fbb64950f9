#!/usr/bin/env python3
"""The gate's honest table (issue 57): every eval part, every scorer, one row each.

For each eval part (a labelled pair TSV: sentence1, sentence2, category, label) and each scorer's
`sieve verify score` output over it (JSON lines in the part's order: score, threshold), writes the
ROC-AUC and, at the scorer's threshold, the share of the part's positives accepted (true duplicates
kept) and of its negatives accepted (near-misses let through). The pooled cosine is read twice: as
a ranking (its AUC) and as the cosine cache at a fixed cut (--cosine-cut, 0.8 by default: the
threshold of GPTCache-style caches), so that each gate's accept rates sit beside that cache's on the
same pairs. Debian's NumPy (through fit-gate.py's AUC).

  gate-table.py --part qqp=SETS/qqp-eval.tsv ... --scorer cosine=DIR/cosine --scorer gate=DIR/gate \\
      --scores-dir DIR --json OUT.json --markdown OUT.md
  (DIR/<scorer>/<part>.jsonl: that scorer's lines over that part)
"""
import argparse
import csv
import importlib.util
import json
import math
import os
import sys

_spec = importlib.util.spec_from_file_location("fit_gate", os.path.join(os.path.dirname(__file__), "fit-gate.py"))
_fit_gate = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fit_gate)


def auc(scores, labels):
    """fit-gate.py's ROC-AUC by ranks; None when a class is missing."""
    value = _fit_gate.auc(scores, labels)
    return None if math.isnan(value) else value


def read_labels(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    if not rows or "label" not in rows[0]:
        sys.exit(f"gate-table: {path} has no label column")
    li = rows[0].index("label")
    return [int(r[li]) for r in rows[1:]]


def read_scores(path, n):
    with open(path) as f:
        lines = [json.loads(line) for line in f if line.strip()]
    if len(lines) != n:
        sys.exit(f"gate-table: {path} has {len(lines)} scores for {n} pairs")
    return [float(x["score"]) for x in lines], lines[0].get("threshold") if lines else None


def rates(scores, labels, cut):
    pos = [s for s, y in zip(scores, labels) if y == 1]
    neg = [s for s, y in zip(scores, labels) if y == 0]
    share = lambda xs: sum(1 for s in xs if s >= cut) / len(xs) if xs else None
    return share(pos), share(neg)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--part", action="append", required=True, metavar="NAME=TSV", help="an eval part")
    ap.add_argument("--scorer", action="append", required=True, metavar="NAME",
                    help="a scorer whose scores are SCORES_DIR/NAME/PART.jsonl (\"cosine\": the pooled cosine)")
    ap.add_argument("--scores-dir", required=True)
    ap.add_argument("--cosine-cut", type=float, default=0.8, help="the cosine cache's threshold")
    ap.add_argument("--json", required=True)
    ap.add_argument("--markdown")
    args = ap.parse_args()
    table = []
    for spec in args.part:
        name, _, path = spec.partition("=")
        if not path or not os.path.exists(path):
            sys.exit(f"gate-table: --part {spec}: not NAME=TSV of an existing file")
        labels = read_labels(path)
        row = {"part": name, "pairs": len(labels), "positives": sum(labels), "scorers": {}}
        for sc in args.scorer:
            scores, threshold = read_scores(os.path.join(args.scores_dir, sc, name + ".jsonl"), len(labels))
            cut = args.cosine_cut if sc == "cosine" else threshold
            acc_pos, acc_neg = rates(scores, labels, cut) if cut is not None else (None, None)
            row["scorers"][sc] = {"auc": auc(scores, labels), "threshold": cut, "positives_accepted": acc_pos,
                                  "negatives_accepted": acc_neg}
        table.append(row)
    with open(args.json, "w") as f:
        json.dump({"cosine_cut": args.cosine_cut, "parts": table}, f, indent=1)
    if args.markdown:
        fmt = lambda v: "—" if v is None else f"{v:.3f}"
        names = args.scorer
        head = "| eval part | pairs | " + " | ".join(f"{n} AUC" for n in names) + " | " + " | ".join(
            f"{n} dup. / near-miss accepted" for n in names) + " |"
        lines = [head, "|" + "---|" * (2 + 2 * len(names))]
        for r in table:
            s = r["scorers"]
            lines.append(f"| {r['part']} | {r['pairs']:,} | " + " | ".join(fmt(s[n]["auc"]) for n in names) + " | " +
                         " | ".join(f"{fmt(s[n]['positives_accepted'])} / {fmt(s[n]['negatives_accepted'])}" for n in names) + " |")
        with open(args.markdown, "w") as f:
            f.write("\n".join(lines) + "\n")
    print(json.dumps({r["part"]: {n: round(v["auc"], 3) if v["auc"] is not None else None for n, v in r["scorers"].items()}
                      for r in table}))


if __name__ == "__main__":
    main()
