#!/usr/bin/env python3
"""The README demo (scripts/demo.sh) in Python, step by step, as one would run it in a notebook.

Indexes the first 5,000 of WordNet's example sentences with sieve-mini (named: its calibrated F4 gate
is the one that ships today; the default model all-MiniLM-L6-v2 gets its verifier next), then runs the
demo's queries through stage 1 and sieve-mini's F4 gate, and shows why the pooled cosine cannot
tell "the dog bit the man" from "the man bit the dog" while the verifier's token map can.

    PYTHONPATH=build/python python3 examples/quickstart.py [WORK_DIR=build/demo-py]

(or `scripts/install-python.sh` first, then plain `python3 examples/quickstart.py`).
"""
import os
import subprocess
import sys

import numpy as np

import sieve

work = sys.argv[1] if len(sys.argv) > 1 else os.path.join("build", "demo-py")
os.makedirs(work, exist_ok=True)

# %% 1. The corpus: WordNet's example sentences (wordnet-base), one document per line.
examples = os.path.join(work, "examples.txt")
if not os.path.exists(examples):
    subprocess.run([sieve.train.cli_path(), "corpus", "build", "--sources", "wordnet", "--out",
                    os.path.join(work, "wordnet")], check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(work, "wordnet", "examples.txt")) as f, open(examples, "w") as out:
        for i, line in zip(range(5000), f):
            out.write(line)

MODEL = "sieve-mini"   # a name from sieve.models(), or a model folder

# %% 2. The index, built with sieve-mini (Ctrl-C stops it; running again resumes).
path = os.path.join(work, "index")
index = sieve.Index.open(path) if os.path.exists(os.path.join(path, "manifest.json")) else \
    sieve.Index.build(examples, path, model=MODEL, force=True)
print(f"{len(index)} documents; stage 1 as the model recommends")

# %% 3. Stage 1, then sieve-mini's calibrated F4 gate over the top 20 candidates.
verifier = sieve.Verifier.load(model=MODEL)   # models/sieve-mini/verifier.safetensors
print(f"verifier {verifier.kind}, threshold {verifier.threshold:.3f}")
queries = [
    "the quarterback fumbled the snap",
    "the snap was fumbled by the quarterback",
    "the snap fumbled the quarterback",
    "the quarterback was fumbled by the snap",
    "the physician made his rounds",
    "the doctor did not make his rounds",
    "the outcome justified the search",
    "the search justified the outcome",
]
for q in queries:
    print(f'\n== "{q}": top 3 of stage 1 with the gate\'s decision')
    for h in sieve.search_verified(index, verifier, q, k=3, candidates=20, rerank=False):
        mark = "accept" if h["accepted"] else "reject"
        print(f'  {h["stage1_rank"]:>2}  {h["verifier_score"]:+.3f}  {mark}  {index.document(h["id"])["text"]}')

# %% 4. The pooled cosine cannot tell them apart; the verifier's map can.
encoder = sieve.Encoder.load(MODEL)
texts = ["the dog bit the man", "the man bit the dog", "a dog bit a man"]
keys = encoder.encode(texts)
print("\npooled cosine:")
for i in range(len(texts)):
    for j in range(i + 1, len(texts)):
        print(f"  {keys[i] @ keys[j]:.3f}  {texts[i]!r} vs {texts[j]!r}")
e = sieve.explain(texts[0], texts[1], verifier=verifier)
svg = os.path.join(work, "explain.svg")
with open(svg, "w") as f:
    f.write(e["svg"])
print(f'\nexplain: {e["verifier"]} score {e["score"]:+.3f} -> {e["decision"]} '
      f'(map {e["map"].shape[0]}x{e["map"].shape[1]}, diagonal mean {np.diag(e["map"]).mean():.3f}); heatmap in {svg}')
