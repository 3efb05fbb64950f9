"""sieve: semantic search that does not confuse "the dog bit the man" with "the man bit the dog".

The Python face of sieve's C++ library, with NumPy arrays in and out:

    import sieve
    enc = sieve.Encoder.load()                       # the default model, or a name / model folder
    keys = enc.encode(["the dog bit the man"])       # float32 [n, dim], unit rows
    ver = sieve.Verifier.load()                      # the default model's verifier
    ver.score([("the dog bit the man", "the man bit the dog")])   # float32 [n]
    ver.accept([...])                                # bool [n] at its threshold
    sieve.Index.build(docs, "my-index")              # from a corpus file or dicts {"_id", "title", "text"}
    idx = sieve.Index.open("my-index")
    idx.search(["who bit the man"], k=10)            # hits as dicts
    D, I = idx.search_arrays(["who bit the man"], k=10)   # like FAISS: scores, internal ids
    sieve.search_verified(idx, ver, "who bit the man", gate=True)   # stage 1 + stage 2
    sieve.explain("the dog bit the man", "the man bit the dog")     # map, verdict and SVG
    sieve.nearmiss.generate(["the dog bit the man"])                # structural near-misses
    sieve.eval.ndcg(run, qrels, k=10)                               # BEIR / trec_eval metrics

Errors from the library raise `sieve.Error` with its message; bad arguments raise ValueError.
Long calls release the GIL and stop on Ctrl-C between chunks of work (KeyboardInterrupt).
"""
import json as _json
import sys as _sys

import numpy as _np

from ._sieve import Error
from ._sieve import Encoder as _Encoder
from ._sieve import Index as _Index
from ._sieve import Verifier as _Verifier
from . import _sieve
from . import eval  # noqa: A004 (sieve.eval, as the docs name it)
from . import nearmiss
from . import train
from .cache import Cache

__all__ = ["Error", "Encoder", "Index", "Verifier", "Filter", "Cache", "check_metadata", "search_verified", "explain",
           "set_threads", "default_model_dir", "models", "set_log_level", "eval", "nearmiss", "train"]


class Filter:
    """A metadata filter in the language of Chroma, Pinecone, MongoDB and LangChain (docs/filters.md):
    {"year": {"$gte": 2020}, "lang": {"$in": ["en", "de"]}, "$or": [...]}, parsed by sieve's one
    parser. `spec`: a dict or a JSON string (None or {}: everything passes). A malformed filter
    raises sieve.Error naming its place ("filter.year.$gt: ...")."""

    def __init__(self, spec=None):
        text = "" if spec is None else spec if isinstance(spec, str) else _json.dumps(spec)
        self._impl = _sieve.Filter.parse(text)

    def matches(self, metadata=None):
        """Whether a document with this metadata (a dict, a JSON string, or None) passes."""
        text = "" if metadata is None else metadata if isinstance(metadata, str) else _json.dumps(metadata)
        return self._impl.matches(text)

    @property
    def fields(self):
        """The fields the filter reads, sorted."""
        return list(self._impl.fields())

    @property
    def empty(self):
        """Whether every document passes."""
        return self._impl.empty

    def to_dict(self):
        """The filter in its normal form (implicit equalities and ands written out)."""
        return _json.loads(self._impl.to_json())


def _filter_text(spec):
    """A filter given as None, a dict, JSON text or a Filter, as JSON text."""
    if spec is None:
        return ""
    if isinstance(spec, Filter):
        return spec._impl.to_json()
    return spec if isinstance(spec, str) else _json.dumps(spec)


def check_metadata(metadata):
    """A document's metadata (a dict or a JSON string) checked as sieve stores it: a flat object of
    strings, finite numbers, booleans and lists of strings (dates as RFC 3339 strings); returns it
    as a dict; sieve.Error naming the field otherwise."""
    text = metadata if isinstance(metadata, str) else _json.dumps(metadata)
    out = _sieve.check_metadata(text)
    return _json.loads(out) if out else {}


def _texts(texts):
    """A list of str from one string or an iterable of them (TypeError otherwise)."""
    if isinstance(texts, str):
        return [texts]
    out = list(texts)
    for i, t in enumerate(out):
        if not isinstance(t, str):
            raise TypeError(f"texts[{i}] is {type(t).__name__}, not str")
    return out


def _progress_bar(label):
    """A progress callback that redraws one line on stderr."""
    def report(done, total):
        end = "\n" if done >= total else ""
        print(f"\r{label}: {done}/{total}", end=end, file=_sys.stderr, flush=True)
    return report


def set_threads(n):
    """Compute threads for sieve's tensor code (0: every core)."""
    _sieve.set_threads(n)


def default_model_dir():
    """The folder of the default model: $SIEVE_MODEL_DIR when set, else all-MiniLM-L6-v2 when installed
    (scripts/setup.sh), else sieve-mini; the same rule as the CLI and the server."""
    return _sieve.default_model_dir()


def models():
    """The installed models that `model=` accepts by name: a list of dicts (name, folder, family,
    dim, pooling, max_length, verifier), like `sieve model list`."""
    return _sieve.models()


def set_log_level(level):
    """How much sieve writes to stderr: "quiet", "warn" (the default in Python), "info" (build
    and training steps, as the CLI shows) or "debug"."""
    _sieve.set_log_level(level)


class Encoder:
    """A text encoder (an installed model's name, e.g. "all-MiniLM-L6-v2", or any model folder in
    Hugging Face layout; default: default_model_dir()).
    Immutable once loaded: encode() may be called from several threads at once."""

    def __init__(self, impl):
        self._impl = impl

    @classmethod
    def load(cls, path=None, device="cpu", threads=0, max_length=0, precision="fp32", engine="auto"):
        """Loads a model by name or folder (None: the default model) on `device` ("cpu", "cuda",
        "cuda:N") with `threads` compute threads (0: every core). `max_length` caps the tokens of a
        text, special tokens included (0: the model's own cap; at most its positions).
        `precision="int8"` runs a BERT-family model's dense layers in int8 on the CPU (faster; keys
        within about 0.01 in cosine of fp32); `precision="bf16"` in bfloat16 with fp32 sums (fastest
        where the CPU has AMX or AVX-512 BF16; keys within about 1e-5 in cosine). `engine="native"` runs a BERT model's forward pass in
        sieve's own code instead of libtorch's modules (the same states within float rounding),
        `engine="torch"` libtorch's; the default, "auto", is native where it runs, else torch."""
        return cls(_Encoder.load(str(path or ""), device, threads, max_length, precision, engine))

    @property
    def dim(self):
        """Width of keys and token states."""
        return self._impl.dim

    @property
    def max_length(self):
        """Token cap including special tokens."""
        return self._impl.max_length

    @property
    def path(self):
        """The model folder."""
        return self._impl.path

    def encode(self, texts, batch_size=32, normalize=True, output="pooled", show_progress_bar=False):
        """Encodes a string or a list of strings, as sentence-transformers' `encode` does.

        output="pooled": float32 [n, dim] (unit rows when `normalize`, else the raw pooled
        vectors); "tokens": a list of float32 [length, dim] final-layer token states; "both":
        (pooled, tokens). A single string gives the pooled vector [dim]. The arrays are the
        library's own buffers (no copy)."""
        single = isinstance(texts, str)
        progress = _progress_bar("encoding") if show_progress_bar else None
        out = self._impl.encode(_texts(texts), batch_size, normalize, output, progress)
        if single and output == "pooled":
            return out[0]
        return out

    def tokenize(self, texts):
        """[{"ids", "tokens", "offsets"}] per text, with the special tokens."""
        return self._impl.tokenize(_texts(texts))


class Index:
    """A sieve index (`sieve index build`, or Index.build), opened for search. Searches may run
    from several threads; add() makes new documents visible to the searches that start after it."""

    def __init__(self, impl):
        self._impl = impl

    @classmethod
    def build(cls, corpus, out, model=None, *, vector_factory="auto", token_codec="sq8", store_tokens=True,
              batch_size=32, chunk_docs=512, force=False, restart=False, threads=0, precision="fp32", open=True,
              shards=1):
        """Builds an index at `out` and opens it (or returns the build report when open=False).

        `corpus`: a corpus file (BEIR corpus.jsonl, TSV `id<TAB>text[<TAB>title]`, or text with
        one document per line) or any iterable of dicts {"_id", "title", "text"}. `model`: a
        model name or folder (None: the default model). The options are `sieve index build`'s (see its --help);
        `precision="int8"` encodes with the int8 encoder, and the opened index then encodes queries
        with it too.
        `shards` > 1 writes a shard set (a corpus file only; docs/formats.md), which opens and searches
        as one index; `sieve.ray.build` writes the same on a Ray cluster.
        Ctrl-C stops after the chunk being encoded; building again resumes from there."""
        report = _Index.build(corpus, str(out), str(model or ""), vector_factory, token_codec, store_tokens,
                              batch_size, chunk_docs, force, restart, threads, precision, shards)
        if not open:
            return report
        return cls.open(out, model, precision=precision)

    @classmethod
    def open(cls, path, model=None, encoder=True, precision="fp32"):
        """Opens an index folder; `encoder=False` skips loading the model (BM25 search only);
        `precision="int8"` encodes queries and added documents with the int8 encoder."""
        return cls(_Index.open(str(path), str(model or ""), encoder, precision))

    @property
    def path(self):
        return self._impl.path

    def __len__(self):
        """The documents stored and neither deleted nor replaced (expired ones count until a
        compaction removes them)."""
        return len(self._impl)

    def stats(self):
        """{"documents", "dim", "tokens", "model_identity", "vector_factory", "token_codec", "shards"}."""
        return self._impl.stats()

    def search(self, queries, k=10, mode=None, filter=None, with_text=False):
        """Hits per query: [{"rank", "id", "doc", "score", "dense", "bm25", "dense_rank",
        "bm25_rank"}], best first (a single query string gives its hits). `mode`: "dense", "bm25",
        "hybrid" or None (what the index's model recommends). `filter`: only documents whose
        metadata passes (a dict, JSON text or sieve.Filter; docs/filters.md). `with_text`: each
        hit also carries its document's "title", "text", "metadata" and "expires_at" (the last two
        when set), read from the snapshot searched."""
        single = isinstance(queries, str)
        out = self._impl.search(_texts(queries), k, mode or "", _filter_text(filter), with_text)
        return out[0] if single else out

    def search_by_vector(self, vectors, k=10, filter=None, with_text=False):
        """Dense search for query vectors in the model's space (one vector, or float32 [n, dim]),
        each normalised to unit length: hits {"rank", "id", "doc", "score"} (cosines), best first,
        through the index's own graph and filter planner (deleted and expired documents left out;
        `filter` and `with_text` as search). One vector gives its hits, a matrix a list per row.
        For one index, not a shard set."""
        v = _np.asarray(vectors, dtype=_np.float32)
        single = v.ndim == 1
        out = self._impl.search_by_vector(v.reshape(1, -1) if single else v, k, _filter_text(filter), with_text)
        return out[0] if single else out

    def ids(self, filter=None):
        """The ids of the live documents (neither deleted, replaced nor expired) whose metadata
        passes `filter` (None: all), in the order they were added."""
        return self._impl.ids(_filter_text(filter))

    def search_arrays(self, queries, k=10, mode=None):
        """(scores float32 [n, k], ids int64 [n, k]) like FAISS's `search`; missing hits are
        (-inf, -1). The ids are internal document numbers (see `document_id`)."""
        return self._impl.search_arrays(_texts(queries), k, mode or "")

    def add(self, documents, batch_size=32, upsert=False):
        """Appends dicts {"_id", "title", "text"} and optionally "metadata" (a flat dict),
        "expires_at" (RFC 3339 or seconds since 1970) or "ttl_s", all or none; returns the report
        {"added", "replaced", "documents", ...}. Ids must be new unless `upsert` (then a held id's
        document is replaced in the same commit). This object then searches the new snapshot."""
        if isinstance(documents, dict):
            documents = [documents]
        return self._impl.add(documents, batch_size, upsert)

    def upsert(self, documents, batch_size=32):
        """add(documents, upsert=True): new ids are added, held ones replaced (key, BM25 terms,
        token states, text and metadata together), all in one durable commit."""
        return self.add(documents, batch_size, upsert=True)

    def delete(self, ids=None, filter=None, missing_ok=False):
        """Deletes documents by id (a string or a list) or every one whose metadata passes
        `filter`, in one durable commit; returns {"deleted", "missing", "documents"}. An id the
        index does not hold raises sieve.Error with nothing deleted, unless `missing_ok`."""
        if isinstance(ids, str):
            ids = [ids]
        return self._impl.delete(list(ids or []), _filter_text(filter), missing_ok)

    def keys(self, docs=None):
        """The pooled unit keys of all documents, float32 [n, dim], row i for document number i
        (as search_arrays numbers them): for NumPy or FAISS. With `docs` (document numbers, as
        hits' "doc"), only theirs, in that order."""
        return self._impl.keys(None if docs is None else [int(d) for d in docs])

    def document_id(self, doc):
        """The external id of internal document number `doc` (as search_arrays returns)."""
        return self._impl.document_id(int(doc))

    def compact(self):
        """Rewrites the index without its deleted, replaced and expired documents (searches and
        writes go on meanwhile; this object then searches the compacted index); returns
        {"documents_before", "documents", "removed", "bytes_before", "bytes_after", "seconds"}."""
        return self._impl.compact()

    def document(self, id):
        """{"_id", "title", "text"} of an external id, with "metadata" and "expires_at" when it has
        them (KeyError when absent, deleted or expired)."""
        return self._impl.document(id)

    def tokens(self, id):
        """The stored token states of a document, float32 [length, dim] (unit rows)."""
        return self._impl.tokens(id)


class Verifier:
    """A stage-2 verifier with the encoder that makes its token states."""

    def __init__(self, impl):
        self._impl = impl

    @classmethod
    def load(cls, path_or_name="default", model=None, threads=0, gate_mode=None, cross=None):
        """A verifier file, or "F0", "F1", "F2", or "cosine" (the pooled keys' cosine);
        "default": the verifier shipped for `model` (default: the default model), else F1.
        Those names always mean the built-ins: name a file by a path with '/' (./F1) or ending
        in .safetensors. A file made for another model than `model` is refused. "cross:DIR":
        the cross-encoder in folder DIR (sieve train cross-encoder), which scores the texts
        (sigmoid of its logit, as sentence-transformers' CrossEncoder.predict). "cascade:DIR":
        the model's gate, and the cross-encoder in DIR for the pairs within its calibrated band.

        Or the gate by mode, as `sieve search --gate-mode` (leave path_or_name at "default"):
        gate_mode "fast", "accurate", "cascade" or "auto"; `cross` is the cross-encoder folder of
        accurate and cascade (default: MODEL_DIR/cross-encoder)."""
        return cls(_Verifier.load(str(path_or_name), str(model or ""), threads, gate_mode or "", str(cross or "")))

    @property
    def kind(self):
        """"F0".."F4", "mlp", "cosine", "cross" or "cascade"."""
        return self._impl.kind

    @property
    def threshold(self):
        """The calibrated gate threshold, or None."""
        return self._impl.threshold

    def score(self, pairs):
        """float32 [n]: the verifier's score of each (query, candidate) pair."""
        return self._impl.score([(str(q), str(c)) for q, c in pairs])

    def accept(self, pairs, threshold=None):
        """bool [n]: score >= threshold (default: the verifier's calibrated one)."""
        t = self.threshold if threshold is None else threshold
        if t is None:
            raise ValueError("this verifier has no threshold; give one")
        return self.score(pairs) >= t


def search_verified(index, verifier, query, k=10, candidates=100, mode=None, gate=False, rerank=False,
                    threshold=None, filter=None):
    """Stage 1 then stage 2, as `sieve search --verifier` does: the top `candidates` of stage 1
    (`mode` as in Index.search) scored by `verifier`; in stage-1 order unless `rerank` (then by
    the verifier's score), and, with `gate`, those it rejects dropped (the defaults of every face:
    the CLI, the server and the library). Hits: Index.search's keys plus "stage1_rank", "stage1_score",
    "verifier_score" and "accepted". `filter`: as Index.search (stage 2 reads only passing documents)."""
    return _sieve.search_verified(index._impl, verifier._impl, query, k, candidates, mode or "", gate, rerank,
                                  threshold, _filter_text(filter))


_default_verifier = None


def explain(query, candidate, verifier=None, threshold=None):
    """Why `verifier` (default: Verifier.load(), the default model's) accepts or rejects `candidate` for `query`:
    {"query_tokens", "candidate_tokens", "map" (float32 [m, n] token cosine map), "stage1_cosine",
    "verifier", "score", "threshold", "decision", "svg" (the heatmap as SVG text)}."""
    global _default_verifier
    if verifier is None:
        if _default_verifier is None:
            _default_verifier = Verifier.load()
        verifier = _default_verifier
    return _sieve.explain(verifier._impl, query, candidate, threshold)
