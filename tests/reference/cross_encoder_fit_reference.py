"""sentence-transformers' CrossEncoder.fit as a step-for-step oracle for `sieve train cross-encoder`.

Two commands:
  init  --base ENCODER --out DIR --seed S
        A one-label cross-encoder made from ENCODER as CrossEncoder(ENCODER, num_labels=1) makes it
        (the pooler and classifier Hugging Face initialises, from torch.manual_seed(S)), with every
        dropout probability set to 0 in its config.json, saved with CrossEncoder.save: the shared
        starting point, written here and read by sieve.
  fit   --model DIR --train TSV --out OUT --batch-size B --steps N --warmup W --lr LR
        CrossEncoder(DIR).fit on the TSV's pairs (sentence1, sentence2, label; header line) in file
        order (a DataLoader without shuffling), epochs = N * B / rows, the WarmupLinear schedule with
        W warm-up steps, AdamW (weight decay 0.01 off biases and LayerNorms), gradient norm clipped
        at 1: fit's defaults. Writes OUT/losses.json (the loss of every step, as fit computed it),
        OUT/final (CrossEncoder.save after the last step) and OUT/meta.json (versions).
Run with build/oracle-venv/bin/python (tests/reference/install-python.sh).
"""
import argparse
import json
import os

import torch
import sentence_transformers
import transformers
from sentence_transformers import CrossEncoder, InputExample
from torch.utils.data import DataLoader


def init(args):
    torch.manual_seed(args.seed)
    ce = CrossEncoder(args.base, num_labels=1, device="cpu")
    for key in ("hidden_dropout_prob", "attention_probs_dropout_prob"):
        setattr(ce.model.config, key, 0.0)
    ce.model.config.classifier_dropout = 0.0
    ce.save(args.out)


class RecordedLoss(torch.nn.Module):
    """fit's own loss for one label (BCEWithLogitsLoss, mean), keeping each step's value."""

    def __init__(self):
        super().__init__()
        self.inner = torch.nn.BCEWithLogitsLoss()
        self.values = []

    def forward(self, logits, labels):
        loss = self.inner(logits, labels)
        self.values.append(float(loss.detach()))
        return loss


def fit(args):
    torch.set_num_threads(2)
    torch.manual_seed(0)  # nothing random should remain; fixed anyway
    examples = []
    with open(args.train, encoding="utf-8") as f:
        next(f)  # header
        for line in f:
            a, b, label = line.rstrip("\n").split("\t")
            examples.append(InputExample(texts=[a, b], label=float(label)))
    if (args.steps * args.batch_size) % len(examples) != 0 or len(examples) % args.batch_size != 0:
        raise SystemExit("steps * batch size must be whole epochs of whole batches")
    epochs = args.steps * args.batch_size // len(examples)
    ce = CrossEncoder(args.model, device="cpu")
    assert ce.config.num_labels == 1
    loader = DataLoader(examples, batch_size=args.batch_size, shuffle=False)
    loss = RecordedLoss()
    ce.fit(train_dataloader=loader, epochs=epochs, loss_fct=loss, warmup_steps=args.warmup,
           optimizer_params={"lr": args.lr}, weight_decay=0.01, max_grad_norm=1.0, show_progress_bar=False)
    os.makedirs(args.out, exist_ok=True)
    ce.save(os.path.join(args.out, "final"))
    with open(os.path.join(args.out, "losses.json"), "w") as f:
        json.dump(loss.values, f)
    meta = {"sentence_transformers": sentence_transformers.__version__, "transformers": transformers.__version__,
            "torch": torch.__version__, "epochs": epochs, "steps": len(loss.values)}
    with open(os.path.join(args.out, "meta.json"), "w") as f:
        json.dump(meta, f, indent=2)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    a = sub.add_parser("init")
    a.add_argument("--base", required=True)
    a.add_argument("--out", required=True)
    a.add_argument("--seed", type=int, default=42)
    b = sub.add_parser("fit")
    b.add_argument("--model", required=True)
    b.add_argument("--train", required=True)
    b.add_argument("--out", required=True)
    b.add_argument("--batch-size", type=int, required=True)
    b.add_argument("--steps", type=int, required=True)
    b.add_argument("--warmup", type=int, required=True)
    b.add_argument("--lr", type=float, required=True)
    args = ap.parse_args()
    (init if args.command == "init" else fit)(args)


if __name__ == "__main__":
    main()
