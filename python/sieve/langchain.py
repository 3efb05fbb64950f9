"""LangChain's `VectorStore` over a local sieve index (needs langchain-core; `import sieve` does not):

    from sieve.langchain import SieveVectorStore
    store = SieveVectorStore("my-index")            # the folder; the index is built on the first add
    ids = store.add_texts(["the dog bit the man"], metadatas=[{"year": 2024, "tags": ["law"]}])
    store.similarity_search("who bit the man", k=4, filter={"year": {"$gte": 2020}})
    store.as_retriever(search_kwargs={"k": 4})
    SieveVectorStore("my-index", gate=True)         # hits sieve's verifier rejects are dropped

Sieve encodes with its own model (`model`: a name or folder, None: the default model), so the store
takes no LangChain `Embeddings`; `store.embeddings` is a `SieveEmbeddings` over the same model (for
`similarity_search_by_vector` and anything else that wants vectors). Ids are kept as given (uuid4
when absent); adding an id the store holds replaces its document (sieve's upsert). Metadata is
sieve's: a flat object of strings, numbers, booleans and lists of strings (docs/filters.md), and
`filter=` is sieve's filter language ({"year": {"$gte": 2020}, "$or": [...]}); anything else is a
ValueError. Scores are cosines of the model's unit keys (mode "dense", the default)."""
import os
import tempfile
import threading
import uuid

import numpy as _np

from . import Encoder, Filter, Index, _stores, search_verified

try:
    from langchain_core.caches import BaseCache
    from langchain_core.documents import Document
    from langchain_core.load import dumps as _lc_dumps
    from langchain_core.load import loads as _lc_loads
    from langchain_core.embeddings import Embeddings
    from langchain_core.vectorstores import VectorStore
    from langchain_core.vectorstores.utils import maximal_marginal_relevance
except ImportError as _e:  # pragma: no cover (the tests run with LangChain installed)
    raise ImportError("sieve.langchain needs LangChain's core package: pip install langchain-core") from _e

__all__ = ["SieveEmbeddings", "SieveVectorStore", "SieveSemanticCache"]


class SieveEmbeddings(Embeddings):
    """LangChain `Embeddings` backed by sieve's encoder: unit-length pooled keys, as a sieve index
    of the same model stores them. `model`: a name or folder (None: the default model), or give a
    loaded `sieve.Encoder` as `encoder`. The model loads on first use."""

    def __init__(self, model=None, *, encoder=None, batch_size=32):
        self.model = model
        self.batch_size = batch_size
        self._encoder = encoder
        self._lock = threading.Lock()

    @property
    def encoder(self):
        """The sieve.Encoder (loaded on first use)."""
        with self._lock:
            if self._encoder is None:
                self._encoder = Encoder.load(self.model)
            return self._encoder

    def embed_documents(self, texts):
        texts = list(texts)
        if not texts:
            return []
        return self.encoder.encode(texts, batch_size=self.batch_size).tolist()

    def embed_query(self, text):
        return self.encoder.encode(str(text)).tolist()


def _doc(record):
    """A LangChain Document from what Index.document returns."""
    return Document(id=record["_id"], page_content=record["text"], metadata=dict(record.get("metadata") or {}))


class SieveVectorStore(_stores.IndexStore, VectorStore):
    """A LangChain vector store over the sieve index in folder `path` (opened when it holds one,
    else built on the first add: an empty store searches to []).

    `model`: the model that builds the index and encodes queries (a name or folder; None: the
    default model; an existing index must have been built with it). `mode`: "dense" (cosine
    scores; the default), "bm25" or "hybrid", as `sieve.Index.search`. `gate=True`: searches run
    `sieve.search_verified` with the gate, so hits the verifier rejects (e.g. "the man bit the dog"
    for "the dog bit the man") are dropped, and fewer than k may come back; `verifier` (a
    `sieve.Verifier`, or a name or file for `Verifier.load`; default: the model's own) and
    `candidates` (stage 1's depth) as there. Each search may override `mode`, `gate` and
    `candidates` as keyword arguments. Writes are serialised; searches may run from many threads."""

    def __init__(self, path, model=None, *, mode="dense", gate=False, verifier=None, candidates=100,
                 embedding=None, batch_size=32):
        if embedding is not None and not isinstance(embedding, SieveEmbeddings):
            raise ValueError("SieveVectorStore encodes with sieve's own model and cannot use "
                             f"{type(embedding).__name__}: leave `embedding` out, or give a SieveEmbeddings")
        if embedding is not None and model is None:
            model = embedding.model
        self.path = os.fspath(path)
        self.model = model
        self.mode = mode
        self.gate = gate
        self.candidates = candidates
        self.batch_size = batch_size
        self._verifier = verifier
        self._embedding = embedding or SieveEmbeddings(model)
        self._lock = threading.Lock()  # writes
        self._verifier_lock = threading.Lock()
        self._index = None
        if os.path.isfile(os.path.join(self.path, "manifest.json")):
            self._index = Index.open(self.path, model)

    # -- the store --------------------------------------------------------------------------------

    @property
    def embeddings(self):
        return self._embedding

    # -- writes -----------------------------------------------------------------------------------

    def add_texts(self, texts, metadatas=None, *, ids=None, **kwargs):
        """Adds texts with their metadata and ids (uuid4 where an id is None or empty); an id the
        store holds is replaced. Returns the ids. ValueError for metadata sieve cannot store
        (nested objects, null, lists of non-strings) or mismatched lengths; nothing is written then."""
        texts = [str(t) for t in texts]
        if metadatas is not None and len(metadatas) != len(texts):
            raise ValueError(f"{len(metadatas)} metadatas for {len(texts)} texts")
        if ids is not None and len(ids) != len(texts):
            raise ValueError(f"{len(ids)} ids for {len(texts)} texts")
        ids = [str(uuid.uuid4()) if i is None or i == "" else str(i) for i in (ids or [None] * len(texts))]
        batch = {}  # by id: the last of a repeated id wins, as if added one after the other
        for n, (id_, text) in enumerate(zip(ids, texts)):
            metadata = dict(metadatas[n] or {}) if metadatas is not None else {}
            _stores.flat_metadata(metadata, f"document {id_!r}")
            batch.pop(id_, None)
            batch[id_] = {"_id": id_, "text": text, "metadata": metadata}
        if batch:
            with self._lock:
                self._index = _stores.write(self._index, self.path, self.model, list(batch.values()), self.batch_size)
        return ids

    def delete(self, ids=None, **kwargs):
        """Deletes documents by id (ids it does not hold are ignored), or with `filter=` every
        document whose metadata passes (not both), or, with neither, every document (LangChain's
        contract for ids=None). Returns True."""
        flt = kwargs.get("filter")
        with self._lock:
            index = self._index
            if index is None:
                return True
            if ids is None and flt is None:
                ids = index.ids()
            if ids or flt is not None:
                index.delete(ids=[str(i) for i in ids or []], filter=flt, missing_ok=True)
        return True

    def get_by_ids(self, ids, /):
        """The documents of the ids the store holds, in the order asked (absent ids left out)."""
        out = []
        index = self._index
        if index is None:
            return out
        for id_ in ids:
            try:
                out.append(_doc(index.document(str(id_))))
            except KeyError:
                pass
        return out

    # -- searches ---------------------------------------------------------------------------------

    def _hits(self, query, k, flt, kwargs):
        index = self._index
        if index is None or k <= 0:
            return []
        mode = kwargs.get("mode", self.mode)
        if kwargs.get("gate", self.gate):
            candidates = max(int(kwargs.get("candidates", self.candidates)), k)
            return search_verified(index, self.verifier(), query, k=k, candidates=candidates, mode=mode,
                                   gate=True, filter=flt)
        return index.search(query, k=k, mode=mode, filter=flt)

    def _resolve(self, hits, score="score"):
        """(Document, score) of hits, skipping any deleted since the search."""
        out = []
        for h in hits:
            try:
                out.append((_doc(self._index.document(h["id"])), float(h[score])))
            except KeyError:
                pass
        return out

    def similarity_search_with_score(self, query, k=4, filter=None, **kwargs):
        """(Document, score) best first: with mode "dense" the cosine of the query's key and the
        document's (1 for the same text). `filter`: sieve's filter (a dict, JSON text or sieve.Filter).
        Keyword arguments `mode`, `gate` and `candidates` override the store's."""
        return self._resolve(self._hits(str(query), int(k), filter, kwargs))

    def similarity_search(self, query, k=4, filter=None, **kwargs):
        return [d for d, _ in self.similarity_search_with_score(query, k, filter, **kwargs)]

    def _select_relevance_score_fn(self):
        if self.mode != "dense":
            raise NotImplementedError(f"relevance scores need mode='dense' (cosines), not {self.mode!r}")
        return lambda cosine: (1.0 + cosine) / 2.0

    def similarity_search_with_score_by_vector(self, embedding, k=4, filter=None, **kwargs):
        """(Document, cosine) nearest to a vector in the model's space (store.embeddings makes
        them), through the index's dense search (Index.search_by_vector). `filter` as
        similarity_search. No gate: the verifier reads the query's text."""
        index = self._index
        if index is None or k <= 0:
            return []
        if kwargs.get("gate", self.gate):
            raise ValueError("the gate verifies the query's text: search by text (similarity_search)")
        hits = index.search_by_vector(embedding, k=k, filter=filter, with_text=True)
        return [(_doc(dict(h, _id=h["id"])), float(h["score"])) for h in hits]

    def similarity_search_by_vector(self, embedding, k=4, filter=None, **kwargs):
        return [d for d, _ in self.similarity_search_with_score_by_vector(embedding, k, filter, **kwargs)]

    def max_marginal_relevance_search(self, query, k=4, fetch_k=20, lambda_mult=0.5, filter=None, **kwargs):
        """k of the fetch_k best hits, chosen by maximal marginal relevance over their keys."""
        hits = self._hits(str(query), int(max(fetch_k, k)), filter, kwargs)
        if not hits:
            return []
        keys = self._index.keys([h["doc"] for h in hits])
        q = _np.asarray(self._embedding.embed_query(query), dtype=_np.float32)
        chosen = maximal_marginal_relevance(q, keys, lambda_mult=lambda_mult, k=k)
        return [d for d, _ in self._resolve([hits[i] for i in chosen])]

    @classmethod
    def from_texts(cls, texts, embedding=None, metadatas=None, *, ids=None, path=None, **kwargs):
        """A store built from texts at `path` (default: a new temporary folder, left in place).
        `embedding`: None or a SieveEmbeddings (its model); other keyword arguments as __init__."""
        if path is None:
            path = os.path.join(tempfile.mkdtemp(prefix="sieve-langchain-"), "index")
        store = cls(path, embedding=embedding, **kwargs)
        store.add_texts(texts, metadatas, ids=ids)
        return store


class SieveSemanticCache(BaseCache):
    """LangChain's LLM cache over sieve.Cache (docs/cache.md): a prompt is served the generations
    stored for an earlier prompt that the identity gate accepts as the same question, never merely
    the nearest one, and only for the same LLM configuration (`llm_string` is the entry's scope).

        from langchain_core.globals import set_llm_cache
        set_llm_cache(SieveSemanticCache("llm-cache"))

    `path`: the cache's folder; `model`, `verifier`, `threshold`, `candidates`: as sieve.Cache's;
    `ttl_s`: each entry's lifetime (None: kept until cleared)."""

    def __init__(self, path, model=None, *, verifier="default", threshold=None, candidates=8, ttl_s=None):
        from .cache import Cache
        self.ttl_s = ttl_s
        self._cache = Cache(path, model, verifier=verifier, threshold=threshold, candidates=candidates)

    @staticmethod
    def _scope(llm_string):
        import hashlib
        return {"model": hashlib.sha256(llm_string.encode("utf-8")).hexdigest()}

    def lookup(self, prompt, llm_string):
        hit = self._cache.lookup(prompt, self._scope(llm_string))
        if hit is None:
            return None
        import json
        return [_lc_loads(g) for g in json.loads(hit["answer"])]

    def update(self, prompt, llm_string, return_val):
        import json
        self._cache.store(prompt, json.dumps([_lc_dumps(g) for g in return_val]), self._scope(llm_string), self.ttl_s)

    def clear(self, **kwargs):
        self._cache.clear()
