#!/usr/bin/python3
"""The Python binding's overhead and the Python anchors, one JSON line per case (benchmark, not a test).

1. encode: `enc.encode` sentences/s against `sieve embed` on the same 3,000 sentences (SciFact
   queries ten times over; the CLI's model load, timed on one sentence, subtracted). Goal: within 3%.
2. search: per-query latency of `index.search(q)` from Python against the same Index::search calls
   timed inside C++ (`_time_search`), bm25 and dense. Goal: within 50 µs.
3. anchors: PyTorch eager (bench/pytorch_encoder.py, MiniLM shape, batch 32, 16 tokens) against
   `enc.encode` on a MiniLM-shaped fixture with 16-token texts; NumPy brute force (the query's key
   from `enc.encode`, then keys @ q and a top-10) against `index.search(q, mode="dense")`.

    PYTHONPATH=build/python /usr/bin/python3 bench/bench_python.py [--work /tmp/sieve_bench_python]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

import sieve

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def emit(**kv):
    print(json.dumps(kv), flush=True)


def best_of(n, fn):
    """The fastest of n timed runs of fn() (seconds)."""
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return min(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", default="/tmp/sieve_bench_python")
    ap.add_argument("--data", default=os.environ.get("SIEVE_SHARED_DATA", os.path.join(REPO, "..", "shared", "data")))
    ap.add_argument("--cli", default=os.environ.get("SIEVE_CLI", os.path.join(REPO, "build", "sieve")))
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    scifact = os.path.join(args.data, "retrieval", "scifact")
    queries = [json.loads(l)["text"] for l in open(os.path.join(scifact, "queries.jsonl"))][:300]

    # 1. encode against `sieve embed` (sieve-mini).
    texts = queries * 10
    path = os.path.join(args.work, "texts.txt")
    with open(path, "w") as f:
        f.write("\n".join(texts) + "\n")
    enc = sieve.Encoder.load()
    enc.encode(texts[:64])
    py_s = best_of(3, lambda: enc.encode(texts, batch_size=32))
    load_s = best_of(3, lambda: subprocess.run([args.cli, "embed", "x"], check=True, capture_output=True))
    cli_s = best_of(3, lambda: subprocess.run([args.cli, "embed", "--input", path], check=True,
                                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)) - load_s
    emit(case="encode sieve-mini", sentences=len(texts), python_per_s=round(len(texts) / py_s, 1),
         cli_per_s=round(len(texts) / cli_s, 1), python_vs_cli=round(cli_s / py_s, 4), cli_load_s=round(load_s, 3))

    # 2. search latency: Python call against the C++ call, on SciFact's index with sieve-mini.
    ixdir = os.path.join(args.work, "scifact-index")
    if not os.path.exists(os.path.join(ixdir, "manifest.json")):
        sieve.Index.build(os.path.join(scifact, "corpus.jsonl"), ixdir, force=True, open=False)
    ix = sieve.Index.open(ixdir)
    for mode in ("bm25", "dense"):
        ix.search(queries[:20], k=10, mode=mode)
        rounds_py, rounds_cpp = [], []
        for _ in range(5):  # interleaved, so that both see the same machine state
            t0 = time.perf_counter()
            for q in queries:
                ix.search(q, k=10, mode=mode)
            rounds_py.append((time.perf_counter() - t0) / len(queries))
            rounds_cpp.append(ix._impl._time_search(queries, 10, mode))
        py, cpp = statistics.median(rounds_py), statistics.median(rounds_cpp)
        emit(case=f"search {mode}", queries=len(queries), python_us=round(py * 1e6, 1), cpp_us=round(cpp * 1e6, 1),
             overhead_us=round((py - cpp) * 1e6, 1))

    # 3a. NumPy brute force over the same keys (exact search, what one would write by hand).
    keys = ix.keys()

    def numpy_search(q):
        s = keys @ enc.encode(q)
        top = np.argpartition(-s, 10)[:10]
        return top[np.argsort(-s[top])]

    for q in queries[:20]:
        numpy_search(q)
    t_np = best_of(3, lambda: [numpy_search(q) for q in queries]) / len(queries)
    t_ix = best_of(3, lambda: [ix.search(q, k=10, mode="dense") for q in queries]) / len(queries)
    emit(case="dense search per query vs NumPy brute force", documents=len(ix), sieve_ms=round(t_ix * 1e3, 3),
         numpy_ms=round(t_np * 1e3, 3))
    t_np_b = best_of(3, lambda: np.argsort(-(enc.encode(queries) @ keys.T), axis=1)[:, :10])
    t_ix_b = best_of(3, lambda: ix.search_arrays(queries, k=10, mode="dense"))
    emit(case="dense search 300 queries at once vs NumPy brute force", sieve_ms=round(t_ix_b * 1e3, 1),
         numpy_ms=round(t_np_b * 1e3, 1))

    # 3b. PyTorch eager on the MiniLM shape against enc.encode on a MiniLM-shaped fixture.
    minilm = os.path.join(args.work, "minilm")
    if not os.path.exists(os.path.join(minilm, "config.json")):
        subprocess.run([args.cli, "make-fixture", "--out", minilm, "--hidden", "384", "--layers", "6", "--heads", "12",
                        "--ffn", "1536", "--max-positions", "512", "--max-seq-length", "256", "--vocab",
                        os.path.join(args.data, "vocab", "bert-base-uncased-vocab.txt")], check=True,
                       capture_output=True)
    fixture = sieve.Encoder.load(minilm)
    sixteen = ["the"] * 14
    batch = [" ".join(sixteen)] * 1024
    assert len(fixture.tokenize(batch[0])[0]["ids"]) == 16
    fixture.encode(batch[:64])
    t = best_of(3, lambda: fixture.encode(batch, batch_size=32))
    emit(case="MiniLM shape, batch 32, 16 tokens: sieve Python", sentences_per_s=round(len(batch) / t, 1),
         threads=sieve._sieve.threads())
    torch_script = os.path.join(REPO, "bench", "pytorch_encoder.py")
    r = subprocess.run([sys.executable, torch_script, "--threads", str(sieve._sieve.threads()), "--batches", "32",
                        "--tokens", "16", "--lengths", "fixed", "--min-time", "2"], capture_output=True, text=True)
    if r.returncode == 0:
        for line in r.stdout.splitlines():
            emit(case="MiniLM shape, batch 32, 16 tokens: PyTorch eager", **json.loads(line))
    else:
        emit(case="PyTorch eager", skipped=r.stderr.strip().splitlines()[-1:] or "failed")


if __name__ == "__main__":
    main()
