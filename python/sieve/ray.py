"""Shard sets built on a Ray cluster: the layout `sieve index build --shards N` writes, with its shards
built by Ray tasks on any node, and committed only when every shard verifies.

    python3 -m sieve.ray build --corpus C --shards N --out DIR [--address RAY_ADDRESS] [options]
    python3 -m sieve.ray native --index DIR [--address RAY_ADDRESS] [options]  (sieve/ray_native.py)
    python3 -m sieve.ray serve --index DIR [--address RAY_ADDRESS] [options]   (sieve/ray_serve.py)

or, from Python, `sieve.ray.build(corpus, out, shards, ...)`. Without an address a local Ray is
started (and stopped after). Steps:

1. Ray Data reads the corpus (BEIR JSONL, TSV `id<TAB>text[<TAB>title]` or Parquet with columns
   `_id` or `id`, `text` and optionally `title`) in corpus order, and checks that no id repeats.
2. It is cut where `sieve index build --shards N` cuts it (`shard_bounds`: contiguous parts,
   each started at a multiple of `chunk_docs`, so that the encoder sees the same batches as one
   index's build and the set equals one index to the bit).
3. One Ray task per shard writes its part to `OUT.partial/corpus/shard-XXX.jsonl` and builds the
   shard with the library's own builder (the encoder loaded once per task). Shard 0 goes first
   and trains the token codec; the others then run in parallel with that codec. A task whose
   worker dies (kill -9, a lost node) is retried by Ray: the shard build resumes from its last
   checkpoint, and a shard already complete is kept.
4. The driver commits (`commit_shard_set`): every shard complete, built alike, every checksum
   verified; then `shardset.json` is written and `OUT.partial` renamed to `OUT`. All or nothing.

Every node must see `OUT.partial` at the same path (one machine, or a shared file system) and
have the `sieve` package and the model. Ray itself is not a dependency of sieve: install it to use
this module (scripts/setup.sh --ray installs the pinned versions the tests use).
"""
import argparse
import json
import os
import shutil
import signal
import sys
import time

from . import _sieve

# Fault injection for the tests: "SHARD:POINT" kills (SIGKILL) the worker building shard SHARD
# once, at POINT "start" (before the build) or "built" (after it, before the task returns).
_KILL_ENV = "SIEVE_RAY_TEST_KILL"


def _ray():
    try:
        import ray  # noqa: F401
        import ray.data  # noqa: F401
    except ImportError as e:  # pragma: no cover - depends on the machine
        raise ImportError("sieve.ray needs Ray with Ray Data (pip install 'ray[data]'; scripts/setup.sh --ray)") from e
    return ray


def init_address(address, environ=None):
    """The address to give ray.init: the one asked for, else RAY_ADDRESS when set, else "local" (a new
    local Ray). Never None: with no address Ray would attach to the cluster named in
    /tmp/ray/ray_current_cluster, which a crashed run leaves behind, and spend minutes trying to
    reach a cluster that is gone."""
    environ = os.environ if environ is None else environ
    return address or environ.get("RAY_ADDRESS") or "local"


def build_key(corpus, documents, shards, model_dir, options):
    """What an interrupted build must match to be resumed: the corpus's fingerprint (path, size,
    modification time and a CRC-32 of its bytes, as the C++ builder's checkpoints), the document
    and shard counts, the model's identity (its weights and files, not the path it was reached
    by) and the build options."""
    return json.dumps({"corpus": _sieve.corpus_fingerprint(os.path.abspath(str(corpus))), "documents": documents,
                       "shards": shards, "model": _sieve.model_identity(model_dir), "options": options},
                      sort_keys=True)


def runtime_env(*extra):
    """Ray's runtime_env for sieve's workers: they import `sieve` from where the driver did, and
    see the driver's model folders (and the variables named in `extra`, when set)."""
    pkg_parent = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {"PYTHONPATH": os.pathsep.join([pkg_parent] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])}
    for k in (*extra, "SIEVE_MODELS_DIR", "SIEVE_MODEL_DIR"):
        if k in os.environ:
            env[k] = os.environ[k]
    return {"env_vars": env}


def _format_of(corpus, fmt):
    if fmt and fmt != "auto":
        return fmt
    name = str(corpus).lower()
    if name.endswith(".parquet") or os.path.isdir(corpus):
        return "parquet"
    if name.endswith(".tsv"):
        return "tsv"
    return "jsonl"


def _normalize_tsv(batch):
    """Rows of f0, f1[, f2] (id, text[, title]) as _id, title, text."""
    out = {"_id": [str(x) for x in batch["f0"]], "text": [str(x) for x in batch["f1"]]}
    out["title"] = [("" if x is None else str(x)) for x in batch["f2"]] if "f2" in batch else [""] * len(out["_id"])
    return out


def _refuse_extras(corpus, cols):
    """Metadata and expiry are never dropped without a word: the local build keeps them."""
    carried = [c for c in ("metadata", "expires_at", "ttl_s") if c in cols]
    if carried:
        raise ValueError(f"{corpus}: the corpus has {', '.join(carried)}, which a build on Ray does not carry into "
                         "the shards; build the set with `sieve index build --shards N` (it keeps them)")


def _normalize(batch):
    ids = batch["_id"] if "_id" in batch else batch["id"]
    n = len(ids)
    titles = batch["title"] if "title" in batch else [""] * n
    return {"_id": [str(x) for x in ids], "title": [("" if t is None else str(t)) for t in titles],
            "text": [("" if t is None else str(t)) for t in batch["text"]]}


def read_corpus(corpus, fmt="auto"):
    """The corpus as a Ray Dataset of {"_id", "title", "text"} rows, in corpus order."""
    ray = _ray()
    import pyarrow.csv as pacsv
    ray.data.DataContext.get_current().execution_options.preserve_order = True
    fmt = _format_of(corpus, fmt)
    if fmt == "parquet":
        ds = ray.data.read_parquet(corpus)
        cols = set(ds.columns())
        if not ({"_id", "id"} & cols) or "text" not in cols:
            raise ValueError(f"{corpus}: a Parquet corpus needs columns _id (or id) and text; it has {sorted(cols)}")
        _refuse_extras(corpus, cols)
        return ds.map_batches(_normalize, batch_format="numpy")
    if fmt == "tsv":
        ds = ray.data.read_csv(corpus, read_options=pacsv.ReadOptions(autogenerate_column_names=True),
                               parse_options=pacsv.ParseOptions(delimiter="\t", quote_char=False),
                               convert_options=pacsv.ConvertOptions(column_types={"f0": "string", "f1": "string",
                                                                                  "f2": "string"}))
        first = ds.take(1)
        if first and str(first[0].get("f0", "")).lower() in ("id", "_id"):
            raise ValueError(f"{corpus}: a TSV corpus for sieve.ray has no header row (id<TAB>text[<TAB>title])")
        return ds.map_batches(_normalize_tsv, batch_format="numpy")
    if fmt == "jsonl":
        ds = ray.data.read_json(corpus)
        _refuse_extras(corpus, set(ds.columns()))
        return ds.map_batches(_normalize, batch_format="numpy")
    raise ValueError(f"unknown corpus format {fmt!r} (auto, jsonl, tsv or parquet)")


def _kill_point(shard):
    spec = os.environ.get(_KILL_ENV, "")
    if not spec:
        return None
    s, _, point = spec.partition(":")
    return point if s == str(shard) else None


def _build_shard(shard, part, staging, model, documents, options, threads):
    """One Ray task: the shard's corpus file, then the library's build_shard (which resumes an
    interrupted shard, keeps a complete one, and gives shards after the first shard 0's codec)."""
    name = _sieve.shard_dir_name(shard)
    marker = os.path.join(staging, f".killed-{name}")
    point = _kill_point(shard)
    if point == "start" and not os.path.exists(marker):
        open(marker, "w").close()
        os.kill(os.getpid(), signal.SIGKILL)
    corpus_dir = os.path.join(staging, "corpus")
    os.makedirs(corpus_dir, exist_ok=True)
    path = os.path.join(corpus_dir, name + ".jsonl")
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        for row in part.iter_rows():
            f.write(json.dumps({"_id": row["_id"], "title": row["title"], "text": row["text"]}, ensure_ascii=False))
            f.write("\n")
    if os.path.exists(path) and open(path, "rb").read() == open(tmp, "rb").read():
        os.remove(tmp)  # unchanged: keep its mtime, so an interrupted shard build resumes
    else:
        os.replace(tmp, path)
    report = _sieve.build_shard(model, path, staging, shard, documents, options["vectors"], options["codec"],
                                options["tokens"], options["batch_size"], options["chunk_docs"], threads)
    if point == "built" and not os.path.exists(marker):
        open(marker, "w").close()
        os.kill(os.getpid(), signal.SIGKILL)
    return {"shard": shard, "documents": report["documents"], "kept": report["note"].startswith("kept")}


def build(corpus, out, shards, model=None, *, address=None, fmt="auto", vector_factory="auto", token_codec="sq8",
          store_tokens=True, batch_size=32, chunk_docs=512, cpus_per_shard=1, max_retries=3, force=False,
          num_cpus=None, log=None):
    """Builds the shard set `out` from `corpus` on Ray; returns a report dict
    {"documents", "shards", "seconds", "retried_or_kept", ...}. See the module's doc."""
    ray = _ray()
    log = log or (lambda msg: print(f"sieve.ray: {msg}", file=sys.stderr, flush=True))
    if shards < 1:
        raise ValueError("shards must be at least 1")
    out = os.path.normpath(str(out))
    if os.path.exists(out) and not force:
        raise FileExistsError(f"'{out}' already exists (use force=True / --force to replace it)")
    model_dir = _sieve.resolve_model(str(model or ""))
    staging = out + ".partial"
    t0 = time.time()
    started = False
    if not ray.is_initialized():
        address = init_address(address)
        kwargs = {"address": address} if address != "local" else {"address": address, "num_cpus": num_cpus}
        ray.init(include_dashboard=False, log_to_driver=False, runtime_env=runtime_env(_KILL_ENV), **kwargs)
        started = True
    try:
        ds = read_corpus(str(corpus), fmt)
        total = ds.count()
        log(f"{total} documents in {corpus}")
        dup = ds.groupby("_id").count().filter(lambda r: r["count()"] > 1).take(1)
        if dup:
            raise ValueError(f"{corpus}: id {dup[0]['_id']!r} occurs more than once")
        bounds = _sieve.shard_bounds(total, shards, chunk_docs)
        options = {"vectors": vector_factory, "codec": token_codec,
                   "tokens": bool(store_tokens), "batch_size": batch_size, "chunk_docs": chunk_docs}
        key = build_key(corpus, total, shards, model_dir, options)
        key_file = os.path.join(staging, "ray-build.json")
        if os.path.exists(staging) and (not os.path.isfile(key_file) or open(key_file).read() != key):
            log("an interrupted build of another corpus, model or options is in the way: starting afresh")
            shutil.rmtree(staging)
        os.makedirs(staging, exist_ok=True)
        with open(key_file, "w") as f:
            f.write(key)
        parts = ds.split_at_indices(bounds[1:-1]) if shards > 1 else [ds]
        task = ray.remote(num_cpus=cpus_per_shard, max_retries=max_retries)(_build_shard)
        log(f"building shard 1 of {shards} (it trains the token codec)")
        results = [ray.get(task.remote(0, parts[0], staging, model_dir, total, options, cpus_per_shard))]
        if shards > 1:
            log(f"building shards 2-{shards} on the cluster")
            results += ray.get([task.remote(s, parts[s], staging, model_dir, total, options, cpus_per_shard)
                                for s in range(1, shards)])
        for r, s in zip(results, range(shards)):
            want = bounds[s + 1] - bounds[s]
            if r["documents"] != want:
                raise RuntimeError(f"shard {s} holds {r['documents']} documents, {want} expected")
        os.remove(key_file)
        for name in os.listdir(staging):
            if name.startswith(".killed-"):
                os.remove(os.path.join(staging, name))
        _sieve.commit_shard_set(staging, out, shards, force, True)
        return {"documents": total, "shards": shards, "bounds": bounds, "seconds": time.time() - t0,
                "kept": sum(1 for r in results if r["kept"]), "note": f"{shards} shards on Ray"}
    finally:
        if started:
            ray.shutdown()


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["serve"]:  # Ray Serve: its own options (sieve/ray_serve.py)
        from . import ray_serve
        return ray_serve.main(argv[1:])
    if argv[:1] == ["native"]:  # sieve's shard servers placed by Ray (sieve/ray_native.py)
        from . import ray_native
        return ray_native.main(argv[1:])
    p = argparse.ArgumentParser(prog="python3 -m sieve.ray", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("native", help="serve a shard set natively: sieve shard servers placed and restarted by Ray, "
                   "a sieve serve router (python3 -m sieve.ray native --help; the documented default)")
    sub.add_parser("serve", help="serve a shard set on Ray Serve (python3 -m sieve.ray serve --help)")
    b = sub.add_parser("build", help="build a shard set on Ray (the options of `sieve index build`)")
    b.add_argument("--corpus", required=True, help="BEIR corpus.jsonl, TSV (id, text[, title]; no header) or Parquet")
    b.add_argument("--out", required=True, help="the shard set to write (OUT.partial while it is built)")
    b.add_argument("--shards", type=int, required=True, help="number of shards")
    b.add_argument("--model", default="", help="model name or folder (default: the default model)")
    b.add_argument("--address", default="", help="Ray cluster address (default: RAY_ADDRESS when set, else start a "
                   "local Ray; never the last cluster `ray start` ran)")
    b.add_argument("--format", default="auto", choices=["auto", "jsonl", "tsv", "parquet"], help="corpus format")
    b.add_argument("--vectors", default="auto", help="auto, Flat, HNSW32 or a FAISS factory string")
    b.add_argument("--codec", default="sq8", help="token codec: sq8, fp16, sq4, pq, fp32 or a FAISS codec")
    b.add_argument("--no-tokens", action="store_true", help="no token store (no stage 2)")
    b.add_argument("--chunk", type=int, default=512, help="documents encoded per commit (shards start at multiples)")
    b.add_argument("--batch-size", type=int, default=32, help="texts per forward pass")
    b.add_argument("--cpus-per-shard", type=int, default=1, help="CPUs (encoder threads) of each shard's task")
    b.add_argument("--num-cpus", type=int, default=None, help="CPUs of the local Ray (default: all)")
    b.add_argument("--max-retries", type=int, default=3, help="retries of a shard whose worker died")
    b.add_argument("--force", action="store_true", help="replace an existing OUT")
    a = p.parse_args(argv)
    try:
        rep = build(a.corpus, a.out, a.shards, a.model or None, address=a.address or None, fmt=a.format,
                    vector_factory=a.vectors, token_codec=a.codec, store_tokens=not a.no_tokens, batch_size=a.batch_size,
                    chunk_docs=a.chunk, cpus_per_shard=a.cpus_per_shard, max_retries=a.max_retries, force=a.force,
                    num_cpus=a.num_cpus)
    except (ValueError, FileExistsError, _sieve.Error) as e:
        print(f"sieve.ray: error: {e}", file=sys.stderr)
        return 1
    print(json.dumps(rep))
    return 0


if __name__ == "__main__":
    sys.exit(main())
