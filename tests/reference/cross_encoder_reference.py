"""Reference scores of a cross-encoder folder from sentence-transformers' CrossEncoder (a test oracle).

Reads pairs (JSON lines: [first, second] per line) and writes, into OUT:
  logits.f32   CrossEncoder(model).predict(pairs, batch_size=32, activation_fct=Identity): the logits
  scores.f32   the model's default activation (Sigmoid for one label) applied to those logits, the
               very step predict() ends with: what predict(pairs) returns, at half the cost
  ids.jsonl    the pair's input ids as CrossEncoder tokenizes them (longest_first truncation)
  meta.json    versions and the max length the tokenizer applied
Run with build/oracle-venv/bin/python (tests/reference/install-python.sh).
"""
import argparse
import json
import os

import numpy as np
import torch
import sentence_transformers
import transformers
from sentence_transformers import CrossEncoder


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--pairs", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    torch.set_num_threads(2)
    with open(args.pairs, encoding="utf-8") as f:
        pairs = [json.loads(line) for line in f if line.strip()]
    os.makedirs(args.out, exist_ok=True)
    ce = CrossEncoder(args.model, device="cpu")
    z = ce.predict(pairs, batch_size=32, activation_fct=torch.nn.Identity(), convert_to_numpy=True,
                   show_progress_bar=False)
    z.astype(np.float32).tofile(os.path.join(args.out, "logits.f32"))
    with torch.no_grad():
        s = ce.default_activation_function(torch.from_numpy(z)).numpy()
    s.astype(np.float32).tofile(os.path.join(args.out, "scores.f32"))
    a = [p[0].strip() for p in pairs]
    b = [p[1].strip() for p in pairs]
    ids = ce.tokenizer(a, b, truncation="longest_first", max_length=ce.max_length)["input_ids"]
    with open(os.path.join(args.out, "ids.jsonl"), "w") as f:
        for row in ids:
            f.write(json.dumps(row) + "\n")
    meta = {"sentence_transformers": sentence_transformers.__version__, "transformers": transformers.__version__,
            "torch": torch.__version__, "max_length": ce.max_length,
            "tokenizer_model_max_length": ce.tokenizer.model_max_length, "num_labels": ce.config.num_labels,
            "activation": type(ce.default_activation_function).__name__}
    with open(os.path.join(args.out, "meta.json"), "w") as f:
        json.dump(meta, f, indent=2)


if __name__ == "__main__":
    main()
