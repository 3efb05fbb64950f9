#!/usr/bin/env python3
"""Multi-sentence pairs made of labelled sentence pairs (the gate recipe's source `long`).

    scripts/long-pairs.py --pairs qqp-train.tsv qtwins-train.tsv mrpc-train.tsv --count 3000 \
        --seed 42 --out long-train.tsv

A forum post, a prompt with context, a claim with its qualifiers: what a cache or a deduplicator
compares is often several sentences, while every labelled pair set the gate learns from holds one
sentence a side. Each row here joins k (2 to 4, drawn) labelled pairs of one part, side by side in
the same order (text 1 = the first sentences joined, text 2 = the second ones):
  - long_same (label 1): every segment a paraphrase (a label-1 row);
  - long_one_differs (label 0): one segment, at a drawn place, a pair that differs (a label-0 row:
    another question on the topic, a negation, another number...), the rest paraphrases;
  - long_all_differ (label 0): every segment a label-0 row.
Half the rows are long_same, three eighths long_one_differs, one eighth long_all_differ. The
category of a long_one_differs row names the differing segment's category. Rows of one part only
(train, dev or eval) are joined, so the parts stay apart as their sources are. Reads and writes the
`sentence1 sentence2 category label` TSV of the recipe's sets; the same seed gives the same file.
"""
import argparse
import random
import sys


def read(path):
    rows = []
    with open(path, encoding="utf-8") as f:
        header = f.readline().rstrip("\n").split("\t")
        if header[:4] != ["sentence1", "sentence2", "category", "label"]:
            sys.exit(f"long-pairs: {path}: expected the header sentence1, sentence2, category, label")
        for i, line in enumerate(f, 2):
            p = line.rstrip("\n").split("\t")
            if len(p) < 4 or p[3] not in ("0", "1"):
                sys.exit(f"long-pairs: {path}:{i}: expected four fields, label 0 or 1")
            if p[0].strip() and p[1].strip():
                rows.append((p[0].strip(), p[1].strip(), p[2], int(p[3])))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", nargs="+", required=True, help="labelled pair files of one part")
    ap.add_argument("--count", type=int, default=3000, help="rows to write")
    ap.add_argument("--min-segments", type=int, default=2)
    ap.add_argument("--max-segments", type=int, default=4)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    if not 1 <= a.min_segments <= a.max_segments:
        sys.exit("long-pairs: need 1 <= --min-segments <= --max-segments")
    rows = [r for p in a.pairs for r in read(p)]
    same = [r for r in rows if r[3] == 1]
    differ = [r for r in rows if r[3] == 0]
    if len(same) < a.max_segments or not differ:
        sys.exit(f"long-pairs: {len(same)} paraphrases and {len(differ)} differing pairs: too few to join")
    rng = random.Random(a.seed)
    out = []
    for i in range(a.count):
        k = rng.randint(a.min_segments, a.max_segments)
        kind = i % 8
        if kind < 4:
            segs, cat, label = rng.sample(same, k), "long_same", 1
        elif kind < 7:
            segs = rng.sample(same, k - 1)
            odd = rng.choice(differ)
            segs.insert(rng.randint(0, k - 1), odd)
            cat, label = "long_one_differs_" + odd[2], 0
        else:
            segs, cat, label = rng.sample(differ, k), "long_all_differ", 0
        out.append((" ".join(s[0] for s in segs), " ".join(s[1] for s in segs), cat, label))
    with open(a.out + ".tmp", "w", encoding="utf-8") as f:
        f.write("sentence1\tsentence2\tcategory\tlabel\n")
        for r in out:
            f.write(f"{r[0]}\t{r[1]}\t{r[2]}\t{r[3]}\n")
    import os
    os.replace(a.out + ".tmp", a.out)
    print(f"long-pairs: {len(out)} rows from {len(same)} paraphrases and {len(differ)} differing pairs -> {a.out}",
          file=sys.stderr)


if __name__ == "__main__":
    main()
