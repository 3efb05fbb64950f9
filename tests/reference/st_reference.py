"""Reference outputs of a real checkpoint from Hugging Face's own libraries (a test oracle).

Reads texts (JSON lines: one JSON string per line) and writes, into OUT:
  ids.jsonl        the model's own tokenizer (AutoTokenizer, fast) with sentence-transformers'
                   truncation (max_seq_length from sentence_bert_config.json): one id list per text
  pooled.f32       SentenceTransformer.encode(texts, batch_size=32, normalize_embeddings=True):
                   n x dim float32, row-major
  pooled_b1.f32    the same with batch_size=1 (each text alone, no padding)
  hidden.f32       transformers' AutoModel last_hidden_state of the first --hidden texts, each alone
                   (no padding), rows concatenated; hidden.json gives each text's row count
  meta.json        versions, dim, max_seq_length
Run with build/oracle-venv/bin/python (tests/reference/install-python.sh).
"""
import argparse
import json
import os

import numpy as np
import torch
import sentence_transformers
import transformers
from sentence_transformers import SentenceTransformer
from transformers import AutoModel, AutoTokenizer


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--texts", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--pooled", type=int, default=-1, help="encode the first N texts (-1: all)")
    ap.add_argument("--hidden", type=int, default=200, help="last_hidden_state of the first N texts")
    ap.add_argument("--threads", type=int, default=0)
    args = ap.parse_args()
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    with open(args.texts, encoding="utf-8") as f:
        texts = [json.loads(line) for line in f if line.strip()]
    os.makedirs(args.out, exist_ok=True)

    st = SentenceTransformer(args.model, device="cpu")
    tok = st.tokenizer
    ids = tok(texts, truncation="longest_first", max_length=st.max_seq_length)["input_ids"]
    with open(os.path.join(args.out, "ids.jsonl"), "w") as f:
        for row in ids:
            f.write(json.dumps(row) + "\n")

    pooled_texts = texts if args.pooled < 0 else texts[: args.pooled]
    with torch.inference_mode():
        e = st.encode(pooled_texts, batch_size=32, normalize_embeddings=True, convert_to_numpy=True)
        e.astype(np.float32).tofile(os.path.join(args.out, "pooled.f32"))
        e1 = st.encode(pooled_texts, batch_size=1, normalize_embeddings=True, convert_to_numpy=True)
        e1.astype(np.float32).tofile(os.path.join(args.out, "pooled_b1.f32"))

        model = AutoModel.from_pretrained(args.model).eval()
        hf_tok = AutoTokenizer.from_pretrained(args.model)
        rows, lengths = [], []
        for t in texts[: args.hidden]:
            enc = hf_tok(t, truncation=True, max_length=st.max_seq_length, return_tensors="pt")
            h = model(**enc).last_hidden_state[0].numpy().astype(np.float32)
            rows.append(h)
            lengths.append(int(h.shape[0]))
        np.concatenate(rows, axis=0).tofile(os.path.join(args.out, "hidden.f32"))
    with open(os.path.join(args.out, "hidden.json"), "w") as f:
        json.dump(lengths, f)
    meta = {"dim": int(e.shape[1]), "pooled": len(pooled_texts), "max_seq_length": st.max_seq_length,
            "torch": torch.__version__, "transformers": transformers.__version__,
            "sentence_transformers": sentence_transformers.__version__}
    with open(os.path.join(args.out, "meta.json"), "w") as f:
        json.dump(meta, f)


if __name__ == "__main__":
    main()
