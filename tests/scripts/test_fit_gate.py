"""scripts/fit-gate.py, the trainer of the mlp gate: the logistic fit sits where the penalised loss's
gradient, computed here by a plain loop, is zero; the tanh network's Adam steps equal PyTorch's
(nn.Linear layers holding the same starting weights, torch.optim.Adam with weight_decay, the
weighted log-loss) loss for loss and weight for weight; every part weighs the same; and the script
end to end writes a gate whose scores rank its dev pairs as its report says."""
import importlib.util
import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "fit-gate.py")
spec = importlib.util.spec_from_file_location("fit_gate", SCRIPT)
fg = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fg)


def data(n=300, f=5, seed=1):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, f))
    y = (z[:, 0] - 0.5 * z[:, 1] * z[:, 2] + 0.3 * rng.normal(size=n) > 0).astype(float)
    w = rng.uniform(0.5, 1.5, n)
    return z, y, w / w.sum()


def test_logistic_fit_is_where_the_gradient_vanishes():
    z, y, w = data()
    l2 = 0.01
    beta, b = fg.fit_logistic(z, y, w, l2)
    grad = [0.0] * (len(beta) + 1)
    for i in range(len(y)):  # a plain loop: d/dtheta of w_i * logloss
        t = b + sum(beta[k] * z[i, k] for k in range(len(beta)))
        r = w[i] * (1.0 / (1.0 + math.exp(-t)) - y[i])
        for k in range(len(beta)):
            grad[k] += r * z[i, k]
        grad[-1] += r
    for k in range(len(beta)):
        grad[k] += l2 * beta[k]
    assert max(abs(g) for g in grad) < 1e-8
    assert abs(beta[0]) > 0.5  # it learned the planted signal


def test_mlp_steps_equal_pytorch_adam():
    try:
        import torch
    except ImportError:
        if os.environ.get("CI") == "true":
            pytest.fail("PyTorch (Debian's python3-torch, the oracle) is missing")
        pytest.skip("PyTorch is not installed")
    torch.set_default_dtype(torch.float64)
    z, y, w = data()
    hidden, l2, lr, steps = 6, 1e-3, 0.01, 60
    trace = []
    p = fg.fit_mlp(z, y, w, hidden, l2, steps=steps, lr=lr, seed=3, trace=trace)
    start = fg.init_mlp(z.shape[1], hidden, 3)
    l1, l2n = torch.nn.Linear(z.shape[1], hidden), torch.nn.Linear(hidden, 1)
    with torch.no_grad():
        l1.weight.copy_(torch.tensor(start["w1"]))
        l1.bias.copy_(torch.tensor(start["b1"]))
        l2n.weight.copy_(torch.tensor(start["w2"]).unsqueeze(0))
        l2n.bias.copy_(torch.tensor(start["b2"]))
    params = [l1.weight, l1.bias, l2n.weight, l2n.bias]
    opt = torch.optim.Adam(params, lr=lr, weight_decay=l2)
    Z, Y, W = torch.tensor(z), torch.tensor(y), torch.tensor(w)
    ref = []
    for _ in range(steps):
        opt.zero_grad()
        logit = l2n(torch.tanh(l1(Z))).squeeze(1)
        loss = (W * torch.nn.functional.binary_cross_entropy_with_logits(logit, Y, reduction="none")).sum()
        ref.append(loss.item())
        loss.backward()
        opt.step()
    assert len(trace) == steps
    assert max(abs(a - b) for a, b in zip(trace, ref)) < 1e-10
    assert trace[-1] < trace[0] - 0.05  # it learned
    assert np.max(np.abs(p["w1"] - l1.weight.detach().numpy())) < 1e-9
    assert np.max(np.abs(p["w2"] - l2n.weight.detach().numpy()[0])) < 1e-9
    assert abs(p["b2"][0] - l2n.bias.item()) < 1e-9


def test_each_part_weighs_the_same_and_its_classes_halve_it():
    parts = [(None, np.array([1, 1, 1, 0])), (None, np.array([0] * 10)), (None, np.array([1, 0]))]
    w = fg.row_weights(parts)
    assert abs(w.sum() - 1) < 1e-12
    assert abs(w[:4].sum() - 1 / 3) < 1e-12 and abs(w[:3].sum() - 1 / 6) < 1e-12  # positives half of part 1
    assert abs(w[4:14].sum() - 1 / 3) < 1e-12  # a one-class part: all its share to that class
    assert abs(w[14] - 1 / 6) < 1e-12


def write_features(path, z, y):
    names = [f"x{k}" for k in range(z.shape[1])]
    with open(path, "w") as f:
        f.write("label\tcategory\t" + "\t".join(names) + "\n")
        for zi, yi in zip(z, y):
            f.write(f"{int(yi)}\tc\t" + "\t".join(repr(float(v)) for v in zi) + "\n")


def test_script_writes_the_gate_its_report_describes(tmp_path):
    z, y, _ = data(400)
    write_features(tmp_path / "a-train.tsv", z[:200], y[:200])
    write_features(tmp_path / "b-train.tsv", z[200:300], y[200:300])
    write_features(tmp_path / "a-dev.tsv", z[300:], y[300:])
    out = subprocess.run([sys.executable, SCRIPT, "--train", str(tmp_path / "a-train.tsv"), str(tmp_path / "b-train.tsv"),
                          "--dev", str(tmp_path / "a-dev.tsv"), "--hidden", "4", "--steps", "200", "--l2", "0,0.01",
                          "--symmetric", "--out", str(tmp_path / "gate.json"), "--report", str(tmp_path / "fit.json")],
                         check=True, capture_output=True, text=True)
    gate = json.loads((tmp_path / "gate.json").read_text())
    report = json.loads((tmp_path / "fit.json").read_text())
    assert gate["symmetric"] is True and len(gate["hidden_bias"]) == 4 and len(gate["hidden_weights"]) == 4 * 5
    # The gate's own scores of the dev rows, computed here from the JSON, give the reported AUC.
    zd = (z[300:] - np.array(gate["mean"])) / np.array(gate["scale"])
    h = np.tanh(zd @ np.array(gate["hidden_weights"]).reshape(4, 5).T + np.array(gate["hidden_bias"]))
    s = h @ np.array(gate["weights"]) + gate["bias"]
    assert abs(fg.auc(s, y[300:]) - report["best"]["auc"]["a-dev.tsv"]) < 1e-12
    assert report["best"]["auc"]["a-dev.tsv"] > 0.8
    assert json.loads(out.stdout)["l2"] == report["best"]["l2"]
    # A file that is not `sieve verify features` output is refused by name.
    (tmp_path / "bad.tsv").write_text("sentence1\tsentence2\nx\ty\n")
    bad = subprocess.run([sys.executable, SCRIPT, "--train", str(tmp_path / "bad.tsv"), "--dev", str(tmp_path / "a-dev.tsv"),
                          "--out", str(tmp_path / "g.json")], capture_output=True, text=True)
    assert bad.returncode != 0 and "not a `sieve verify features` file" in bad.stderr


def test_monotone_fit_never_rewards_disruption_and_the_plain_fit_can():
    # Labels that rise with feature 0 except where feature 2 is high, and a disruption feature 1
    # that, in the data, goes with "same" where feature 2 is high (the shape of PAWS's reordered
    # paraphrases next to a rare unmatched word): a plain fit learns to reward feature 1 there.
    rng = np.random.default_rng(3)
    n = 600
    z = rng.normal(size=(n, 3))
    y = np.where(z[:, 2] > 0.5, (z[:, 1] > 0).astype(float), (z[:, 0] - z[:, 1] > 0).astype(float))
    w = np.full(n, 1.0 / n)
    signs = np.array([1.0, -1.0, 0.0])  # 0: agreement, 1: disruption, 2: free

    def worst_step(p, f, s):
        # The largest move against the sign when feature f alone steps up by 0.5, over many points.
        pts = rng.normal(size=(2000, 3)) * 1.5
        up = pts.copy()
        up[:, f] += 0.5
        d = fg.mlp_logits(p, up)[0] - fg.mlp_logits(p, pts)[0]
        return float(np.max(-s * d))

    plain = fg.fit_mlp(z, y, w, 8, 0.0, steps=400, lr=0.05, seed=1)
    assert worst_step(plain, 1, -1.0) > 0.1  # the plain network does reward the disruption somewhere
    mono = fg.fit_mlp(z, y, w, 8, 0.0, steps=400, lr=0.05, seed=1, signs=signs)
    assert (mono["w2"] * mono["w1"][:, 0] >= 0).all() and (mono["w2"] * mono["w1"][:, 1] <= 0).all()
    assert worst_step(mono, 0, 1.0) <= 1e-12
    assert worst_step(mono, 1, -1.0) <= 1e-12
    # It still learns what the signs allow.
    assert fg.auc(fg.mlp_logits(mono, z)[0], y) > 0.7
    # The signs come from the feature names; unknown names are free.
    assert fg.monotone_signs(["pooled", "crossed", "voice", "something"]).tolist() == [1, -1, 0, 0]
    assert fg.parse_signs("voice:+,crossed:-", ["voice", "crossed"]) == {"voice": 1, "crossed": -1}
    with pytest.raises(SystemExit):
        fg.parse_signs("nope:+", ["voice"])


def test_soft_labels_teach_the_teachers_own_model(tmp_path):
    # Distillation: a part labelled with a teacher's probabilities sigmoid(z . beta + b). With the
    # teacher's own model class (logistic) and no penalty, the fit recovers the teacher's weights,
    # which hard 0/1 labels drawn from the same teacher only approach.
    rng = np.random.default_rng(5)
    z = rng.normal(size=(2000, 3))
    beta, b = np.array([1.5, -0.7, 0.2]), 0.3
    p = 1.0 / (1.0 + np.exp(-(z @ beta + b)))
    w = fg.row_weights([(z, p)], soft={0})
    assert np.allclose(w, 1 / 2000)  # soft rows: evenly weighted, no classes
    got, got_b = fg.fit_logistic(z, p, w, 0.0)
    assert np.max(np.abs(got - beta)) < 1e-6 and abs(got_b - b) < 1e-6
    hard = (rng.uniform(size=len(p)) < p).astype(float)
    got_hard, _ = fg.fit_logistic(z, hard, np.full(len(p), 1 / len(p)), 0.0)
    assert np.max(np.abs(got_hard - beta)) > 1e-3
    # A soft part's total weight against the labelled parts.
    w = fg.row_weights([(None, np.array([1, 0])), (None, np.array([0.2, 0.9, 0.5]))], soft={1}, soft_weight=0.5)
    assert abs(w[:2].sum() - 1 / 1.5) < 1e-12 and abs(w[2:].sum() - 0.5 / 1.5) < 1e-12
    # The script reads a soft part's probabilities, and refuses one that is not a probability.
    def write(path, rows):
        with open(path, "w") as f:
            f.write("label\tcategory\tx0\tx1\tx2\n")
            for lab, zi in rows:
                f.write(f"{lab}\tneighbour\t" + "\t".join(repr(float(v)) for v in zi) + "\n")
    write(tmp_path / "soft.tsv", [(f"{pi:.6f}", zi) for pi, zi in zip(p[:1000], z[:1000])])
    write(tmp_path / "dev.tsv", [(int(hi), zi) for hi, zi in zip(hard[1000:], z[1000:])])
    write(tmp_path / "train.tsv", [(int(hi), zi) for hi, zi in zip(hard[:200], z[:200])])
    base = [sys.executable, SCRIPT, "--train", str(tmp_path / "train.tsv"), "--dev", str(tmp_path / "dev.tsv"),
            "--hidden", "0", "--l2", "0", "--out", str(tmp_path / "g.json"), "--report", str(tmp_path / "r.json")]
    subprocess.run(base + ["--soft", str(tmp_path / "soft.tsv"), "--soft-weight", "100"], check=True,
                   capture_output=True, text=True)
    g = json.loads((tmp_path / "g.json").read_text())
    # Mostly the teacher's rows: the fitted direction is the teacher's (features standardised by the script).
    direction = np.array(g["weights"]) / np.array(g["scale"])
    assert np.max(np.abs(direction - beta)) < 0.05
    assert json.loads((tmp_path / "r.json").read_text())["soft"] == [str(tmp_path / "soft.tsv")]
    write(tmp_path / "bad.tsv", [("1.5", z[0])])
    bad = subprocess.run(base + ["--soft", str(tmp_path / "bad.tsv")], capture_output=True, text=True)
    assert bad.returncode != 0 and "a soft label must be a probability" in bad.stderr
    write(tmp_path / "hard-soft.tsv", [("0.5", z[0])])
    bad = subprocess.run(base[:3] + [str(tmp_path / "hard-soft.tsv")] + base[4:], capture_output=True, text=True)
    assert bad.returncode != 0 and "label must be 0 or 1" in bad.stderr


def test_part_weights_scale_a_part_and_keep_its_classes_halved():
    parts = [(None, np.array([1, 1, 0, 0])), (None, np.array([1, 0]))]
    w = fg.row_weights(parts, part_weights=[3.0, 1.0])
    assert abs(w.sum() - 1) < 1e-12
    assert abs(w[:4].sum() - 0.75) < 1e-12 and abs(w[:2].sum() - 0.375) < 1e-12  # 3 : 1, each class half
    assert abs(w[4] - 0.125) < 1e-12


def test_skip_path_is_a_linear_term_of_the_named_features_only():
    # With the hidden layer's output weights pinned at 0 the network is logistic regression on the
    # skip features: its gradient there is the plain loop's, and an unnamed feature never moves.
    z, y, w = data(200, 3)
    p = fg.fit_mlp(z, y, w, 4, 0.0, steps=300, lr=0.05, seed=2, skip=[1.0, 0.0, 0.0])
    assert p["ws"][1] == 0.0 and p["ws"][2] == 0.0 and abs(p["ws"][0]) > 0.1
    logit, h = fg.mlp_logits(p, z)
    assert np.allclose(logit, h @ p["w2"] + p["b2"][0] + z[:, 0] * p["ws"][0])
    _, g = fg.mlp_loss_grad(p, z, y, w)
    d = w * (1 / (1 + np.exp(-logit)) - y)
    for k in range(3):  # the loss's slope in every skip weight; the fit moves only the named one
        assert abs(g["ws"][k] - sum(d[i] * z[i, k] for i in range(len(y)))) < 1e-12


def test_floor_chooses_a_setting_at_least_the_feature_on_every_dev_part(tmp_path):
    # Feature x0 alone ranks part b's dev pairs perfectly; part a's follow x1. The floor (x0) must
    # hold on b, so the chosen setting is the one whose report says it clears it.
    rng = np.random.default_rng(4)
    def part(n, signal):
        z = rng.normal(size=(n, 3))
        y = (z[:, signal] > 0).astype(float)
        return z, y
    za, ya = part(300, 1)
    zb, yb = part(300, 0)
    write_features(tmp_path / "a-train.tsv", za[:200], ya[:200])
    write_features(tmp_path / "b-train.tsv", zb[:200], yb[:200])
    write_features(tmp_path / "a-dev.tsv", za[200:], ya[200:])
    write_features(tmp_path / "b-dev.tsv", zb[200:], yb[200:])
    out = subprocess.run([sys.executable, SCRIPT, "--train", str(tmp_path / "a-train.tsv"), str(tmp_path / "b-train.tsv"),
                          "--dev", str(tmp_path / "a-dev.tsv"), str(tmp_path / "b-dev.tsv"), "--hidden", "4",
                          "--steps", "300", "--l2", "0,0.01", "--part-weight", "b=0,1", "--floor", "x0", "--skip", "x0",
                          "--min-choice-pairs", "10", "--out", str(tmp_path / "gate.json"),
                          "--report", str(tmp_path / "fit.json")], check=True, capture_output=True, text=True)
    report = json.loads((tmp_path / "fit.json").read_text())
    assert len(report["grid"]) == 4  # two L2 strengths x two weights of b
    assert abs(report["floor"]["auc"]["b-dev.tsv"] - 1.0) < 1e-12
    best = report["best"]
    eligible = [r for r in report["grid"] if r["floor_margin"] >= 0]
    if eligible:
        assert best["floor_margin"] >= 0 and best["mean_auc"] == max(r["mean_auc"] for r in eligible)
    else:
        assert best["floor_margin"] == max(r["floor_margin"] for r in report["grid"])
    # Weight 0 on b leaves b's signal unlearned: that setting is the one below the floor.
    assert min(r["floor_margin"] for r in report["grid"] if r["part_weights"]["b"] == 0) < \
        max(r["floor_margin"] for r in report["grid"] if r["part_weights"]["b"] == 1)
    gate = json.loads((tmp_path / "gate.json").read_text())
    assert len(gate["skip_weights"]) == 3 and gate["skip_weights"][1] == 0.0
    assert json.loads(out.stdout)["part_weights"] == best["part_weights"]


def test_veto_only_lowers_the_base_and_its_gradient_is_the_loss_slope():
    z, y, w = data(150, 3)
    skip = [1.0, 0.0, 0.0]
    p = fg.fit_mlp(z, y, w, 4, 0.0, steps=200, lr=0.05, seed=5, skip=skip, veto=True)
    logit, _ = fg.mlp_logits(p, z)
    base = z @ p["ws"] + p["c"][0]
    assert np.all(logit <= base + 1e-12)  # softplus >= 0: the network never raises the base
    assert p["ws"][1] == 0.0 and p["ws"][2] == 0.0
    # The analytic gradient against central differences of the loss, every parameter kind.
    _, g = fg.mlp_loss_grad(p, z, y, w)
    for k, idx in (("w1", (1, 2)), ("b1", (0,)), ("w2", (3,)), ("b2", (0,)), ("c", (0,)), ("ws", (0,))):
        eps = 1e-6
        q = {kk: np.array(vv, copy=True) for kk, vv in p.items()}
        q[k][idx] += eps
        up = fg.mlp_loss_grad(q, z, y, w)[0]
        q[k][idx] -= 2 * eps
        down = fg.mlp_loss_grad(q, z, y, w)[0]
        assert abs((up - down) / (2 * eps) - g[k][idx]) < 1e-6, k


def test_logistic_fit_stays_finite_on_separable_data_without_l2():
    # Issue 58: undamped Newton at L2 0 on separable data ran its weights to overflow (NaN). The
    # damped fit ends finite, without an overflow warning, and still separates the classes.
    import warnings
    rng = np.random.default_rng(0)
    for n, f in [(50, 3), (200, 5), (20, 8), (4, 1)]:
        z = rng.normal(size=(n, f))
        y = (z[:, 0] > 0).astype(float)
        w = np.full(n, 1.0 / n)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            beta, b = fg.fit_logistic(z, y, w, 0.0)
        assert np.all(np.isfinite(beta)) and np.isfinite(b)
        assert fg.auc(z @ beta + b, y) == 1.0
