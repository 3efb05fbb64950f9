#!/usr/bin/env python3
"""Pairs that combine a rewrite with a near-miss, from the generator's output for one part.

`sieve nearmiss generate` pairs each sentence s with its rewrites r (meaning kept: synonym,
passive, ...) and its near-misses n (negation, role swap, ...). A gate trained on (s, r) and
(s, n) alone never sees a rewrite against a near-miss, which is what a search gives it when the
query is worded differently from a document and the document's twin is among the candidates
(docs/evaluation.md, "Twins"). This writes, for each sentence with both: (r, n) for one rewrite
and each kind of near-miss, label 0, category composed_<near-miss kind>; and (r1, r2) for two
rewrites of different kinds, label 1, category composed_rewrite. The first rewrite in the
generator's order is taken, so the output is deterministic.

  scripts/compose-pairs.py --raw WORK/generated-train.raw.tsv --rewrites synonym,passive,... \\
      --near negation,role_swap,... --out WORK/composed-train.tsv
"""
import argparse
import csv
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--raw", required=True, help="`sieve nearmiss generate` output: sentence1, sentence2, category")
    ap.add_argument("--rewrites", required=True, help="categories that keep the meaning, comma-separated")
    ap.add_argument("--near", required=True, help="near-miss categories, comma-separated")
    ap.add_argument("--out", required=True, help="labelled TSV: sentence1, sentence2, category, label")
    args = ap.parse_args()
    rewrites, near = set(args.rewrites.split(",")), set(args.near.split(","))
    by_sentence = {}  # s -> ({kind: first rewrite}, {kind: first near-miss}), in input order
    with open(args.raw, newline="") as f:
        rows = csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
        if rows.fieldnames is None or not {"sentence1", "sentence2", "category"} <= set(rows.fieldnames):
            sys.exit(f"compose-pairs: {args.raw} has no sentence1, sentence2, category header")
        for r in rows:
            kind = r["category"]
            if kind not in rewrites and kind not in near:
                continue
            rw, nm = by_sentence.setdefault(r["sentence1"], ({}, {}))
            (rw if kind in rewrites else nm).setdefault(kind, r["sentence2"])
    out, counts = [], {}
    for rw, nm in by_sentence.values():
        if not rw:
            continue
        first = next(iter(rw.values()))
        for kind, n in nm.items():
            if n != first:
                out.append((first, n, "composed_" + kind, 0))
        others = [r for r in rw.values() if r != first]
        if others:
            out.append((first, others[0], "composed_rewrite", 1))
    with open(args.out, "w") as f:
        f.write("sentence1\tsentence2\tcategory\tlabel\n")
        for a, b, c, label in out:
            f.write(f"{a}\t{b}\t{c}\t{label}\n")
            counts[c] = counts.get(c, 0) + 1
    print(f"compose-pairs: {len(out)} pairs -> {args.out}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())),
          file=sys.stderr)


if __name__ == "__main__":
    main()
