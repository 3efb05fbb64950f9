#!/usr/bin/env python3
"""The anchor of issue 43: sentence-transformers' own CrossEncoder trained on the gate's train parts.

Trains CrossEncoder(MODEL, num_labels=1).fit on labelled pair files (sentence1, sentence2[,
category], label; header line), each epoch shuffled from --seed, with fit's defaults (AdamW lr
2e-5, weight decay 0.01, WarmupLinear with 10% warm-up, gradient norm 1), scores the dev file
after every epoch and keeps the epoch of the best dev ROC-AUC (model selection on dev only), then
scores every eval file with it. Writes OUT/report.json:
  {"dev": [{"epoch", "auc"}...], "best_epoch", "eval": {name: {"auc", "pairs"}}, "settings"}
and the chosen model in OUT/best (a cross-encoder folder sieve reads as cross:OUT/best). A run
whose report names its best epoch is not trained again (the eval files are scored again).
`sieve train cross-encoder` gives the same steps (tests/unit/model/test_cross_encoder_fit.cpp), so
this is also what sieve's trainer reaches on the same data.

Run in the oracle venv (scripts/setup.sh --oracles):
  build/oracle-venv/bin/python scripts/reference-cross-encoder.py --model models/all-MiniLM-L6-v2 \\
      --train work/gate/sets/paws-train.tsv work/gate/sets/mrpc-train.tsv --dev work/gate/dev.tsv \\
      --eval work/gate/sets/{paws,mrpc,condaqa,mixed}-eval.tsv --epochs 3 --out work/ce-anchor
"""
import argparse
import json
import math
import os
import random
import sys
import time


def read_pairs(path, limit=0):
    rows = []
    with open(path, encoding="utf-8") as f:
        header = next(f).rstrip("\n").split("\t")
        a, b, y = header.index("sentence1"), header.index("sentence2"), header.index("label")
        for line in f:
            c = line.rstrip("\n").split("\t")
            if len(c) <= max(a, b, y):
                continue
            rows.append((c[a], c[b], float(c[y])))
    if limit and len(rows) > limit:
        rows = random.Random(0).sample(rows, limit)
    return rows


def auc_of(ce, rows, batch_size):
    from sklearn.metrics import roc_auc_score
    import torch
    scores = ce.predict([(a, b) for a, b, _ in rows], batch_size=batch_size, show_progress_bar=False,
                        activation_fct=torch.nn.Identity())
    labels = [y for _, _, y in rows]
    if len(set(labels)) < 2:
        return float("nan")
    return float(roc_auc_score(labels, scores))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True, help="encoder folder to start from (BERT family)")
    ap.add_argument("--train", nargs="+", required=True, help="labelled pair files")
    ap.add_argument("--dev", required=True, help="labelled pairs for model selection")
    ap.add_argument("--dev-limit", type=int, default=3000, help="dev pairs scored per epoch (a fixed sample; 0 = all)")
    ap.add_argument("--eval", nargs="*", default=[], help="labelled pair files scored with the chosen epoch")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--lr", type=float, default=2e-5)
    ap.add_argument("--max-length", type=int, default=128)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0 = all cores)")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    import torch
    from sentence_transformers import CrossEncoder, InputExample
    from torch.utils.data import DataLoader
    if args.threads:
        torch.set_num_threads(args.threads)
    os.makedirs(args.out, exist_ok=True)
    train = [r for path in args.train for r in read_pairs(path)]
    dev = read_pairs(args.dev, args.dev_limit)
    print(f"reference cross-encoder: {len(train)} training pairs, {len(dev)} dev pairs", file=sys.stderr, flush=True)
    examples = [InputExample(texts=[a, b], label=y) for a, b, y in train]
    report_path = os.path.join(args.out, "report.json")
    best_dir = os.path.join(args.out, "best")
    report = json.load(open(report_path)) if os.path.exists(report_path) else {}
    if not (report.get("best_epoch") and os.path.isdir(best_dir)):
        # One fit over every epoch (one WarmupLinear schedule); the evaluator scores dev after each
        # epoch and fit keeps the best epoch's model in OUT/best.
        report = {"dev": []}

        class DevAuc:
            def __call__(self, model, output_path=None, epoch=-1, steps=-1):
                auc = auc_of(model, dev, 64)
                report["dev"].append({"epoch": epoch + 1, "auc": auc, "seconds": round(time.time() - t0, 1)})
                json.dump(report, open(report_path, "w"), indent=2)
                print(f"reference cross-encoder: epoch {epoch + 1}: dev ROC-AUC {auc:.4f}", file=sys.stderr, flush=True)
                return auc

        torch.manual_seed(args.seed)
        random.seed(args.seed)
        ce = CrossEncoder(args.model, num_labels=1, max_length=args.max_length, device="cpu")
        loader = DataLoader(examples, batch_size=args.batch_size, shuffle=True,
                            generator=torch.Generator().manual_seed(args.seed))
        t0 = time.time()
        ce.fit(train_dataloader=loader, evaluator=DevAuc(), epochs=args.epochs,
               warmup_steps=math.ceil(0.1 * len(loader) * args.epochs), optimizer_params={"lr": args.lr},
               weight_decay=0.01, max_grad_norm=1.0, output_path=best_dir, save_best_model=True,
               show_progress_bar=False)
        report["best_epoch"] = max(report["dev"], key=lambda d: d["auc"])["epoch"]
        json.dump(report, open(report_path, "w"), indent=2)
    ce = CrossEncoder(best_dir, max_length=args.max_length, device="cpu")
    report["eval"] = {}
    for path in args.eval:
        rows = read_pairs(path)
        name = os.path.basename(path).rsplit(".", 1)[0]
        report["eval"][name] = {"auc": auc_of(ce, rows, 64), "pairs": len(rows)}
        print(f"reference cross-encoder: {name}: ROC-AUC {report['eval'][name]['auc']:.4f}", file=sys.stderr, flush=True)
    report["settings"] = {"model": args.model, "train": args.train, "dev": args.dev, "epochs": args.epochs,
                          "batch_size": args.batch_size, "lr": args.lr, "max_length": args.max_length,
                          "seed": args.seed, "pairs": len(train)}
    json.dump(report, open(report_path, "w"), indent=2)


if __name__ == "__main__":
    main()
