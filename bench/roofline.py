#!/usr/bin/env python3
"""The encoder's roofline (issue 44): for each shape of bench/bench_onnx.py, the arithmetic and the
bytes a forward pass must move, the time the machine's measured ceilings allow (the larger of
FLOPs / peak and bytes / bandwidth, per precision), and where each engine's measured time sits
against it. Reads the two benchmarks' JSON lines; writes a markdown table (and JSON with --json).

    OMP_NUM_THREADS=1 build/bench/bench_products > build/bench-onnx/products.jsonl
    build/bench-venv/bin/python bench/bench_onnx.py --out build/bench-onnx/onnx.jsonl
    python3 bench/roofline.py --products build/bench-onnx/products.jsonl \\
        --onnx build/bench-onnx/onnx.jsonl --model models/all-MiniLM-L6-v2 [--threads 1]

Ceilings: the peak of a precision is oneDNN's best fixed-row product at 4,096 rows on warm weights
(bench_products), the bandwidth its 32 MB read (--bandwidth memory: its 512 MB read); both one
thread, so the table covers the one-thread cases. Bytes counted: the dense weights once per call at the engine's precision (fp32 4, bf16 2,
int8 1 byte a weight), and each layer's activations written and read once in fp32 (states,
query/key/value, context, the feed-forward's middle) plus attention's scores. Attention and the
embeddings' arithmetic are counted; LayerNorm, softmax and GELU are not (they are a few percent of
the FLOPs but not of the time: the table's gap includes them).
"""
import argparse
import json
import os
import sys


def load(path):
    return [json.loads(line) for line in open(path) if line.strip()]


def precision_of(engine):
    if "int8" in engine:
        return "int8"
    if "bf16" in engine or engine == "ov-default":
        return "bf16"
    return "fp32"


def shape_costs(cfg, batch, tokens, precision):
    h, i, layers = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_hidden_layers"]
    heads = cfg["num_attention_heads"]
    dense_weights = layers * (h * 3 * h + h * h + h * i + i * h)
    rows = batch * tokens
    dense_flops = 2 * rows * dense_weights
    attention_flops = layers * batch * 2 * 2 * tokens * tokens * h
    width = {"fp32": 4, "bf16": 2, "int8": 1}[precision]
    weight_bytes = dense_weights * width
    act_bytes = layers * rows * 4 * 2 * (h + 3 * h + h + h + i) + layers * batch * heads * tokens * tokens * 4 * 2
    return {"flops": dense_flops + attention_flops, "weight_bytes": weight_bytes, "activation_bytes": act_bytes}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--products", required=True, help="bench_products JSON lines")
    ap.add_argument("--onnx", required=True, help="bench_onnx.py JSON lines")
    ap.add_argument("--model", required=True, help="the model folder (its config.json)")
    ap.add_argument("--threads", type=int, default=1, help="which cases of bench_onnx.py (default 1)")
    ap.add_argument("--bandwidth", choices=["cache", "memory"], default="cache",
                    help="the read bandwidth of the smallest buffer bench_products read (cache: the working "
                         "sets here fit a large last-level cache) or of the largest (memory)")
    ap.add_argument("--json", default="", help="also write the rows as JSON lines here")
    args = ap.parse_args()
    cfg = json.load(open(os.path.join(args.model, "config.json")))
    prod = load(args.products)
    lines = sorted((r for r in prod if r["case"] == "bandwidth"), key=lambda r: r["bytes"])
    if not lines:
        sys.exit("roofline: no bandwidth line in " + args.products)
    bw = lines[0] if args.bandwidth == "cache" else lines[-1]
    peaks = {}
    for r in prod:
        if r["case"] == "product" and not r.get("unsupported") and r["rows"] == 4096 and not r["runtime_rows"]:
            peaks[r["type"]] = max(peaks.get(r["type"], 0.0), r["gflop_s"])
    read_gb_s = bw["read_gb_s"]
    print(f"Ceilings (one thread): read bandwidth {read_gb_s:.1f} GB/s ({bw['bytes'] >> 20} MB read; copy "
          f"{bw['copy_gb_s']:.1f}); peak "
          + ", ".join(f"{k} {v:.0f} GFLOP/s" for k, v in sorted(peaks.items())))
    print()
    rows = []
    for r in load(args.onnx):
        if r["case"] not in ("latency", "throughput") or r["threads"] != args.threads:
            continue
        batch, tokens, engine = r["batch"], r["tokens"], r["engine"]
        ms = r["p50_ms"] if r["case"] == "latency" else 1000.0 * batch / r["sentences_per_s"]
        p = precision_of(engine)
        c = shape_costs(cfg, batch, tokens, p)
        compute_ms = c["flops"] / (peaks.get(p, peaks.get("fp32", 1.0)) * 1e6)
        memory_ms = (c["weight_bytes"] + c["activation_bytes"]) / (read_gb_s * 1e6)
        floor = max(compute_ms, memory_ms)
        rows.append(dict(engine=engine, precision=p, batch=batch, tokens=tokens, ms=ms, **c, compute_ms=compute_ms,
                         memory_ms=memory_ms, bound="compute" if compute_ms >= memory_ms else "memory",
                         of_roofline=floor / ms, gflop_s=c["flops"] / ms / 1e6))
    shapes = sorted({(x["batch"], x["tokens"]) for x in rows})
    print("| shape | GFLOP | weights MB (fp32 / bf16 / int8) | activations MB | floor ms fp32 / bf16 / int8 |")
    print("|---|---:|---:|---:|---:|")
    for b, t in shapes:
        cs = {p: shape_costs(cfg, b, t, p) for p in ("fp32", "bf16", "int8")}
        floors = []
        for p in ("fp32", "bf16", "int8"):
            c = cs[p]
            floors.append(max(c["flops"] / (peaks.get(p, 1.0) * 1e6),
                              (c["weight_bytes"] + c["activation_bytes"]) / (read_gb_s * 1e6)))
        print(f"| {b} x {t} | {cs['fp32']['flops'] / 1e9:.3f} | "
              + " / ".join(f"{cs[p]['weight_bytes'] / 1e6:.1f}" for p in ("fp32", "bf16", "int8"))
              + f" | {cs['fp32']['activation_bytes'] / 1e6:.1f} | " + " / ".join(f"{f:.2f}" for f in floors) + " |")
    print()
    engines = []
    for x in rows:
        if x["engine"] not in engines:
            engines.append(x["engine"])
    print("Each engine's measured time as a share of its precision's floor (1.00 = at the roofline), "
          f"{args.threads} thread(s):")
    print()
    print("| shape | " + " | ".join(engines) + " |")
    print("|---|" + "---:|" * len(engines))
    for b, t in shapes:
        cells = []
        for e in engines:
            x = next((x for x in rows if x["engine"] == e and x["batch"] == b and x["tokens"] == t), None)
            cells.append(f"{x['of_roofline']:.2f}" if x else "")
        print(f"| {b} x {t} | " + " | ".join(cells) + " |")
    if args.json:
        with open(args.json, "w") as f:
            for x in rows:
                f.write(json.dumps(x) + "\n")


if __name__ == "__main__":
    main()
