#!/usr/bin/env python3
"""Fits the mlp gate (`sieve verify create --kind mlp`) on labelled pairs' features.

Reads the feature TSVs that `sieve verify features` writes (label, category, one column per
feature), one per part, and standardises the features (means and scales of the training rows).
--hidden 0: L2-regularised logistic regression, fitted exactly by Newton's method (the penalised
log-likelihood is concave: it stops when the gradient's largest entry is below 1e-9). --hidden H:
one tanh layer of H units, then the logistic output, trained full-batch by Adam (lr, betas 0.9 /
0.999, eps 1e-8, the L2 strength added to the gradient as torch.optim.Adam's weight_decay does)
from PyTorch's default initialisation of nn.Linear (uniform +-1/sqrt(fan_in)) drawn from --seed.
Each training part carries the same total weight, split equally between its two classes, so that a
large part (CANNOT's negations, the generated pairs) does not drown a small human one (MRPC,
CondaQA): the goals are per set. The L2 strength is chosen on the dev parts only, by the mean of
the parts' ROC-AUCs (a part under 100 pairs, such as CondaQA's 46, is reported but not chosen
on: its AUC moves by 0.05 with a few pairs). Writes the gate as JSON ({features, mean, scale,
hidden_weights, hidden_bias, weights, bias, symmetric}) and a report of every setting's dev AUCs.

--soft (distillation; train-gate.sh DISTILL=...): parts whose label column is a teacher's probability
(a cross-encoder's, or the tiers' combination, over unlabelled pairs) rather than 0 / 1; the
log-loss against a probability is the cross-entropy to the teacher's answer. Each such part weighs
--soft-weight times a labelled part, spread evenly over its rows.

--monotone (train-gate.sh MONOTONE=1; not the shipped gate's: docs/evaluation.md): the score never falls
when a feature of agreement rises (the pooled cosine, F1, F2, the weakest rows, shared words and
bigrams) and never rises when a feature of disruption rises (the negation cue gap, crossings, the
order gap, discordant pairs, the length ratio, displacement), all else equal; F0, voice and
conj_swap stay free (a passive or a swapped coordination may undo a crossing). Projected Adam: after
every step each constrained feature's input weight into a hidden unit is set to 0 where it and the
unit's output weight would give the path from the feature to the score the wrong sign (tanh is
increasing, so the score's derivative in that feature is a sum of paths of the right sign).
--monotone-signs "name:+,name:-,..." replaces the table.
Without it the network learned, from PAWS's reordered paraphrases, to raise the score of a role swap
when a rare word of the pair had no good match (a rewrite's twin above the rewrite's own document).

  /usr/bin/python3 scripts/fit-gate.py --train F/paws-train.tsv F/mrpc-train.tsv ... \\
      --dev F/paws-dev.tsv ... --symmetric --out gate.json --report fit.json
"""
import argparse
import csv
import json
import os
import sys

import numpy as np


def read_features(path, soft=False):
    """(feature names, x [n, F], y [n]) of a `sieve verify features` file. soft: the label column is
    a teacher's probability in [0, 1] (a distillation part), else 0 or 1."""
    with open(path, newline="") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    if not rows or rows[0][:2] != ["label", "category"]:
        sys.exit(f"fit-gate: {path} is not a `sieve verify features` file (no label, category header)")
    names = rows[0][2:]
    y, x = [], []
    for i, r in enumerate(rows[1:], 2):
        if soft:
            try:
                v = float(r[0])
            except ValueError:
                v = float("nan")
            if not 0.0 <= v <= 1.0:
                sys.exit(f"fit-gate: {path}:{i}: a soft label must be a probability in [0, 1], not {r[0]!r}")
            y.append(v)
            x.append([float(v) for v in r[2:]])
            continue
        if r[0] not in ("0", "1"):
            sys.exit(f"fit-gate: {path}:{i}: label must be 0 or 1, not {r[0]!r}")
        y.append(int(r[0]))
        x.append([float(v) for v in r[2:]])
    return names, np.asarray(x, dtype=np.float64).reshape(len(y), len(names)), np.asarray(y, dtype=np.float64)


def auc(scores, labels):
    """ROC-AUC by ranks (ties count one half)."""
    scores, labels = np.asarray(scores), np.asarray(labels)
    n_pos, n_neg = labels.sum(), len(labels) - labels.sum()
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    order = np.argsort(scores, kind="mergesort")
    s = scores[order]
    ranks = np.empty(len(s))
    i = 0
    while i < len(s):
        j = i
        while j < len(s) and s[j] == s[i]:
            j += 1
        ranks[i:j] = (i + 1 + j) / 2.0
        i = j
    r = np.empty(len(s))
    r[order] = ranks
    return float((r[labels == 1].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


def fit_logistic(z, y, w, l2, iters=100):
    """Minimises sum_i w_i * logloss(y_i, b + z_i . beta) + l2/2 |beta|^2 by damped Newton steps.

    z: standardised features [n, F]; y in {0, 1}; w: row weights (summing to 1). Returns (beta, b).
    Each step is halved until the objective falls (computed without overflow), and the fit stops
    when the gradient is below 1e-9 or a step no longer lowers the objective: on separable data at
    L2 0, where the optimum lies at infinity, it ends finite instead of overflowing to NaN.
    """
    n, F = z.shape
    a = np.hstack([z, np.ones((n, 1))])
    theta = np.zeros(F + 1)
    reg = np.full(F + 1, l2)
    reg[-1] = 0.0  # the bias is not penalised

    def objective(t):
        u = a @ t
        return float(np.sum(w * (np.logaddexp(0.0, u) - y * u)) + 0.5 * np.sum(reg * t * t))

    current = objective(theta)
    for _ in range(iters):
        p = 0.5 * (1.0 + np.tanh(0.5 * (a @ theta)))  # the logistic function, overflow-free
        grad = a.T @ (w * (p - y)) + reg * theta
        if np.max(np.abs(grad)) < 1e-9:
            break
        hess = (a * (w * p * (1 - p))[:, None]).T @ a + np.diag(reg) + 1e-12 * np.eye(F + 1)
        step = np.linalg.solve(hess, grad)
        t = 1.0
        while t > 1e-10:
            candidate = objective(theta - t * step)
            if candidate < current:
                break
            t *= 0.5
        if t <= 1e-10 or current - candidate < 1e-15:
            break
        theta = theta - t * step
        current = candidate
    return theta[:-1], float(theta[-1])


def init_mlp(features, hidden, seed):
    """nn.Linear's default initialisation: weights and biases uniform in +-1/sqrt(fan_in)."""
    rng = np.random.default_rng(seed)
    b1, b2 = 1.0 / np.sqrt(features), 1.0 / np.sqrt(hidden)
    return {"w1": rng.uniform(-b1, b1, (hidden, features)), "b1": rng.uniform(-b1, b1, hidden),
            "w2": rng.uniform(-b2, b2, hidden), "b2": rng.uniform(-b2, b2, 1)}


def softplus(u):
    return np.logaddexp(0.0, u)


def mlp_logits(p, z):
    h = np.tanh(z @ p["w1"].T + p["b1"])
    u = h @ p["w2"] + p["b2"][0]
    if "c" in p:  # --veto: the skip path is the base; the network can only lower it
        return z @ p["ws"] + p["c"][0] - softplus(u), h
    logit = u
    if "ws" in p:  # --skip: a linear path from the named features straight to the logit
        logit = logit + z @ p["ws"]
    return logit, h


def mlp_loss_grad(p, z, y, w):
    """The weighted log-loss sum_i w_i * logloss(y_i, logit_i) and its gradient."""
    logit, h = mlp_logits(p, z)
    loss = float(np.sum(w * (np.logaddexp(0.0, logit) - y * logit)))
    d = w * (1.0 / (1.0 + np.exp(-logit)) - y)  # dloss/dlogit
    du = d
    if "c" in p:  # logit = base - softplus(u): dlogit/du = -sigmoid(u)
        u = h @ p["w2"] + p["b2"][0]
        du = -d / (1.0 + np.exp(-u))
    dh = np.outer(du, p["w2"]) * (1.0 - h * h)
    g = {"w1": dh.T @ z, "b1": dh.sum(0), "w2": h.T @ du, "b2": np.array([du.sum()])}
    if "ws" in p:
        g["ws"] = z.T @ d
    if "c" in p:
        g["c"] = np.array([d.sum()])
    return loss, g


# The sign of each feature's effect under --monotone: +1 agreement, -1 disruption; the rest free.
MONOTONE_SIGNS = {"pooled": 1, "f1": 1, "f2": 1, "f2_pos": 1, "row_min": 1, "row_low": 1, "id_share": 1,
                  "bigram_share": 1, "cue_gap": -1, "crossed": -1, "order_gap": -1, "discordant": -1,
                  "len_ratio": -1, "displacement": -1}


def monotone_signs(names, table=None):
    """The sign vector of `table` (default MONOTONE_SIGNS) over the features `names` (0: free)."""
    table = MONOTONE_SIGNS if table is None else table
    return np.array([table.get(n, 0) for n in names], dtype=float)


def parse_signs(spec, names):
    """{name: +1 / -1} from "name:+,name:-"; sys.exit naming an unknown feature or sign."""
    table = {}
    for item in filter(None, (x.strip() for x in spec.split(","))):
        name, _, sign = item.partition(":")
        if name not in names or sign not in ("+", "-"):
            sys.exit(f"fit-gate: --monotone-signs: '{item}' is not FEATURE:+ or FEATURE:- (features: {', '.join(names)})")
        table[name] = 1 if sign == "+" else -1
    return table


def project_monotone(p, signs):
    """In place: every path from a signed feature f through unit h to the score has f's sign:
    sign(f) * w2[h] * w1[h, f] >= 0 (tanh is increasing), the input weight set to 0 where not."""
    for f, s in enumerate(signs):
        if s != 0:
            wrong = s * p["w2"] * p["w1"][:, f] < 0
            p["w1"][wrong, f] = 0.0


def fit_mlp(z, y, w, hidden, l2, steps=1000, lr=0.01, seed=0, trace=None, signs=None, skip=None, veto=False):
    """Full-batch Adam on the weighted log-loss with coupled L2 (torch.optim.Adam's weight_decay).

    `signs` (one per feature, +1 / -1 / 0): projected after every step (project_monotone), so that
    the logit is non-decreasing in the +1 features and non-increasing in the -1 ones.
    Returns the parameters; `trace`, a list, receives each step's loss (before the step)."""
    p = init_mlp(z.shape[1], hidden, seed)
    if skip is not None:  # the skip weights start at 0 and only the masked features' move
        p["ws"] = np.zeros(z.shape[1])
    if veto:  # the base starts as the skip features themselves, the veto near 0 (softplus(-2))
        p["ws"] = np.asarray(skip, dtype=float).copy()
        p["c"] = np.zeros(1)
        p["b2"] = np.array([-2.0])
    if signs is not None:
        project_monotone(p, signs)
    m = {k: np.zeros_like(v) for k, v in p.items()}
    v = {k: np.zeros_like(val) for k, val in p.items()}
    mask = np.asarray(skip, dtype=float) if skip is not None else None
    b1, b2, eps = 0.9, 0.999, 1e-8
    for t in range(1, steps + 1):
        loss, g = mlp_loss_grad(p, z, y, w)
        if mask is not None:
            g["ws"] = g["ws"] * mask  # only the named features' skip weights move
        if trace is not None:
            trace.append(loss)
        for k in p:
            gk = g[k] + l2 * p[k]
            m[k] = b1 * m[k] + (1 - b1) * gk
            v[k] = b2 * v[k] + (1 - b2) * gk * gk
            p[k] = p[k] - lr * (m[k] / (1 - b1 ** t)) / (np.sqrt(v[k] / (1 - b2 ** t)) + eps)
        if signs is not None:
            project_monotone(p, signs)
    return p


def row_weights(parts, soft=(), soft_weight=1.0, part_weights=None):
    """Each part the same total weight (or part_weights[k] times it), half to each of its classes (a
    one-class part: all to it). Parts whose index is in `soft` (teacher probabilities, no classes)
    weigh `soft_weight` times a labelled part, spread evenly over their rows."""
    ws = []
    for k, (_, y) in enumerate(parts):
        if k in soft:
            ws.append(np.full(len(y), soft_weight / len(y)))
            continue
        w = np.zeros(len(y))
        classes = [c for c in (0, 1) if (y == c).any()]
        for c in classes:
            w[y == c] = 1.0 / (len(classes) * (y == c).sum())
        ws.append(w * (part_weights[k] if part_weights is not None else 1.0))
    w = np.concatenate(ws)
    return w / w.sum()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--train", nargs="+", required=True, help="feature TSVs of the training parts")
    ap.add_argument("--soft", nargs="*", default=[],
                    help="feature TSVs whose label is a teacher's probability (distillation parts)")
    ap.add_argument("--soft-weight", type=float, default=1.0,
                    help="total weight of each --soft part, against 1 for each --train part")
    ap.add_argument("--dev", nargs="+", required=True, help="feature TSVs of the dev parts (the choice)")
    ap.add_argument("--hidden", type=int, default=32, help="tanh hidden units (0: logistic regression)")
    ap.add_argument("--l2", default="0,0.0001,0.001,0.01", help="L2 strengths to choose from")
    ap.add_argument("--steps", type=int, default=1000, help="Adam steps (full batch; --hidden > 0)")
    ap.add_argument("--lr", type=float, default=0.01, help="Adam learning rate")
    ap.add_argument("--seed", type=int, default=0, help="initialisation seed")
    ap.add_argument("--min-choice-pairs", type=int, default=100, help="dev parts smaller than this are reported, not chosen on")
    ap.add_argument("--symmetric", action="store_true", help="the features are both directions' mean (record it)")
    ap.add_argument("--monotone", action="store_true",
                    help="the score non-decreasing in the agreement features and non-increasing in the disruption "
                         "ones (MONOTONE_SIGNS; needs --hidden > 0)")
    ap.add_argument("--monotone-signs", help="with --monotone: the constrained features instead of the table, "
                                             "as name:+ (non-decreasing) or name:- (non-increasing), comma-separated")
    ap.add_argument("--skip", default="",
                    help="comma-separated features given a linear path straight to the logit beside the hidden layer "
                         "(\"pooled\": the pooled cosine as the base the network corrects; recorded as skip_weights)")
    ap.add_argument("--veto", action="store_true",
                    help="with --skip: logit = the skip features' linear base - softplus(network): the network can only "
                         "lower the base (the pooled cosine), so a pair it sees nothing in keeps the base's rank")
    ap.add_argument("--part-weight", action="append", default=[], metavar="NAME=W[,W...]",
                    help="the training part whose file name starts with NAME- weighs W times another part; several "
                         "values: each is tried, the choice made on the dev parts like the L2 strength")
    ap.add_argument("--floor", default="",
                    help="a feature (\"pooled\"): only settings whose dev AUC is at least that feature's own on every "
                         "chosen-on dev part are chosen from (the best of them by mean AUC; none: the one closest)")
    ap.add_argument("--out", required=True, help="the fitted gate (JSON, for `sieve verify create --kind linear --weights`)")
    ap.add_argument("--report", help="JSON report: every setting's dev AUCs")
    args = ap.parse_args()

    names = None
    train = []
    for p in args.train:
        n, x, y = read_features(p)
        if names is not None and n != names:
            sys.exit(f"fit-gate: {p} has other feature columns than {args.train[0]}")
        names = n
        train.append((x, y))
    soft = set()
    for p in args.soft:
        n, x, y = read_features(p, soft=True)
        if names is not None and n != names:
            sys.exit(f"fit-gate: {p} has other feature columns than {args.train[0]}")
        soft.add(len(train))
        train.append((x, y))
    if args.soft_weight < 0:
        sys.exit("fit-gate: --soft-weight must be >= 0")
    dev = {}
    for p in args.dev:
        n, x, y = read_features(p)
        if n != names:
            sys.exit(f"fit-gate: {p} has other feature columns than the training parts")
        if len(set(y.tolist())) < 2:
            print(f"fit-gate: {os.path.basename(p)}: one class only, not used for the choice", file=sys.stderr)
            continue
        dev[os.path.basename(p)] = (x, y)
    if not dev:
        sys.exit("fit-gate: no dev part holds both classes")
    x = np.vstack([t[0] for t in train])
    y = np.concatenate([t[1] for t in train])
    # --part-weight: the grid of per-part weights (each combination a setting).
    grid_parts = [[]]
    for spec in args.part_weight:
        name, _, values = spec.partition("=")
        try:
            ws_ = [float(v) for v in values.split(",")]
        except ValueError:
            ws_ = []
        if not name or not ws_ or any(v < 0 for v in ws_):
            sys.exit(f"fit-gate: --part-weight '{spec}' is not NAME=W[,W...] with weights >= 0")
        if not any(os.path.basename(t).startswith(name + "-") for t in args.train):
            sys.exit(f"fit-gate: --part-weight: no training part named {name}-*")
        grid_parts = [g + [(name, v)] for g in grid_parts for v in ws_]
    def part_weights(combo):
        out = []
        for t in args.train + args.soft:
            wt = 1.0
            for name, v in combo:
                if os.path.basename(t).startswith(name + "-"):
                    wt = v
            out.append(wt)
        return out
    skip = None
    if args.skip:
        unknown = [n for n in args.skip.split(",") if n not in names]
        if unknown:
            sys.exit(f"fit-gate: --skip: unknown feature(s) {', '.join(unknown)} (features: {', '.join(names)})")
        if args.hidden == 0:
            sys.exit("fit-gate: --skip needs the tanh network (--hidden > 0); logistic regression is linear already")
        skip = [1.0 if n in args.skip.split(",") else 0.0 for n in names]
    if args.veto and skip is None:
        sys.exit("fit-gate: --veto needs --skip (the base it lowers, e.g. --skip pooled)")
    if args.floor and args.floor not in names:
        sys.exit(f"fit-gate: --floor: unknown feature {args.floor}")
    mean = x.mean(0)
    scale = x.std(0)
    scale[scale < 1e-6] = 1.0  # a constant feature: left unscaled (its weight goes to 0 under L2)
    z = (x - mean) / scale
    print(f"fit-gate: {len(y)} training pairs in {len(train)} parts, {len(names)} features", file=sys.stderr)

    signs = None
    if args.monotone:
        if args.hidden == 0:
            sys.exit("fit-gate: --monotone needs the tanh network (--hidden > 0)")
        signs = monotone_signs(names, parse_signs(args.monotone_signs, names) if args.monotone_signs else None)
        print("fit-gate: monotone: " + ", ".join(f"{n} {'+' if s > 0 else '-'}" for n, s in zip(names, signs) if s),
              file=sys.stderr)
    chosen_on = [k for k, (_, dy) in dev.items() if len(dy) >= args.min_choice_pairs] or list(dev)
    floor = {}
    if args.floor:
        fi = names.index(args.floor)
        floor = {k: auc(dx[:, fi], dy) for k, (dx, dy) in dev.items()}
        print("fit-gate: floor (" + args.floor + "): " + " ".join(f"{k.replace('.tsv', '')} {v:.3f}" for k, v in floor.items()),
              file=sys.stderr)
    results = []
    for combo in grid_parts:
        w = row_weights(train, soft, args.soft_weight, part_weights(combo) if combo else None)
        for l2 in [float(v) for v in args.l2.split(",")]:
            if args.hidden == 0:
                beta, b = fit_logistic(z, y, w, l2)
                gate = {"hidden_weights": [], "hidden_bias": [], "weights": beta.tolist(), "bias": b}
                score = lambda dz, beta=beta, b=b: dz @ beta + b
            else:
                p = fit_mlp(z, y, w, args.hidden, l2, args.steps, args.lr, args.seed, signs=signs, skip=skip,
                            veto=args.veto)
                gate = {"hidden_weights": p["w1"].ravel().tolist(), "hidden_bias": p["b1"].tolist(),
                        "weights": p["w2"].tolist(), "bias": float(p["b2"][0])}
                if skip is not None:
                    gate["skip_weights"] = p["ws"].tolist()
                if args.veto:
                    gate["veto"] = True
                    gate["skip_bias"] = float(p["c"][0])
                score = lambda dz, p=p: mlp_logits(p, dz)[0]
            per = {k: auc(score((dx - mean) / scale), dy) for k, (dx, dy) in dev.items()}
            margin = min((per[k] - floor[k] for k in chosen_on), default=0.0) if floor else 0.0
            r = {"l2": l2, "part_weights": dict(combo), "mean_auc": sum(per[k] for k in chosen_on) / len(chosen_on),
                 "worst_auc": min(per[k] for k in chosen_on), "floor_margin": margin, "auc": per, "gate": gate}
            results.append(r)
            print(f"fit-gate: l2 {l2:g}" + "".join(f" {n}={v:g}" for n, v in combo) +
                  f": mean dev AUC {r['mean_auc']:.4f}, worst {r['worst_auc']:.4f}" +
                  (f", above the floor by {margin:+.4f}" if floor else "") + "  " +
                  " ".join(f"{k.replace('.tsv', '')} {v:.3f}" for k, v in per.items()), file=sys.stderr)
    eligible = [r for r in results if r["floor_margin"] >= 0]
    best = max(eligible, key=lambda r: r["mean_auc"]) if eligible else max(results, key=lambda r: r["floor_margin"])
    gate = {"features": names, "mean": mean.tolist(), "scale": scale.tolist(), **best["gate"],
            "symmetric": args.symmetric}
    with open(args.out, "w") as f:
        json.dump(gate, f, indent=1)
    if args.report:
        with open(args.report, "w") as f:
            json.dump({"train": args.train, "soft": args.soft, "soft_weight": args.soft_weight, "dev": list(dev), "chosen_on": chosen_on, "hidden": args.hidden,
                       "skip": args.skip, "floor": {"feature": args.floor, "auc": floor} if floor else None,
                       "monotone": {n: int(s) for n, s in zip(names, signs) if s} if signs is not None else None,
                       "steps": args.steps, "lr": args.lr, "seed": args.seed,
                       "best": {k: v for k, v in best.items() if k != "gate"},
                       "grid": [{k: v for k, v in r.items() if k != "gate"} for r in results]}, f, indent=1)
    print(json.dumps({"l2": best["l2"], "part_weights": best["part_weights"], "mean_dev_auc": best["mean_auc"],
                      "dev_auc": best["auc"]}))


if __name__ == "__main__":
    main()
