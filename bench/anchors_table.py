#!/usr/bin/env python3
"""The markdown tables of docs/benchmarks.md from bench_onnx.py's JSON lines: every engine at every
case, then sieve against the fastest anchor of each kind (fp32, int8, OpenVINO's default for bf16).

    python3 bench/anchors_table.py build/bench-onnx/onnx-all-MiniLM-L6-v2.jsonl
"""
import argparse
import json
import sys

CASES = [("latency", 1, 8), ("latency", 1, 16), ("latency", 1, 32),
         ("throughput", 32, 16), ("throughput", 32, 128), ("throughput", 32, 256)]
FP32_ANCHORS = ["ort-fp32", "ort-fp32-plain", "ov-fp32", "ct2-fp32"]
INT8_ANCHORS = ["ort-int8", "ov-int8", "ct2-int8"]


def label(kind, batch, tokens):
    return f"batch {batch} x {tokens} " + ("p50 ms" if kind == "latency" else "sentences/s")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("jsonl", help="bench_onnx.py's output (onnx-MODEL.jsonl)")
    args = ap.parse_args()
    rows = [json.loads(line) for line in open(args.jsonl) if line.strip()]
    speed = {}  # (kind, batch, tokens, threads) -> {engine: value}
    engines = []
    for r in rows:
        if r.get("case") not in ("latency", "throughput"):
            continue
        value = r["p50_ms"] if r["case"] == "latency" else r["sentences_per_s"]
        speed.setdefault((r["case"], r["batch"], r["tokens"], r["threads"]), {})[r["engine"]] = value
        if r["engine"] not in engines:
            engines.append(r["engine"])
    rss = {r["engine"]: r["peak_rss_mb"] for r in rows if r.get("case") == "rss" and "peak_rss_mb" in r}
    if not speed:
        sys.exit(f"anchors_table: {args.jsonl} holds no timed case")
    threads = sorted({k[3] for k in speed})
    out = ["| case | threads | " + " | ".join(engines) + " |", "|---|---:|" + "---:|" * len(engines)]
    for t in threads:
        for kind, batch, tokens in CASES:
            got = speed.get((kind, batch, tokens, t), {})
            fmt = (lambda v: f"{v:.2f}") if kind == "latency" else (lambda v: f"{v:.0f}")
            out.append(f"| {label(kind, batch, tokens)} | {t} | " +
                       " | ".join(fmt(got[e]) if e in got else "" for e in engines) + " |")
    if rss:
        out.append("| peak RSS MB (batch 32 x 256) | 1 | " +
                   " | ".join(f"{rss[e]:.0f}" if e in rss else "" for e in engines) + " |")
    print("\n".join(out))
    print()

    def ratio(kind, got, mine, anchors):
        have = [a for a in anchors if a in got]
        if mine not in got or not have:
            return ""
        if kind == "latency":
            best = min(have, key=lambda a: got[a])
            return f"{got[best] / got[mine]:.2f}x ({got[mine]:.2f} ms vs {best} {got[best]:.2f} ms)"
        best = max(have, key=lambda a: got[a])
        return f"{got[mine] / got[best]:.2f}x ({got[mine]:.0f}/s vs {best} {got[best]:.0f}/s)"

    print("| case | threads | sieve fp32 / best fp32 anchor | sieve int8 / best int8 anchor | sieve bf16 / OpenVINO default |")
    print("|---|---:|---|---|---|")
    for t in threads:
        for kind, batch, tokens in CASES:
            got = speed.get((kind, batch, tokens, t), {})
            name = f"batch {batch} x {tokens}" + (" p50" if kind == "latency" else "")
            print(f"| {name} | {t} | {ratio(kind, got, 'sieve', FP32_ANCHORS)} | "
                  f"{ratio(kind, got, 'sieve-int8', INT8_ANCHORS)} | {ratio(kind, got, 'sieve-bf16', ['ov-default'])} |")


if __name__ == "__main__":
    main()
