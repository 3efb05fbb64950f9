#!/usr/bin/env python3
"""Sentences for the gate's generated pairs, split once into train / dev / eval.

Two sources, interleaved so that capped generation draws evenly from both: WordNet's example
sentences (general English, from `sieve corpus build`) and the sentences of SciFact's abstracts
(real domain text). A sentence's part is fixed by the MD5 of its lower-cased text: the first 30%
of the range is eval, the next 10% dev, the rest train; the same sentence always lands in the same
part, whichever run or machine splits it.

  scripts/gate-sentences.py --examples EXAMPLES.txt --scifact CORPUS.jsonl --out DIR

A third source, for PAWS-style pairs (scripts/train-gate.sh's source "pawsstyle"): the sentences of
a Wikipedia corpus (WikiQA's), split by the same hash into DIR/wiki-{train,dev,eval}.txt. Any
sentence that occurs in an --exclude pair file (PAWS-Wiki's, itself drawn from Wikipedia) is left
out, so that no evaluated sentence is rewritten for training.

  scripts/gate-sentences.py --wiki CORPUS.jsonl [--exclude PAIRS.tsv ...] --out DIR
"""
import argparse
import hashlib
import json
import os
import re
import sys

SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")


def part(sentence: str) -> str:
    h = int(hashlib.md5(sentence.lower().encode("utf-8")).hexdigest()[:8], 16) % 100
    return "eval" if h < 30 else "dev" if h < 40 else "train"


def scifact_sentences(path: str):
    with open(path, encoding="utf-8") as f:
        for line in f:
            text = json.loads(line).get("text", "")
            for s in SPLIT.split(text):
                s = " ".join(s.split())
                n = len(s.split())
                # Whole sentences of ordinary length; lists, fragments and citations are left out.
                if 6 <= n <= 30 and s[-1] in ".!?" and "\t" not in s:
                    yield s


def write_parts(out: str, prefix: str, parts: dict) -> None:
    os.makedirs(out, exist_ok=True)
    for name, rows in parts.items():
        tmp = os.path.join(out, f".{prefix}-{name}.txt.tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            f.writelines(s + "\n" for s in rows)
        os.replace(tmp, os.path.join(out, f"{prefix}-{name}.txt"))


def wiki_main(a) -> int:
    excluded = set()
    for p in a.exclude or []:
        if not os.path.isfile(p):
            print(f"gate-sentences: '{p}' is not a file", file=sys.stderr)
            return 1
        with open(p, encoding="utf-8") as f:
            for line in f:
                for field in line.rstrip("\n").split("\t")[:2]:
                    excluded.add(" ".join(field.split()).lower())
    if not os.path.isfile(a.wiki):
        print(f"gate-sentences: '{a.wiki}' is not a file", file=sys.stderr)
        return 1
    parts = {"train": [], "dev": [], "eval": []}
    seen, dropped = set(), 0
    for s in scifact_sentences(a.wiki):
        key = s.lower()
        if key in seen:
            continue
        seen.add(key)
        if key in excluded:
            dropped += 1
            continue
        parts[part(s)].append(s)
    write_parts(a.out, "wiki", parts)
    print(json.dumps({"wiki": len(seen), "excluded": dropped, **{k: len(v) for k, v in parts.items()}}))
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--examples", help="WordNet example sentences, one per line")
    ap.add_argument("--scifact", help="SciFact corpus.jsonl")
    ap.add_argument("--wiki", help="a Wikipedia corpus.jsonl (WikiQA's): writes DIR/wiki-{train,dev,eval}.txt only")
    ap.add_argument("--exclude", nargs="+", help="with --wiki: pair TSVs whose sentences are left out")
    ap.add_argument("--out", required=True, help="folder for sentences-{train,dev,eval}.txt")
    a = ap.parse_args()
    if a.wiki:
        return wiki_main(a)
    if not a.examples or not a.scifact:
        ap.error("--examples and --scifact are required (or --wiki)")
    for p in (a.examples, a.scifact):
        if not os.path.isfile(p):
            print(f"gate-sentences: '{p}' is not a file", file=sys.stderr)
            return 1
    with open(a.examples, encoding="utf-8") as f:
        wordnet = [" ".join(l.split()) for l in f if len(l.split()) >= 4]
    scifact = list(dict.fromkeys(scifact_sentences(a.scifact)))
    parts = {"train": [], "dev": [], "eval": []}
    seen = set()
    for i in range(max(len(wordnet), len(scifact))):
        for src in (wordnet, scifact):
            if i < len(src) and src[i].lower() not in seen:
                seen.add(src[i].lower())
                parts[part(src[i])].append(src[i])
    write_parts(a.out, "sentences", parts)
    print(json.dumps({"wordnet": len(wordnet), "scifact": len(scifact), **{k: len(v) for k, v in parts.items()}}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
