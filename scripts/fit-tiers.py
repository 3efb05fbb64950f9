#!/usr/bin/env python3
"""Fits the combination of the gate's two tiers (issue 43, item 4) that a cascade scores its band with.

Reads, for each dev part, the JSON lines `sieve verify score` writes for the fast tier (the model's
gate: --verifier default or the gate file) and for the cross-encoder (--verifier cross:DIR), pair
for pair. The combination is a logistic regression over the two scores' logits, standardised:
p = sigma(bias + w_fast * z_fast + w_cross * z_cross), z = (logit(score) - mean) / scale, the scores
clamped to [1e-6, 1 - 1e-6]; fitted exactly by Newton's method (scripts/fit-gate.py's
fit_logistic) with each part weighing the same and its weight halved between its classes (as the
gate's own fit: a large part such as CANNOT's negations does not drown PAWS). Its threshold is the
one of the highest balanced accuracy over all the dev pairs (what the gate's calibration uses).
Writes {mean_fast, scale_fast, mean_cross, scale_cross, w_fast, w_cross, bias, threshold} and the
dev ROC-AUCs of each tier and of the combination, per part. `sieve verify calibrate --verifier
cascade:DIR --combination OUT` stores it with the band; with --max-sent 1 the cascade can send
every pair, which makes it the combination itself.

  /usr/bin/python3 scripts/fit-tiers.py --fast F/paws.fast.jsonl F/mrpc.fast.jsonl ... \\
      --cross F/paws.cross.jsonl F/mrpc.cross.jsonl ... --out combination.json
"""
import argparse
import importlib.util
import json
import os
import sys

import numpy as np

_spec = importlib.util.spec_from_file_location("fit_gate", os.path.join(os.path.dirname(__file__), "fit-gate.py"))
fg = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fg)


def read_scores(path):
    """(scores, labels) of a `sieve verify score` output whose pairs carry 0/1 labels."""
    s, y = [], []
    with open(path) as f:
        for i, line in enumerate(f, 1):
            r = json.loads(line)
            lab = str(r.get("label", ""))
            if lab not in ("0", "1"):
                sys.exit(f"fit-tiers: {path}:{i}: every pair needs a 0/1 label (the dev parts' files), not {lab!r}")
            score = float(r["score"])
            if not np.isfinite(score):
                sys.exit(f"fit-tiers: {path}:{i}: non-finite score")
            s.append(score)
            y.append(int(lab))
    return np.asarray(s), np.asarray(y, dtype=np.float64)


def logit(s):
    s = np.clip(np.asarray(s, dtype=np.float64), 1e-6, 1 - 1e-6)
    return np.log(s / (1 - s))


def combine(c, fast, cross):
    t = (c["bias"] + c["w_fast"] * (logit(fast) - c["mean_fast"]) / c["scale_fast"]
         + c["w_cross"] * (logit(cross) - c["mean_cross"]) / c["scale_cross"])
    return 1.0 / (1.0 + np.exp(-t))


def balanced_accuracy_threshold(scores, y):
    """The threshold (a score of the pairs: accept >= it) of the highest (TPR + TNR) / 2; ties: the lowest."""
    order = np.argsort(-scores, kind="mergesort")
    s, lab = scores[order], y[order]
    n_pos, n_neg = lab.sum(), len(lab) - lab.sum()
    tp = np.cumsum(lab)
    fp = np.cumsum(1 - lab)
    best, thr = -1.0, float(s[0])
    for i in range(len(s)):
        if i + 1 < len(s) and s[i + 1] == s[i]:
            continue  # a threshold accepts every pair of its score
        ba = 0.5 * (tp[i] / n_pos + (n_neg - fp[i]) / n_neg)
        if ba >= best:
            best, thr = ba, float(s[i])
    return thr, best


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fast", nargs="+", required=True, help="the fast tier's `verify score` output, one per dev part")
    ap.add_argument("--cross", nargs="+", required=True, help="the cross-encoder's, the same parts in the same order")
    ap.add_argument("--l2", type=float, default=1e-3, help="L2 strength of the two weights")
    ap.add_argument("--out", required=True, help="the combination (JSON)")
    args = ap.parse_args()
    if len(args.fast) != len(args.cross):
        sys.exit("fit-tiers: give as many --cross files as --fast files (the same parts)")
    parts, fast, cross, ys = [], [], [], []
    for pf, pc in zip(args.fast, args.cross):
        f, y = read_scores(pf)
        c, yc = read_scores(pc)
        if len(f) != len(c) or not np.array_equal(y, yc):
            sys.exit(f"fit-tiers: {pf} and {pc} do not score the same pairs")
        if len(set(y.tolist())) < 2:
            print(f"fit-tiers: {os.path.basename(pf)}: one class only", file=sys.stderr)
        parts.append((None, y))
        fast.append(f)
        cross.append(c)
        ys.append(y)
    f, c, y = np.concatenate(fast), np.concatenate(cross), np.concatenate(ys)
    if y.min() == y.max():
        sys.exit("fit-tiers: the dev pairs need both classes")
    x = np.stack([logit(f), logit(c)], 1)
    mean, scale = x.mean(0), x.std(0)
    scale[scale < 1e-9] = 1.0
    w = fg.row_weights(parts)
    beta, b = fg.fit_logistic((x - mean) / scale, y, w, args.l2)
    comb = {"mean_fast": float(mean[0]), "scale_fast": float(scale[0]), "mean_cross": float(mean[1]),
            "scale_cross": float(scale[1]), "w_fast": float(beta[0]), "w_cross": float(beta[1]), "bias": b}
    # sieve scores a pair in float (TierCombination::score rounds p to float32) and compares that
    # with the threshold: the threshold is chosen among the float32 scores, so the pair at the
    # boundary is accepted there as it is here.
    p = combine(comb, f, c).astype(np.float32).astype(np.float64)
    comb["threshold"], bacc = balanced_accuracy_threshold(p, y)
    report = {"pairs": int(len(y)), "dev_balanced_accuracy": bacc, "l2": args.l2, "parts": {}}
    at = 0
    for pf, yi in zip(args.fast, ys):
        sl = slice(at, at + len(yi))
        at += len(yi)
        if yi.min() != yi.max():
            report["parts"][os.path.basename(pf)] = {
                "fast": fg.auc(f[sl], yi), "cross": fg.auc(c[sl], yi), "combined": fg.auc(p[sl], yi)}
    report["all"] = {"fast": fg.auc(f, y), "cross": fg.auc(c, y), "combined": fg.auc(p, y)}
    with open(args.out + ".tmp", "w") as fo:
        json.dump({**comb, "report": report}, fo, indent=1)
    os.replace(args.out + ".tmp", args.out)
    print(json.dumps({**comb, "dev_auc": report["all"]}))


if __name__ == "__main__":
    main()
