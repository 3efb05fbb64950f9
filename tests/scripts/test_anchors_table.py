"""bench/anchors_table.py: the tables of docs/benchmarks.md from bench_onnx.py's lines. A latency
ratio is the anchor's time over sieve's, a throughput ratio sieve's rate over the anchor's, each
against the fastest anchor of the kind (fp32 anchors for sieve, int8 ones for sieve-int8,
OpenVINO's default for sieve-bf16); figures computed here by hand."""
import json
import os
import subprocess
import sys

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "bench", "anchors_table.py")


def lat(engine, ms, tokens=8):
    return {"case": "latency", "engine": engine, "batch": 1, "tokens": tokens, "threads": 1, "p50_ms": ms}


def thr(engine, rate, tokens=128):
    return {"case": "throughput", "engine": engine, "batch": 32, "tokens": tokens, "threads": 1,
            "sentences_per_s": rate}


def run(tmp_path, rows):
    path = tmp_path / "onnx.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    r = subprocess.run([sys.executable, SCRIPT, str(path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_ratios_against_the_fastest_anchor_of_each_kind(tmp_path):
    rows = [lat("sieve", 2.0), lat("ort-fp32", 3.0), lat("ov-fp32", 2.5),  # fastest fp32: ov 2.5 ms
            lat("sieve-int8", 1.0), lat("ort-int8", 0.8), lat("ov-int8", 1.2),  # fastest int8: ort 0.8 ms
            lat("sieve-bf16", 1.5), lat("ov-default", 1.8),
            thr("sieve", 50), thr("ov-fp32", 40), thr("sieve-int8", 100), thr("ov-int8", 200),
            thr("sieve-bf16", 90), thr("ov-default", 120),
            {"case": "rss", "engine": "sieve", "peak_rss_mb": 400.4}]
    out = run(tmp_path, rows)
    goals = [line for line in out.splitlines() if line.startswith("| batch 1 x 8 p50 |")][0]
    assert "1.25x (2.00 ms vs ov-fp32 2.50 ms)" in goals
    assert "0.80x (1.00 ms vs ort-int8 0.80 ms)" in goals
    assert "1.20x (1.50 ms vs ov-default 1.80 ms)" in goals
    goals = [line for line in out.splitlines() if line.startswith("| batch 32 x 128 |")][0]
    assert "1.25x (50/s vs ov-fp32 40/s)" in goals
    assert "0.50x (100/s vs ov-int8 200/s)" in goals
    assert "0.75x (90/s vs ov-default 120/s)" in goals
    # The engines' table: every engine a column, in the order first seen; the RSS row.
    head = out.splitlines()[0]
    assert head.startswith("| case | threads | sieve | ort-fp32 | ov-fp32 | sieve-int8 |")
    assert "| peak RSS MB (batch 32 x 256) | 1 | 400 |" in out


def test_a_file_without_timings_is_an_error(tmp_path):
    path = tmp_path / "empty.jsonl"
    path.write_text(json.dumps({"case": "machine"}) + "\n")
    r = subprocess.run([sys.executable, SCRIPT, str(path)], capture_output=True, text=True)
    assert r.returncode != 0
    assert "holds no timed case" in r.stderr
