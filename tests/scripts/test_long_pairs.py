"""scripts/long-pairs.py (the gate recipe's `long` and `longq` sources): every row is made of whole
labelled pairs of its input, side by side in one order, and its label is 1 exactly when every
segment is a paraphrase; the shares of the three kinds; the same seed gives the same file."""
import os
import subprocess
import sys

import pytest

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "long-pairs.py")


def write_pairs(path, rows):
    with open(path, "w", encoding="utf-8") as f:
        f.write("sentence1\tsentence2\tcategory\tlabel\n")
        for r in rows:
            f.write("\t".join(map(str, r)) + "\n")


def run(tmp_path, *args):
    out = tmp_path / "long.tsv"
    p = subprocess.run([sys.executable, SCRIPT, *args, "--out", str(out)], capture_output=True, text=True)
    return p, out


def read(path):
    with open(path, encoding="utf-8") as f:
        assert f.readline() == "sentence1\tsentence2\tcategory\tlabel\n"
        return [line.rstrip("\n").split("\t") for line in f]


def segments(text, firsts):
    """Splits `text` into the input first sentences it is made of (each ends with its own marker)."""
    out, rest = [], text
    while rest:
        hit = [s for s in firsts if rest.startswith(s)]
        assert len(hit) == 1, (text, rest)
        out.append(hit[0])
        rest = rest[len(hit[0]):].lstrip(" ")
    return out


def test_rows_are_labelled_pairs_joined_in_order(tmp_path):
    # Unique, self-delimiting sentences: "P<i>a." / "P<i>b." paraphrases, "N<i>a." / "N<i>b." differ.
    rows = [(f"P{i}a.", f"P{i}b.", "qqp_paraphrase", 1) for i in range(30)]
    rows += [(f"N{i}a.", f"N{i}b.", "qtwin_wh_swap" if i % 2 else "qqp_nonparaphrase", 0) for i in range(20)]
    write_pairs(tmp_path / "in.tsv", rows)
    p, out = run(tmp_path, "--pairs", str(tmp_path / "in.tsv"), "--count", "400", "--seed", "3")
    assert p.returncode == 0, p.stderr
    got = read(out)
    assert len(got) == 400
    by_first = {r[0]: r for r in rows}
    kinds = {"long_same": 0, "long_one_differs": 0, "long_all_differ": 0}
    for a, b, cat, label in got:
        segs = segments(a, list(by_first))
        assert 2 <= len(segs) <= 4
        # The second text is the same segments' second sentences, in the same order.
        assert b == " ".join(by_first[s][1] for s in segs)
        labels = [by_first[s][3] for s in segs]
        assert label == ("1" if all(labels) else "0")
        assert len(set(segs)) == len(segs)  # no pair twice in a row
        if cat == "long_same":
            assert all(labels)
        elif cat.startswith("long_one_differs_"):
            odd = [s for s in segs if not by_first[s][3]]
            assert len(odd) == 1 and cat == "long_one_differs_" + by_first[odd[0]][2]
        else:
            assert cat == "long_all_differ" and not any(labels)
        kinds["long_one_differs" if cat.startswith("long_one") else cat] += 1
    assert kinds == {"long_same": 200, "long_one_differs": 150, "long_all_differ": 50}
    # The differing segment is not always first: its place is drawn.
    places = {segments(a, list(by_first)).index(next(s for s in segments(a, list(by_first)) if s.startswith("N")))
              for a, _, cat, _ in got if cat.startswith("long_one")}
    assert len(places) >= 3
    # Same seed, same file; another seed, another file.
    first = out.read_bytes()
    assert run(tmp_path, "--pairs", str(tmp_path / "in.tsv"), "--count", "400", "--seed", "3")[1].read_bytes() == first
    assert run(tmp_path, "--pairs", str(tmp_path / "in.tsv"), "--count", "400", "--seed", "4")[1].read_bytes() != first


@pytest.mark.parametrize("rows, message", [
    ([("a", "b", "x", 1)] * 2 + [("c", "d", "y", 0)], "too few"),
    ([("a", "b", "x", 1)] * 8, "too few"),
])
def test_too_few_pairs_is_refused(tmp_path, rows, message):
    write_pairs(tmp_path / "in.tsv", rows)
    p, out = run(tmp_path, "--pairs", str(tmp_path / "in.tsv"), "--count", "10")
    assert p.returncode != 0 and message in p.stderr
    assert not out.exists()


def test_a_file_without_the_header_is_refused(tmp_path):
    (tmp_path / "in.tsv").write_text("a\tb\tx\t1\n", encoding="utf-8")
    p, out = run(tmp_path, "--pairs", str(tmp_path / "in.tsv"))
    assert p.returncode != 0 and "header" in p.stderr
    assert not out.exists()
