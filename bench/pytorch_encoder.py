#!/usr/bin/python3
"""PyTorch eager baseline for bench/bench_encoder.cpp.

The same BERT shape as the C++ benchmark (MiniLM-L6: 6 layers, hidden 384, 12 heads, FFN 1536,
vocab 30522), written with plain torch.nn modules the way Hugging Face's BertModel computes it
(separate Q/K/V projections, additive mask, post-LN, erf GELU), run under torch.inference_mode().
Lengths: "fixed" gives every text `tokens` tokens; "varied" spreads them evenly over
[tokens/2, tokens] and pads the batch to the longest, as Hugging Face's tokenizer(padding=True)
does. Needs Debian's python3-torch (`scripts/setup.sh --bench`). Prints one JSON object per line:
  {"batch": B, "tokens": T, "threads": N, "sentences_per_s": X, "ms_per_batch": Y}

Usage: /usr/bin/python3 bench/pytorch_encoder.py [--threads 1 2] [--min-time 1.0]
"""
import argparse
import json
import math
import time

import torch
from torch import nn


class Layer(nn.Module):
    def __init__(self, h, heads, ffn):
        super().__init__()
        self.h, self.heads = h, heads
        self.query, self.key, self.value = nn.Linear(h, h), nn.Linear(h, h), nn.Linear(h, h)
        self.attn_out, self.ln1 = nn.Linear(h, h), nn.LayerNorm(h, eps=1e-12)
        self.inter, self.out, self.ln2 = nn.Linear(h, ffn), nn.Linear(ffn, h), nn.LayerNorm(h, eps=1e-12)

    def split(self, x):
        b, l, _ = x.shape
        return x.view(b, l, self.heads, self.h // self.heads).permute(0, 2, 1, 3)

    def forward(self, x, bias):
        b, l, _ = x.shape
        q, k, v = self.split(self.query(x)), self.split(self.key(x)), self.split(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.h // self.heads) + bias
        ctx = torch.matmul(scores.softmax(-1), v).permute(0, 2, 1, 3).reshape(b, l, self.h)
        x = self.ln1(self.attn_out(ctx) + x)
        return self.ln2(self.out(nn.functional.gelu(self.inter(x))) + x)


class Bert(nn.Module):
    def __init__(self, vocab=30522, h=384, layers=6, heads=12, ffn=1536, positions=512):
        super().__init__()
        self.word, self.pos, self.tok_type = nn.Embedding(vocab, h), nn.Embedding(positions, h), nn.Embedding(2, h)
        self.ln = nn.LayerNorm(h, eps=1e-12)
        self.layers = nn.ModuleList(Layer(h, heads, ffn) for _ in range(layers))

    def forward(self, ids, mask):
        l = ids.shape[1]
        x = self.ln(self.word(ids) + self.pos.weight[:l] + self.tok_type.weight[0])
        bias = (1.0 - mask[:, None, None, :].float()) * torch.finfo(torch.float32).min
        for layer in self.layers:
            x = layer(x, bias)
        pooled = (x * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)
        return nn.functional.normalize(pooled, dim=-1)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--batches", type=int, nargs="+", default=[1, 32, 128])
    ap.add_argument("--tokens", type=int, nargs="+", default=[16, 128])
    ap.add_argument("--lengths", nargs="+", default=["fixed", "varied"], choices=["fixed", "varied"])
    ap.add_argument("--min-time", type=float, default=1.0, help="seconds per configuration")
    args = ap.parse_args()
    torch.manual_seed(0)
    model = Bert().eval()
    for threads in args.threads:
        torch.set_num_threads(threads)
        for tokens in args.tokens:
            for batch in args.batches:
                for lengths in args.lengths:
                    if lengths == "varied" and batch == 1:
                        continue
                    ids = torch.randint(1000, 30000, (batch, tokens))
                    mask = torch.ones(batch, tokens, dtype=torch.long)
                    if lengths == "varied":
                        for i in range(batch):
                            n = tokens // 2 + (tokens // 2) * i // (batch - 1)
                            mask[i, n:] = 0
                            ids[i, n:] = 0
                    with torch.inference_mode():
                        model(ids, mask)  # warm-up
                        n, start = 0, time.perf_counter()
                        while True:
                            model(ids, mask)
                            n += 1
                            elapsed = time.perf_counter() - start
                            if elapsed >= args.min_time:
                                break
                    print(json.dumps({"impl": "pytorch-eager", "torch": torch.__version__, "batch": batch,
                                      "tokens": tokens, "lengths": lengths, "threads": threads,
                                      "sentences_per_s": round(batch * n / elapsed, 2),
                                      "ms_per_batch": round(1000 * elapsed / n, 3)}), flush=True)


if __name__ == "__main__":
    main()
