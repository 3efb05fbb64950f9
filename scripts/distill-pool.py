#!/usr/bin/env python3
"""Unlabelled pairs for distilling the gate (issue 43, item 3): stage-1 neighbour pairs.

Reads sentences (one a line; the gate's train part, so no dev or eval sentence is paired), encodes
them with the model's pooled keys (sieve's own encoder, the same keys stage 1 searches), and for
--queries of them drawn by --seed writes the --per nearest other sentences whose cosine lies in
[--min-cos, --max-cos] (exact search: a matrix product, no ANN error). Those are the pairs stage 1
hands stage 2 in practice: close in meaning by the pooled key, so whether they say the same thing
is for the verifier to decide. Near-duplicates above --max-cos (the same sentence twice, or two
differing by a character) are left out: they teach nothing. The output is a pair TSV (sentence1,
sentence2, category "neighbour") for `sieve verify score` (the teacher) and `sieve verify features`.

  PYTHONPATH=build/python /usr/bin/python3 scripts/distill-pool.py --sentences S.txt \\
      --model all-MiniLM-L6-v2 --queries 8000 --out pool.tsv
"""
import argparse
import os
import sys

import numpy as np


def neighbour_pairs(keys, queries, per, min_cos, max_cos, block=2048):
    """[(query row, neighbour row, cosine)]: each query's `per` nearest rows (itself excluded)
    whose cosine lies in [min_cos, max_cos], nearest first. Exact: the full product, in blocks."""
    out = []
    for start in range(0, len(queries), block):
        q = queries[start:start + block]
        sims = keys[q] @ keys.T  # [b, n]
        sims[np.arange(len(q)), q] = -np.inf  # never a sentence with itself
        sims[(sims > max_cos) | (sims < min_cos)] = -np.inf
        top = np.argpartition(-sims, per, axis=1)[:, :per] if per < sims.shape[1] else np.tile(
            np.arange(sims.shape[1]), (len(q), 1))
        for i, row in enumerate(top):
            row = row[np.argsort(-sims[i, row], kind="stable")]
            for j in row:
                if np.isfinite(sims[i, j]):
                    out.append((int(q[i]), int(j), float(sims[i, j])))
    return out


def clean(text):
    return " ".join(text.replace("\t", " ").split())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sentences", nargs="+", required=True, help="sentence files, one a line")
    ap.add_argument("--model", default=None, help="model name or folder (default: the installed default)")
    ap.add_argument("--queries", type=int, default=8000, help="sentences drawn as queries")
    ap.add_argument("--per", type=int, default=2, help="neighbours a query")
    ap.add_argument("--min-cos", type=float, default=0.5, help="lowest pooled cosine of a pair")
    ap.add_argument("--max-cos", type=float, default=0.98, help="highest pooled cosine (near-duplicates above)")
    ap.add_argument("--seed", type=int, default=42, help="draw of the queries")
    ap.add_argument("--threads", type=int, default=0, help="encoder threads (0: every core)")
    ap.add_argument("--out", required=True, help="pair TSV: sentence1, sentence2, category")
    args = ap.parse_args()
    if args.per < 1 or args.queries < 1 or not (-1.0 <= args.min_cos <= args.max_cos <= 1.0):
        sys.exit("distill-pool: --per and --queries must be positive and -1 <= --min-cos <= --max-cos <= 1")

    import sieve  # the built module (PYTHONPATH=build/python)
    seen, texts = set(), []
    for path in args.sentences:
        with open(path, encoding="utf-8") as f:
            for line in f:
                t = clean(line)
                if t and t not in seen:
                    seen.add(t)
                    texts.append(t)
    if len(texts) < 2:
        sys.exit("distill-pool: fewer than two distinct sentences")
    enc = sieve.Encoder.load(args.model, threads=args.threads)
    print(f"distill-pool: encoding {len(texts)} sentences", file=sys.stderr)
    keys = np.asarray(enc.encode(texts, batch_size=64, show_progress_bar=sys.stderr.isatty()), dtype=np.float32)
    rng = np.random.default_rng(args.seed)
    queries = rng.choice(len(texts), size=min(args.queries, len(texts)), replace=False)
    pairs = neighbour_pairs(keys, queries, args.per, args.min_cos, args.max_cos)
    with open(args.out + ".tmp", "w", encoding="utf-8") as f:
        f.write("sentence1\tsentence2\tcategory\n")
        for i, j, _ in pairs:
            f.write(f"{texts[i]}\t{texts[j]}\tneighbour\n")
    os.replace(args.out + ".tmp", args.out)
    cos = np.array([c for _, _, c in pairs]) if pairs else np.zeros(1)
    print(f"distill-pool: {len(pairs)} pairs from {len(queries)} queries, cosine median {np.median(cos):.3f}",
          file=sys.stderr)


if __name__ == "__main__":
    main()
