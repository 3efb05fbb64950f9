"""scripts/gate-table.py: the table's AUCs and accept rates on a tiny part worked out by hand, the
cosine read at its fixed cut and a gate at its own threshold, and a scores file of the wrong length
refused."""
import json
import os
import subprocess
import sys

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "gate-table.py")


def write_scores(path, scores, threshold):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({"score": s, "threshold": threshold}) + "\n" for s in scores))


def test_table_by_hand(tmp_path):
    # Four pairs: two duplicates (label 1), two near-misses.
    (tmp_path / "part.tsv").write_text("sentence1\tsentence2\tcategory\tlabel\n"
                                       "a\tb\tdup\t1\nc\td\tdup\t1\ne\tf\ttwin\t0\ng\th\ttwin\t0\n")
    # The cosine ranks one near-miss (0.95) above both duplicates and the other (0.7) below both:
    # 2 of 4 (duplicate, near-miss) pairs in order, AUC 1/2; at its cut 0.8 it
    # accepts both duplicates and one near-miss (0.95; 0.7 is below).
    write_scores(tmp_path / "scores" / "cosine" / "p.jsonl", [0.9, 0.85, 0.95, 0.7], None)
    # The gate ranks every duplicate first: AUC 1; at its threshold 0.5 it accepts one duplicate
    # (0.6) and no near-miss.
    write_scores(tmp_path / "scores" / "gate" / "p.jsonl", [0.6, 0.45, 0.2, 0.1], 0.5)
    out = subprocess.run([sys.executable, SCRIPT, "--part", f"p={tmp_path / 'part.tsv'}", "--scorer", "cosine",
                          "--scorer", "gate", "--scores-dir", str(tmp_path / "scores"), "--json",
                          str(tmp_path / "t.json"), "--markdown", str(tmp_path / "t.md")],
                         check=True, capture_output=True, text=True)
    t = json.loads((tmp_path / "t.json").read_text())
    row = t["parts"][0]
    assert row["pairs"] == 4 and row["positives"] == 2
    cos, gate = row["scorers"]["cosine"], row["scorers"]["gate"]
    assert cos["auc"] == 0.5 and cos["threshold"] == 0.8
    assert cos["positives_accepted"] == 1.0 and cos["negatives_accepted"] == 0.5
    assert gate["auc"] == 1.0 and gate["threshold"] == 0.5
    assert gate["positives_accepted"] == 0.5 and gate["negatives_accepted"] == 0.0
    assert "| p | 4 | 0.500 | 1.000 | 1.000 / 0.500 | 0.500 / 0.000 |" in (tmp_path / "t.md").read_text()
    assert json.loads(out.stdout) == {"p": {"cosine": 0.5, "gate": 1.0}}
    # A scores file that does not match its part is refused by name.
    write_scores(tmp_path / "scores" / "gate" / "p.jsonl", [0.6, 0.45], 0.5)
    bad = subprocess.run([sys.executable, SCRIPT, "--part", f"p={tmp_path / 'part.tsv'}", "--scorer", "gate",
                          "--scores-dir", str(tmp_path / "scores"), "--json", str(tmp_path / "u.json")],
                         capture_output=True, text=True)
    assert bad.returncode != 0 and "2 scores for 4 pairs" in bad.stderr
