#!/usr/bin/python3
"""PyTorch eager baseline for bench/bench_modernbert.cpp.

The gte-modernbert-base shape (22 layers, hidden 768, 12 heads, intermediate 1152, vocab 50368,
sliding window 128, every third layer global, no biases), written with plain torch modules the
way Hugging Face's ModernBertModel computes it with attn_implementation="eager": a padded batch,
a fused Wqkv, rotary embeddings (rotate-half), an additive padding mask for the global layers and
a [B, 1, L, L] sliding-window mask for the local ones, GeGLU. Random weights and ids; run under
torch.inference_mode(). One case per process (peak memory is the process's ru_maxrss). Needs
Debian's python3-torch (`scripts/setup.sh --bench`). Prints one JSON line:
  {"impl": "pytorch", "case", "batch", "tokens", "threads", "sentences_per_s", "ms_per_batch", "peak_rss_mb"}

Usage: /usr/bin/python3 bench/pytorch_modernbert.py --case 32x128 [--threads N] [--iters K]
"""
import argparse
import json
import math
import resource
import time

import torch
from torch import nn

H, LAYERS, HEADS, INTER, VOCAB, WINDOW, EVERY = 768, 22, 12, 1152, 50368, 128, 3


def rotary(length, dim, theta):
    inv = 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim))
    ang = torch.outer(torch.arange(length, dtype=torch.float64), inv)
    ang = torch.cat([ang, ang], -1)
    return ang.cos().float(), ang.sin().float()


def rotate(x, cos, sin):
    half = x.shape[-1] // 2
    return x * cos + torch.cat([-x[..., half:], x[..., :half]], -1) * sin


class Norm(nn.Module):
    """LayerNorm without a bias (ModernBERT's norm_bias=False; torch 1.13 has no bias=False)."""

    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(H))

    def forward(self, x):
        return nn.functional.layer_norm(x, (H,), self.weight, None, 1e-5)


class Layer(nn.Module):
    def __init__(self, index):
        super().__init__()
        self.is_global = index % EVERY == 0
        self.attn_norm = Norm() if index else nn.Identity()
        self.Wqkv, self.Wo = nn.Linear(H, 3 * H, bias=False), nn.Linear(H, H, bias=False)
        self.mlp_norm = Norm()
        self.Wi, self.Wo_mlp = nn.Linear(H, 2 * INTER, bias=False), nn.Linear(INTER, H, bias=False)

    def forward(self, x, cos, sin, mask):
        b, n, _ = x.shape
        dh = H // HEADS
        qkv = self.Wqkv(self.attn_norm(x)).view(b, n, 3, HEADS, dh).permute(2, 0, 3, 1, 4)
        q, k, v = rotate(qkv[0], cos, sin), rotate(qkv[1], cos, sin), qkv[2]
        scores = q @ k.transpose(-1, -2) / math.sqrt(dh) + mask
        ctx = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, n, H)
        x = x + self.Wo(ctx)
        a, g = self.Wi(self.mlp_norm(x)).chunk(2, -1)
        return x + self.Wo_mlp(nn.functional.gelu(a) * g)


class ModernBert(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, H)
        self.norm = Norm()
        self.layers = nn.ModuleList(Layer(i) for i in range(LAYERS))
        self.final_norm = Norm()

    def forward(self, ids, attention_mask):
        b, n = ids.shape
        x = self.norm(self.tok(ids))
        lowest = torch.finfo(torch.float32).min
        pad = (1.0 - attention_mask[:, None, None, :].float()) * lowest
        pos = torch.arange(n)
        near = (pos[:, None] - pos[None, :]).abs() <= WINDOW // 2
        local = pad.masked_fill(~near[None, None], lowest)  # [B, 1, L, L], as HF's eager path
        g_cos, g_sin = rotary(n, H // HEADS, 160000.0)
        l_cos, l_sin = rotary(n, H // HEADS, 10000.0)
        for layer in self.layers:
            if layer.is_global:
                x = layer(x, g_cos, g_sin, pad)
            else:
                x = layer(x, l_cos, l_sin, local)
        return self.final_norm(x)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--case", default="32x128")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--iters", type=int, default=1)
    a = ap.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    batch, tokens = (int(v) for v in a.case.split("x"))
    torch.manual_seed(7)
    model = ModernBert().eval()
    for p in model.parameters():
        nn.init.normal_(p, std=0.02)
    ids = torch.randint(5, 50000, (batch, tokens))
    mask = torch.ones(batch, tokens, dtype=torch.long)
    with torch.inference_mode():
        model(ids[:1], mask[:1])  # warm-up
        t0 = time.perf_counter()
        for _ in range(a.iters):
            model(ids, mask)
        s = time.perf_counter() - t0
    print(json.dumps({"impl": "pytorch", "case": a.case, "batch": batch, "tokens": tokens,
                      "threads": torch.get_num_threads(), "sentences_per_s": round(batch * a.iters / s, 4),
                      "ms_per_batch": round(1000 * s / a.iters, 1),
                      "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}))


if __name__ == "__main__":
    main()
