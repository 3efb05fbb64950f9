"""An independent PyTorch F4 verifier, written from the paper's description, as an oracle for
`sieve train verifier --kind F4 --objective pairs` (issue 43).

F4 (paper-reference-code.md section 1.2): the token-token cosine map M of two texts' final-layer
token states (special tokens kept, L2-normalised, no pooling), channels [M, row max, column max]
zeroed at invalid pairs and padded to 128 x 128; Conv2d(3 -> D, kernel = stride = 8) into 256
patch tokens, a patch with no valid pair masked; a learnable [CLS] token and positional embedding
(N(0, 0.02^2)), LayerNorm, one pre-LN nn.TransformerEncoderLayer (GELU, 1 head, FFN 32); the head
Linear(D, D) -> GELU -> Linear(D, 1) -> tanh. Trained here on labelled pairs with sieve's pairs
objective: binary cross-entropy of score / tau, AdamW, linear warm-up (10%) and decay, gradient
norm clipped at 1.

The token states come from transformers (AutoModel's last_hidden_state in eval mode, each text
alone, cut at --max-length tokens): the same inputs sieve caches, within 1e-5 (RealMiniLM).

  f4_reference.py --model DIR --train TSV --out OUT [--steps N --batch-size B --lr LR ...]
Writes OUT/metrics.jsonl (step, loss, training accuracy of the step's batch) and OUT/report.json
(the training accuracy over every pair at the end, in eval mode). Run with
build/oracle-venv/bin/python.
"""
import argparse
import json
import math
import os
import random

import torch
from torch import nn
from transformers import AutoModel, AutoTokenizer


def read_pairs(path):
    rows = []
    with open(path, encoding="utf-8") as f:
        header = next(f).rstrip("\n").split("\t")
        a, b, y = header.index("sentence1"), header.index("sentence2"), header.index("label")
        for line in f:
            cols = line.rstrip("\n").split("\t")
            rows.append((cols[a], cols[b], float(cols[y])))
    return rows


@torch.no_grad()
def token_states(model_dir, texts, max_length):
    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModel.from_pretrained(model_dir).eval()
    out = {}
    for t in texts:
        enc = tok(t, truncation=True, max_length=max_length, return_tensors="pt")
        out[t] = model(**enc).last_hidden_state[0].clone()
    return out


def pair_maps(states, rows, size):
    """Every pair's phi image [N, 3, S, S] and pair mask [N, S, S], S = the longest side (a
    multiple of the patch, at most `size`), made once: a batch crops them to its own longest."""
    longest = max(min(states[t].shape[0], size) for a, b, _ in rows for t in (a, b))
    S = min(size, -(-longest // 8) * 8)
    img = torch.zeros(len(rows), 3, S, S)
    pair = torch.zeros(len(rows), S, S)
    for k, (a, b, _) in enumerate(rows):
        q = nn.functional.normalize(states[a][:size], dim=-1)
        c = nn.functional.normalize(states[b][:size], dim=-1)
        M = q @ c.T
        m, n = M.shape
        img[k, 0, :m, :n] = M
        img[k, 1, :m, :n] = M.max(1, keepdim=True).values.expand(m, n)
        img[k, 2, :m, :n] = M.max(0, keepdim=True).values.expand(m, n)
        pair[k, :m, :n] = 1
    lengths = torch.tensor([[min(states[a].shape[0], size), min(states[b].shape[0], size)] for a, b, _ in rows])
    return img * pair.unsqueeze(1), pair, lengths


def batch_of(img, pair, lengths, idx, patch=8):
    """The rows `idx`, cropped to the patches their longest sides fill (the rest would be masked)."""
    rows = int(-(-lengths[idx, 0].max() // patch)) * patch
    cols = int(-(-lengths[idx, 1].max() // patch)) * patch
    return img[idx, :, :rows, :cols], pair[idx, :rows, :cols]


class F4(nn.Module):
    def __init__(self, dim, size=128, patch=8, layers=1, heads=1, ff=32, dropout=0.0):
        super().__init__()
        self.patch = patch
        grid = size // patch
        self.grid = grid
        self.patch_embed = nn.Conv2d(3, dim, patch, stride=patch)
        self.cls_token = nn.Parameter(torch.randn(1, 1, dim) * 0.02)
        self.pos_embed = nn.Parameter(torch.randn(1, grid * grid + 1, dim) * 0.02)
        self.norm = nn.LayerNorm(dim)
        self.drop = nn.Dropout(dropout)
        layer = nn.TransformerEncoderLayer(dim, heads, ff, dropout, activation="gelu", batch_first=True,
                                           norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Sequential(nn.Linear(dim, dim), nn.GELU(), nn.Dropout(dropout), nn.Linear(dim, 1))

    def forward(self, img, pair):
        """img [B, 3, R, C] with R, C multiples of the patch (a crop of the 128 x 128 image from
        its top left): the patches take their positions in the full 16 x 16 grid."""
        B = img.shape[0]
        x = self.patch_embed(img)  # [B, D, R / P, C / P]
        rows, cols = x.shape[2], x.shape[3]
        x = x.flatten(2).transpose(1, 2)
        empty = nn.functional.max_pool2d(pair.unsqueeze(1), self.patch).flatten(1) == 0
        pad = torch.cat([torch.zeros(B, 1, dtype=torch.bool), empty], 1)
        grid = self.grid
        idx = torch.cat([torch.zeros(1, dtype=torch.long),
                         (torch.arange(rows).unsqueeze(1) * grid + torch.arange(cols).unsqueeze(0) + 1).flatten()])
        x = torch.cat([self.cls_token.expand(B, -1, -1), x], 1) + self.pos_embed[:, idx]
        x = self.drop(self.norm(x))
        x = self.encoder(x, src_key_padding_mask=pad)
        return torch.tanh(self.head(x[:, 0])).squeeze(1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--train", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--lr", type=float, default=1e-4)
    ap.add_argument("--weight-decay", type=float, default=0.0)
    ap.add_argument("--tau", type=float, default=0.1)
    ap.add_argument("--max-length", type=int, default=128)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--log-every", type=int, default=50)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    rows = read_pairs(args.train)
    states = token_states(args.model, sorted({t for a, b, _ in rows for t in (a, b)}), args.max_length)
    dim = next(iter(states.values())).shape[1]
    size = 128
    all_img, all_pair, lengths = pair_maps(states, rows, size)
    labels = torch.tensor([r[2] for r in rows])
    f4 = F4(dim, size)
    print(f"F4: {sum(p.numel() for p in f4.parameters())} parameters, {len(rows)} pairs", flush=True)
    opt = torch.optim.AdamW(f4.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    warm = math.ceil(0.1 * args.steps)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: s / max(1, warm) if s < warm else max(0.0, (args.steps - s) / max(1, args.steps - warm)))
    os.makedirs(args.out, exist_ok=True)
    rng = random.Random(args.seed)
    order, at = [], 0
    log = open(os.path.join(args.out, "metrics.jsonl"), "w")
    loss_sum = acc_sum = 0.0
    n = 0
    f4.train()
    for step in range(1, args.steps + 1):
        batch = []
        while len(batch) < args.batch_size:
            if at == len(order):
                order = list(range(len(rows)))
                rng.shuffle(order)
                at = 0
            batch.append(order[at])
            at += 1
        idx = torch.tensor(batch)
        img, pair = batch_of(all_img, all_pair, lengths, idx)
        y = labels[idx]
        s = f4(img, pair)
        loss = nn.functional.binary_cross_entropy_with_logits(s / args.tau, y)
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(f4.parameters(), 1.0)
        opt.step()
        sched.step()
        loss_sum += loss.item()
        acc_sum += ((s > 0).float() == y).float().mean().item()
        n += 1
        if step % args.log_every == 0 or step == args.steps:
            line = {"step": step, "loss": loss_sum / n, "accuracy": acc_sum / n}
            log.write(json.dumps(line) + "\n")
            log.flush()
            print(line, flush=True)
            loss_sum = acc_sum = 0.0
            n = 0
    f4.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, len(rows), 64):
            idx = torch.arange(i, min(i + 64, len(rows)))
            img, pair = batch_of(all_img, all_pair, lengths, idx)
            s = f4(img, pair)
            correct += int(((s > 0).float() == labels[idx]).sum())
    report = {"pairs": len(rows), "train_accuracy": correct / len(rows), "steps": args.steps, "lr": args.lr}
    with open(os.path.join(args.out, "report.json"), "w") as f:
        json.dump(report, f, indent=2)
    print(report, flush=True)


if __name__ == "__main__":
    main()
