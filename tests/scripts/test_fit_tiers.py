"""scripts/fit-tiers.py, the combination of the gate's two tiers: its fit is where the weighted,
penalised log-loss's gradient (a plain loop here) vanishes, each part weighing the same; its
threshold is the best balanced accuracy found by trying every score; the JSON it writes scores as
sieve's TierCombination does (the formula written out again here); mismatched inputs are refused."""
import importlib.util
import json
import math
import os
import subprocess
import sys

import numpy as np

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "fit-tiers.py")
spec = importlib.util.spec_from_file_location("fit_tiers", SCRIPT)
ft = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ft)


def write_scores(path, scores, labels):
    with open(path, "w") as f:
        for s, y in zip(scores, labels):
            f.write(json.dumps({"score": float(s), "threshold": 0.5, "accepted": bool(s >= 0.5), "label": str(int(y))}) + "\n")


def parts(seed=3):
    rng = np.random.default_rng(seed)
    out = []
    for n, sep_fast, sep_cross in ((400, 2.0, 0.5), (120, 0.3, 2.0)):  # one part the fast tier reads, one the cross
        y = (rng.uniform(size=n) < 0.4).astype(int)
        f = 1 / (1 + np.exp(-(sep_fast * (2 * y - 1) + rng.normal(size=n))))
        c = 1 / (1 + np.exp(-(sep_cross * (2 * y - 1) + rng.normal(size=n))))
        out.append((f, c, y))
    return out


def run(tmp_path, data, extra=()):
    fast, cross = [], []
    for k, (f, c, y) in enumerate(data):
        write_scores(tmp_path / f"p{k}.fast.jsonl", f, y)
        write_scores(tmp_path / f"p{k}.cross.jsonl", c, y)
        fast.append(str(tmp_path / f"p{k}.fast.jsonl"))
        cross.append(str(tmp_path / f"p{k}.cross.jsonl"))
    return subprocess.run([sys.executable, SCRIPT, "--fast", *fast, "--cross", *cross, "--out",
                           str(tmp_path / "comb.json"), *extra], capture_output=True, text=True)


def p_of(c, f, x):
    """TierCombination::score, written out: sigma(bias + w_f z_f + w_c z_c), logits clamped at 1e-6."""
    lf = math.log(min(max(f, 1e-6), 1 - 1e-6) / (1 - min(max(f, 1e-6), 1 - 1e-6)))
    lc = math.log(min(max(x, 1e-6), 1 - 1e-6) / (1 - min(max(x, 1e-6), 1 - 1e-6)))
    t = c["bias"] + c["w_fast"] * (lf - c["mean_fast"]) / c["scale_fast"] + c["w_cross"] * (lc - c["mean_cross"]) / c["scale_cross"]
    return 1 / (1 + math.exp(-t))


def test_fit_is_the_weighted_optimum_and_its_threshold_the_best_balanced_accuracy(tmp_path):
    data = parts()
    r = run(tmp_path, data, ["--l2", "0.01"])
    assert r.returncode == 0, r.stderr
    c = json.loads((tmp_path / "comb.json").read_text())
    f = np.concatenate([d[0] for d in data])
    x = np.concatenate([d[1] for d in data])
    y = np.concatenate([d[2] for d in data]).astype(float)
    # Each part weighs 1/2, halved between its classes.
    w = np.zeros(len(y))
    at = 0
    for _, _, yk in data:
        for cl in (0, 1):
            m = np.zeros(len(y), bool)
            m[at:at + len(yk)] = yk == cl
            w[m] = 0.25 / m.sum()
        at += len(yk)
    grad = [0.0, 0.0, 0.0]
    for i in range(len(y)):
        p = p_of(c, f[i], x[i])
        zf = (math.log(f[i] / (1 - f[i])) - c["mean_fast"]) / c["scale_fast"]
        zc = (math.log(x[i] / (1 - x[i])) - c["mean_cross"]) / c["scale_cross"]
        grad[0] += w[i] * (p - y[i]) * zf
        grad[1] += w[i] * (p - y[i]) * zc
        grad[2] += w[i] * (p - y[i])
    grad[0] += 0.01 * c["w_fast"]
    grad[1] += 0.01 * c["w_cross"]
    assert max(abs(g) for g in grad) < 1e-8
    # Both tiers carry weight (each part is read by one of them), and the combination ranks all the
    # pairs better than either tier alone.
    assert c["w_fast"] > 0.3 and c["w_cross"] > 0.3
    rep = c["report"]["all"]
    assert rep["combined"] > max(rep["fast"], rep["cross"])
    # The threshold: every score tried as "accept >= t".
    ps = np.array([p_of(c, f[i], x[i]) for i in range(len(y))])
    best = max(0.5 * ((ps[y == 1] >= t).mean() + (ps[y == 0] < t).mean()) for t in ps)
    assert abs(c["report"]["dev_balanced_accuracy"] - best) < 1e-9
    chosen = c["threshold"]
    assert abs(0.5 * ((ps[y == 1] >= chosen).mean() + (ps[y == 0] < chosen).mean()) - best) < 1e-6


def test_the_threshold_decides_in_float32_as_the_fit_did(tmp_path):
    """sieve computes the combination's p in double and rounds it to float before comparing it with
    the threshold: a threshold chosen among float64 scores would reject the boundary pair there
    whenever its p rounds down. The threshold is a float32 value, and float32 scores reproduce the
    dev balanced accuracy the fit reports."""
    data = parts(seed=11)
    r = run(tmp_path, data)
    assert r.returncode == 0, r.stderr
    c = json.loads((tmp_path / "comb.json").read_text())
    thr = c["threshold"]
    assert float(np.float32(thr)) == thr
    f = np.concatenate([d[0] for d in data])
    x = np.concatenate([d[1] for d in data])
    y = np.concatenate([d[2] for d in data]).astype(float)
    ps = np.array([np.float32(p_of(c, f[i], x[i])) for i in range(len(y))], dtype=np.float64)  # as sieve rounds it
    ba = 0.5 * ((ps[y == 1] >= thr).mean() + (ps[y == 0] < thr).mean())
    assert abs(ba - c["report"]["dev_balanced_accuracy"]) < 1e-12


def test_refuses_unmatched_or_unlabelled_scores(tmp_path):
    data = parts()
    f, c, y = data[0]
    write_scores(tmp_path / "a.jsonl", f, y)
    write_scores(tmp_path / "b.jsonl", c[:-1], y[:-1])
    r = subprocess.run([sys.executable, SCRIPT, "--fast", str(tmp_path / "a.jsonl"), "--cross", str(tmp_path / "b.jsonl"),
                        "--out", str(tmp_path / "o.json")], capture_output=True, text=True)
    assert r.returncode != 0 and "do not score the same pairs" in r.stderr
    (tmp_path / "u.jsonl").write_text(json.dumps({"score": 0.5, "threshold": 0.5}) + "\n")
    r = subprocess.run([sys.executable, SCRIPT, "--fast", str(tmp_path / "u.jsonl"), "--cross", str(tmp_path / "u.jsonl"),
                        "--out", str(tmp_path / "o.json")], capture_output=True, text=True)
    assert r.returncode != 0 and "needs a 0/1 label" in r.stderr
    assert not (tmp_path / "o.json").exists()
