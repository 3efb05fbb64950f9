"""scripts/distill-pool.py's neighbour search against a plain double loop: each query's nearest other
rows within the cosine window, nearest first, never itself, the blocks joined without a seam."""
import importlib.util
import os

import numpy as np

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "distill-pool.py")
spec = importlib.util.spec_from_file_location("distill_pool", SCRIPT)
dp = importlib.util.module_from_spec(spec)
spec.loader.exec_module(dp)


def naive(keys, queries, per, lo, hi):
    out = []
    for q in queries:
        cands = [(float(keys[q] @ keys[j]), j) for j in range(len(keys)) if j != q]
        cands = [(c, j) for c, j in cands if lo <= c <= hi]
        cands.sort(key=lambda t: (-t[0], t[1]))
        out += [(int(q), j, c) for c, j in cands[:per]]
    return out


def test_neighbours_equal_a_plain_search():
    rng = np.random.default_rng(2)
    keys = rng.normal(size=(60, 8)).astype(np.float32)
    keys[5] = keys[4] + 0.01  # a near-duplicate pair, above the window's top
    keys /= np.linalg.norm(keys, axis=1, keepdims=True)
    queries = rng.choice(60, size=25, replace=False)
    for per, lo, hi in ((1, -1.0, 1.0), (3, 0.0, 0.95), (2, 0.3, 0.9)):
        got = dp.neighbour_pairs(keys, queries, per, lo, hi, block=7)  # several blocks
        want = naive(keys, queries, per, lo, hi)
        assert [(q, j) for q, j, _ in got] == [(q, j) for q, j, _ in want], (per, lo, hi)
        assert np.allclose([c for *_, c in got], [c for *_, c in want], atol=1e-6)
        assert all(q != j for q, j, _ in got)
    # The near-duplicate is left out above max_cos and found below it.
    got = dp.neighbour_pairs(keys, np.array([4]), 1, -1.0, 0.95)
    assert got and got[0][1] != 5
    assert dp.neighbour_pairs(keys, np.array([4]), 1, -1.0, 1.0)[0][1] == 5
