"""LlamaIndex's vector store over a local sieve index (needs llama-index-core; `import sieve` does not):

    from llama_index.core import StorageContext, VectorStoreIndex
    from sieve.llama_index import SieveEmbedding, SieveVectorStore
    store = SieveVectorStore("my-index")            # the folder; the index is built on the first add
    index = VectorStoreIndex.from_documents(docs, embed_model=SieveEmbedding(),
                                            storage_context=StorageContext.from_defaults(vector_store=store))
    index.as_retriever(similarity_top_k=4, filters=MetadataFilters(...)).retrieve("who bit the man")
    SieveVectorStore("my-index", gate=True)         # hits sieve's verifier rejects are dropped

Sieve encodes with its own model (`model`: a name or folder, None: the default model): queries are
searched by their text (`VectorStoreQuery.query_str`), and by `query_embedding` (an exact scan of
the keys) only when there is no text. `SieveEmbedding` is LlamaIndex's `BaseEmbedding` over the same
model, for VectorStoreIndex's `embed_model`. Each node is one sieve document: its id the node id,
its text what LlamaIndex embeds (`get_content(MetadataMode.EMBED)`), its metadata the node's own
(flat: strings, numbers, booleans, lists of strings; None values left out) plus LlamaIndex's
`_node_content` (the node as JSON), `_node_type`, `_node_id`, `ref_doc_id`, `doc_id` and
`document_id`. `MetadataFilters` become sieve filters (docs/filters.md)."""
import asyncio
import os
import threading
from typing import Any, Optional

import numpy as _np

from . import Encoder, Filter, Index, _stores, search_verified

try:
    from llama_index.core.base.embeddings.base import BaseEmbedding
    from llama_index.core.bridge.pydantic import PrivateAttr
    from llama_index.core.schema import MetadataMode
    from llama_index.core.vector_stores.types import (BasePydanticVectorStore, FilterCondition, FilterOperator,
                                                      MetadataFilters, VectorStoreQuery, VectorStoreQueryMode,
                                                      VectorStoreQueryResult)
    from llama_index.core.vector_stores.utils import metadata_dict_to_node, node_to_metadata_dict
except ImportError as _e:  # pragma: no cover (the tests run with LlamaIndex installed)
    raise ImportError("sieve.llama_index needs LlamaIndex's core package: pip install llama-index-core") from _e

__all__ = ["SieveEmbedding", "SieveVectorStore", "to_sieve_filter"]


class SieveEmbedding(BaseEmbedding):
    """LlamaIndex `BaseEmbedding` backed by sieve's encoder: unit-length pooled keys, as a sieve
    index of the same model stores them. `model`: a name or folder (None: the default model), or
    give a loaded `sieve.Encoder` as `encoder`. The model loads on first use."""

    model: Optional[str] = None
    _encoder: Any = PrivateAttr(default=None)
    _lock: Any = PrivateAttr(default_factory=threading.Lock)

    def __init__(self, model=None, *, encoder=None, embed_batch_size=32, **kwargs):
        model = None if model is None else os.fspath(model)
        super().__init__(model=model, model_name=model or "sieve-default", embed_batch_size=embed_batch_size,
                         **kwargs)
        self._encoder = encoder

    @classmethod
    def class_name(cls):
        return "SieveEmbedding"

    @property
    def encoder(self):
        """The sieve.Encoder (loaded on first use)."""
        with self._lock:
            if self._encoder is None:
                self._encoder = Encoder.load(self.model)
            return self._encoder

    def _get_query_embedding(self, query):
        return self.encoder.encode(str(query)).tolist()

    def _get_text_embedding(self, text):
        return self.encoder.encode(str(text)).tolist()

    def _get_text_embeddings(self, texts):
        texts = [str(t) for t in texts]
        return self.encoder.encode(texts, batch_size=self.embed_batch_size).tolist() if texts else []

    async def _aget_query_embedding(self, query):
        return await asyncio.to_thread(self._get_query_embedding, query)

    async def _aget_text_embedding(self, text):
        return await asyncio.to_thread(self._get_text_embedding, text)

    async def _aget_text_embeddings(self, texts):
        return await asyncio.to_thread(self._get_text_embeddings, texts)


_OPS = {FilterOperator.EQ: "$eq", FilterOperator.NE: "$ne", FilterOperator.GT: "$gt", FilterOperator.GTE: "$gte",
        FilterOperator.LT: "$lt", FilterOperator.LTE: "$lte", FilterOperator.IN: "$in", FilterOperator.NIN: "$nin",
        FilterOperator.ANY: "$in", FilterOperator.CONTAINS: "$eq"}


def to_sieve_filter(filters):
    """LlamaIndex `MetadataFilters` (nested ones too) as a sieve filter dict (None: no filter).
    EQ NE GT GTE LT LTE IN NIN map to sieve's operators; on a list field (of strings) sieve's EQ
    and IN hold when one element does, so CONTAINS is EQ, ANY is IN and ALL an $and of EQs.
    Conditions AND, OR and NOT (none of them holds). ValueError for anything else."""
    if filters is None:
        return None
    parts = []
    for f in filters.filters:
        if isinstance(f, MetadataFilters):
            sub = to_sieve_filter(f)
            if sub is not None:
                parts.append(sub)
            continue
        op, value = FilterOperator(f.operator), f.value
        if value is None:
            raise ValueError(f"filter on {f.key!r}: sieve cannot compare with None (metadata holds no nulls)")
        takes_list = op in (FilterOperator.IN, FilterOperator.NIN, FilterOperator.ANY, FilterOperator.ALL)
        if (op in _OPS or op == FilterOperator.ALL) and takes_list != isinstance(value, list):
            raise ValueError(f"filter on {f.key!r}: operator {op.name} {'takes' if takes_list else 'does not take'} "
                             "a list")
        if op == FilterOperator.ALL:
            parts.append({"$and": [{f.key: {"$eq": v}} for v in value]} if value else {})
        elif op in _OPS:
            parts.append({f.key: {_OPS[op]: value}})
        else:
            raise ValueError(f"filter on {f.key!r}: sieve's filters have no operator {op.name} ({op.value!r}); "
                             "supported: EQ NE GT GTE LT LTE IN NIN ANY ALL CONTAINS")
    condition = FilterCondition(filters.condition or FilterCondition.AND)
    if not parts:
        return None if condition != FilterCondition.NOT else {}
    if condition == FilterCondition.AND:
        return parts[0] if len(parts) == 1 else {"$and": parts}
    if condition == FilterCondition.OR:
        return parts[0] if len(parts) == 1 else {"$or": parts}
    if condition == FilterCondition.NOT:
        return {"$not": parts[0] if len(parts) == 1 else {"$or": parts}}
    raise ValueError(f"sieve's filters have no condition {condition!r}")


def _and(*specs):
    specs = [s for s in specs if s]
    return None if not specs else specs[0] if len(specs) == 1 else {"$and": specs}


def _node(record):
    """A LlamaIndex node from what Index.document returns."""
    return metadata_dict_to_node(record.get("metadata") or {})


_MODES = {VectorStoreQueryMode.SPARSE: "bm25", VectorStoreQueryMode.TEXT_SEARCH: "bm25",
          VectorStoreQueryMode.HYBRID: "hybrid"}


class SieveVectorStore(_stores.IndexStore, BasePydanticVectorStore):
    """A LlamaIndex vector store over the sieve index in folder `path` (opened when it holds one,
    else built on the first add: an empty store queries to nothing).

    `model`: the model that builds the index and encodes queries (a name or folder; None: the
    default model; an existing index must have been built with it). `mode`: "dense" (cosine
    scores; the default), "bm25" or "hybrid", for queries in VectorStoreQueryMode.DEFAULT (SPARSE
    and TEXT_SEARCH are bm25, HYBRID hybrid). `gate=True`: queries run `sieve.search_verified`
    with the gate, so hits the verifier rejects (e.g. "the man bit the dog" for "the dog bit the
    man") are dropped and fewer than k may come back; `verifier` (a `sieve.Verifier`, or a name
    or file for `Verifier.load`; default: the model's own) and `candidates` (stage 1's depth) as
    there. `query(..., mode=, gate=, candidates=)` (a retriever's `vector_store_kwargs`) override
    them per query. Writes are serialised; queries may run from many threads."""

    stores_text: bool = True
    is_embedding_query: bool = False  # the retriever need not embed queries: sieve searches by text
    flat_metadata: bool = True
    path: str
    model: Optional[str] = None
    mode: str = "dense"
    gate: bool = False
    candidates: int = 100
    batch_size: int = 32
    _index: Any = PrivateAttr(default=None)
    _verifier: Any = PrivateAttr(default=None)
    _lock: Any = PrivateAttr(default_factory=threading.Lock)
    _verifier_lock: Any = PrivateAttr(default_factory=threading.Lock)

    def __init__(self, path, model=None, *, mode="dense", gate=False, verifier=None, candidates=100,
                 batch_size=32, **kwargs):
        model = None if model is None else os.fspath(model)
        super().__init__(path=os.fspath(path), model=model, mode=mode, gate=gate, candidates=candidates,
                         batch_size=batch_size, **kwargs)
        self._verifier = verifier
        if os.path.isfile(os.path.join(self.path, "manifest.json")):
            self._index = Index.open(self.path, model)

    @classmethod
    def class_name(cls):
        return "SieveVectorStore"

    @property
    def client(self):
        """The sieve.Index, or None before the first add built it."""
        return self._index

    # -- writes -----------------------------------------------------------------------------------

    def add(self, nodes, **kwargs):
        """Adds nodes (an id the store holds is replaced); returns their ids. ValueError for
        metadata sieve cannot store (nested objects, lists of non-strings); nothing is written then."""
        batch = {}
        for node in nodes:
            meta = node_to_metadata_dict(node, remove_text=False, flat_metadata=False)
            meta = {k: v for k, v in meta.items() if v is not None}
            meta["_node_id"] = node.node_id
            _stores.flat_metadata(meta, f"node {node.node_id!r}")
            batch.pop(node.node_id, None)  # a repeated id: the last wins
            batch[node.node_id] = {"_id": node.node_id, "text": node.get_content(metadata_mode=MetadataMode.EMBED),
                                   "metadata": meta}
        if batch:
            with self._lock:
                self._index = _stores.write(self._index, self.path, self.model, list(batch.values()), self.batch_size)
        return [node.node_id for node in nodes]

    def delete(self, ref_doc_id, **delete_kwargs):
        """Deletes every node of the document `ref_doc_id` (sieve's delete by filter)."""
        with self._lock:
            if self._index is not None:
                self._index.delete(filter={"ref_doc_id": str(ref_doc_id)}, missing_ok=True)

    def delete_nodes(self, node_ids=None, filters=None, **delete_kwargs):
        """Deletes the nodes of `node_ids` (absent ones ignored) that pass `filters`; with
        neither, nothing."""
        flt = to_sieve_filter(filters)
        if node_ids is None and flt is None:
            return
        with self._lock:
            if self._index is None:
                return
            if node_ids is None:
                self._index.delete(filter=flt, missing_ok=True)
            else:
                ids = [str(i) for i in node_ids]
                if flt is not None:
                    ids = [n.node_id for n in self._get(ids, flt)]
                if ids:
                    self._index.delete(ids=ids, missing_ok=True)

    def clear(self):
        """Deletes every node."""
        with self._lock:
            if self._index is not None:
                ids = self._index.ids()
                if ids:
                    self._index.delete(ids=ids, missing_ok=True)

    # -- reads ------------------------------------------------------------------------------------

    def _get(self, ids, flt):
        """The nodes of `ids` (None: all, in the order added) the store holds whose metadata passes `flt`."""
        if self._index is None:
            return []
        check = None if flt is None or ids is None else Filter(flt)
        out = []
        for id_ in self._index.ids(flt) if ids is None else ids:
            try:
                record = self._index.document(str(id_))
            except KeyError:
                continue
            if check is None or check.matches(record.get("metadata") or {}):
                out.append(_node(record))
        return out

    def get_nodes(self, node_ids=None, filters=None, **kwargs):
        """The nodes of `node_ids` (in that order; absent ones left out; None: every node) that
        pass `filters`."""
        return self._get(None if node_ids is None else list(node_ids), to_sieve_filter(filters))

    def query(self, query, **kwargs):
        """The top `similarity_top_k` nodes for `query.query_str` (sieve's search in the store's
        mode, or bm25/hybrid for SPARSE, TEXT_SEARCH and HYBRID), or, without a query string, for
        `query.query_embedding` (an exact cosine scan). `filters`, `doc_ids` and `node_ids`
        restrict the nodes. `mode`, `gate`, `candidates` as keyword arguments override the store's."""
        k = int(query.similarity_top_k or 0)
        flt = _and(to_sieve_filter(query.filters),
                   {"ref_doc_id": {"$in": [str(i) for i in query.doc_ids]}} if query.doc_ids else None,
                   {"_node_id": {"$in": [str(i) for i in query.node_ids]}} if query.node_ids else None)
        qmode = VectorStoreQueryMode(query.mode or VectorStoreQueryMode.DEFAULT)
        if qmode != VectorStoreQueryMode.DEFAULT and qmode not in _MODES:
            raise ValueError(f"SieveVectorStore has no query mode {qmode.value!r}: "
                             "default (the store's mode), sparse, text_search or hybrid")
        if self._index is None or k <= 0:
            return VectorStoreQueryResult(nodes=[], similarities=[], ids=[])
        if query.query_str:
            pairs = self._by_text(query.query_str, k, flt, _MODES.get(qmode, kwargs.get("mode", self.mode)), kwargs)
        elif query.query_embedding is not None:
            if kwargs.get("gate", self.gate):
                raise ValueError("the gate verifies the query's text: give query_str")
            pairs = self._by_vector(query.query_embedding, k, flt)
        else:
            raise ValueError("a VectorStoreQuery needs query_str or query_embedding")
        return VectorStoreQueryResult(nodes=[n for n, _ in pairs], similarities=[s for _, s in pairs],
                                      ids=[n.node_id for n, _ in pairs])

    def _by_text(self, text, k, flt, mode, kwargs):
        index = self._index
        if kwargs.get("gate", self.gate):
            candidates = max(int(kwargs.get("candidates", self.candidates)), k)
            hits = search_verified(index, self.verifier(), text, k=k, candidates=candidates, mode=mode,
                                   gate=True, filter=flt)
        else:
            hits = index.search(text, k=k, mode=mode, filter=flt)
        out = []
        for h in hits:
            try:
                out.append((_node(index.document(h["id"])), float(h["score"])))
            except KeyError:  # deleted since the search
                pass
        return out

    def _by_vector(self, embedding, k, flt):
        hits = self._index.search_by_vector(embedding, k=k, filter=flt, with_text=True)
        return [(_node(dict(h, _id=h["id"])), float(h["score"])) for h in hits]

    # -- async: the sync calls on a worker thread (sieve releases the GIL in its long calls) ------

    async def async_add(self, nodes, **kwargs):
        return await asyncio.to_thread(self.add, nodes, **kwargs)

    async def adelete(self, ref_doc_id, **delete_kwargs):
        await asyncio.to_thread(self.delete, ref_doc_id, **delete_kwargs)

    async def adelete_nodes(self, node_ids=None, filters=None, **delete_kwargs):
        await asyncio.to_thread(self.delete_nodes, node_ids, filters, **delete_kwargs)

    async def aget_nodes(self, node_ids=None, filters=None, **kwargs):
        return await asyncio.to_thread(self.get_nodes, node_ids, filters)

    async def aclear(self):
        await asyncio.to_thread(self.clear)

    async def aquery(self, query, **kwargs):
        return await asyncio.to_thread(self.query, query, **kwargs)
