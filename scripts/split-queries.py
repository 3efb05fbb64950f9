#!/usr/bin/env python3
"""Splits a BEIR qrels file into a dev part (for choosing settings) and a test part (for reporting),
by query: a query goes to dev when the first 8 hex digits of sha256(seed + ":" + query id), read as
a number, fall below fraction * 2^32. The split is a pure function of the ids, so it is the same
on every machine and never looks at the judgements or the texts.

Usage: scripts/split-queries.py QRELS OUTDIR [--fraction 0.5] [--seed sieve]
Writes OUTDIR/dev.tsv and OUTDIR/test.tsv in the input's layout (header kept) and prints counts.
"""
import argparse
import hashlib
import json
import os
import sys


def to_dev(qid, seed, fraction):
    h = int(hashlib.sha256(f"{seed}:{qid}".encode()).hexdigest()[:8], 16)
    return h < fraction * 2**32


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("qrels")
    ap.add_argument("out")
    ap.add_argument("--fraction", type=float, default=0.5, help="share of queries in dev (default 0.5)")
    ap.add_argument("--seed", default="sieve", help="mixed into the hash (default: sieve)")
    a = ap.parse_args()
    if not 0 < a.fraction < 1:
        ap.error("--fraction must lie strictly between 0 and 1")
    with open(a.qrels, encoding="utf-8") as f:
        lines = f.read().splitlines()
    if not lines:
        sys.exit(f"split-queries: {a.qrels} is empty")
    header, rows = (lines[0], lines[1:]) if lines[0].startswith("query-id") else (None, lines)
    os.makedirs(a.out, exist_ok=True)
    parts = {"dev": [], "test": []}
    for r in rows:
        if r.strip():
            parts["dev" if to_dev(r.split("\t")[0], a.seed, a.fraction) else "test"].append(r)
    for name, part in parts.items():
        with open(os.path.join(a.out, name + ".tsv"), "w", encoding="utf-8") as f:
            if header:
                f.write(header + "\n")
            f.write("".join(r + "\n" for r in part))
    print(json.dumps({k: len({r.split("\t")[0] for r in v}) for k, v in parts.items()}))


if __name__ == "__main__":
    main()
