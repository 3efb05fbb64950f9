"""sieve.llama_index.SieveVectorStore through LlamaIndex's own machinery (ctest contract.llama_index,
build/rag-venv). llama-index-core ships no conformance suite for vector stores (no integration_tests
module nor base test class in 0.14.25), so the oracles are LlamaIndex's own pieces:

- VectorStoreIndex.from_documents over the store with SieveEmbedding, then as_retriever().retrieve:
  the ids and order sieve.Index.search(q, mode="dense") gives on the same folder, and the ids, order
  and scores (within 1e-5) of LlamaIndex's SimpleVectorStore over the same nodes and embeddings;
- MetadataFilters (EQ NE GT GTE LT LTE IN NIN ANY ALL CONTAINS, AND/OR/NOT, nested): the same set
  as a brute-force evaluation, and the same ranking as SimpleVectorStore's own filters where it has
  them (it has no nested filters);
- query_embedding without query_str (the key scan), bm25 for the sparse mode, delete(ref_doc_id)
  through index.delete_ref_doc, delete_nodes, get_nodes, clear, the gate, the async paths,
  metadata sieve cannot store, and `import sieve` without LlamaIndex.
Skipped without llama-index-core, except under CI=true, where that fails (tests/support/oracles.py)."""
import asyncio
import os
import random
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from oracles import oracle  # noqa: E402  (pytest.importorskip, but a failure under CI=true)

oracle("llama_index.core")

import sieve  # noqa: E402
from llama_index.core import Document, MockEmbedding, StorageContext, VectorStoreIndex  # noqa: E402
from llama_index.core.llms import MockLLM  # noqa: E402
from llama_index.core.node_parser import SentenceSplitter  # noqa: E402
from llama_index.core.schema import TextNode  # noqa: E402
from llama_index.core.vector_stores import SimpleVectorStore  # noqa: E402
from llama_index.core.vector_stores.types import (FilterCondition, MetadataFilter, MetadataFilters,  # noqa: E402
                                                  VectorStoreQuery)

from sieve.llama_index import SieveEmbedding, SieveVectorStore, to_sieve_filter  # noqa: E402

WORDS = "court ruling appeal contract tenant landlord river flood bridge vote senate budget".split()
QUERIES = ["court ruling on the flood", "the senate budget vote", "a landlord and a tenant", "bridge over the river"]


def splitter():
    """One node per short document, with ids fixed by the document (so two indexes share them)."""
    return SentenceSplitter(chunk_size=512, chunk_overlap=0, id_func=lambda i, doc: f"{doc.doc_id}-n{i}")


def make_docs():
    rng = random.Random(59)
    docs, seen = [], set()
    while len(docs) < 40:
        text = " ".join(rng.choice(WORDS) for _ in range(8))
        if text in seen:
            continue
        seen.add(text)
        meta = {"year": rng.randint(2016, 2024), "lang": rng.choice(["en", "de", "fr"]),
                "tags": rng.sample(["law", "eu", "us", "tax"], rng.randint(0, 2)), "draft": rng.random() < 0.3}
        if rng.random() < 0.7:
            meta["score"] = round(rng.random(), 3)
        docs.append(Document(text=text, metadata=meta, id_=f"d{len(docs)}"))
    return docs


@pytest.fixture(scope="module")
def embed():
    return SieveEmbedding()


@pytest.fixture(scope="module")
def filled(tmp_path_factory, embed):
    docs = make_docs()
    path = tmp_path_factory.mktemp("li") / "index"
    store = SieveVectorStore(path)
    index = VectorStoreIndex.from_documents(docs, storage_context=StorageContext.from_defaults(vector_store=store),
                                            embed_model=embed, transformations=[splitter()])
    simple = VectorStoreIndex.from_documents(
        docs, storage_context=StorageContext.from_defaults(vector_store=SimpleVectorStore()),
        embed_model=embed, transformations=[splitter()])
    return store, index, simple, {d.doc_id: d for d in docs}, path


def ranked(nodes):
    return [n.node.node_id for n in nodes], [n.score for n in nodes]


@pytest.mark.parametrize("k", [5, 40])
def test_retriever_equals_sieve_search_and_simple_vector_store(filled, k):
    store, index, simple, docs, path = filled
    direct = sieve.Index.open(path)
    for q in QUERIES:
        ids, scores = ranked(index.as_retriever(similarity_top_k=k).retrieve(q))
        hits = direct.search(q, k=k, mode="dense")
        assert ids == [h["id"] for h in hits] and len(ids) == k
        assert scores == pytest.approx([h["score"] for h in hits], abs=1e-6)
        want_ids, want_scores = ranked(simple.as_retriever(similarity_top_k=k).retrieve(q))
        assert ids == want_ids
        assert scores == pytest.approx(want_scores, abs=1e-5)
    engine = index.as_query_engine(llm=MockLLM(), similarity_top_k=5)  # the query engine's sources: the same
    assert ranked(engine.query(QUERIES[1]).source_nodes) == ranked(index.as_retriever(similarity_top_k=5).retrieve(
        QUERIES[1]))
    got = index.as_retriever(similarity_top_k=3).retrieve(QUERIES[0])[0].node
    doc = docs[got.ref_doc_id]
    assert got.text == doc.text and got.metadata == doc.metadata and got.node_id == f"{doc.doc_id}-n0"


def test_query_embedding_without_text(filled, embed):
    store, *_ = filled
    for q in QUERIES[:2]:
        by_text = store.query(VectorStoreQuery(query_str=q, similarity_top_k=10))
        by_vector = store.query(VectorStoreQuery(query_embedding=embed.get_query_embedding(q), similarity_top_k=10))
        assert by_vector.ids == by_text.ids
        assert by_vector.similarities == pytest.approx(by_text.similarities, abs=1e-5)
        assert [n.node_id for n in by_vector.nodes] == by_vector.ids
    by_doc = store.query(VectorStoreQuery(query_str=QUERIES[0], similarity_top_k=10, doc_ids=["d3", "d7", "d9"]))
    assert sorted(by_doc.ids) == ["d3-n0", "d7-n0", "d9-n0"]
    by_node = store.query(VectorStoreQuery(query_embedding=embed.get_query_embedding(QUERIES[0]), similarity_top_k=10,
                                           node_ids=["d1-n0", "d2-n0"], filters=F(dict(key="year", value=3000))))
    assert by_node.ids == []
    by_node = store.query(VectorStoreQuery(query_str=QUERIES[0], similarity_top_k=1, node_ids=["d1-n0", "d2-n0"]))
    assert by_node.ids[0] in ("d1-n0", "d2-n0") and len(by_node.ids) == 1


def test_sparse_mode_is_bm25(filled):
    store, index, _, _, path = filled
    got = index.as_retriever(similarity_top_k=5, vector_store_query_mode="sparse").retrieve("senate budget")
    assert [n.node.node_id for n in got] == [h["id"] for h in sieve.Index.open(path).search(
        "senate budget", k=5, mode="bm25")]


# -- filters ---------------------------------------------------------------------------------------

def holds(filters, meta):
    """LlamaIndex's semantics of MetadataFilters (build_metadata_filter_fn's, with nesting), over the
    fields used here: a missing field passes only NE and NIN."""
    results = []
    for f in filters.filters:
        if isinstance(f, MetadataFilters):
            results.append(holds(f, meta))
            continue
        v, op, arg = meta.get(f.key), f.operator.value, f.value
        if v is None:
            results.append(op in ("!=", "nin"))
            continue
        results.append({"==": lambda: v == arg, "!=": lambda: v != arg, ">": lambda: v > arg,
                        ">=": lambda: v >= arg, "<": lambda: v < arg, "<=": lambda: v <= arg,
                        "in": lambda: v in arg, "nin": lambda: v not in arg, "contains": lambda: arg in v,
                        "any": lambda: any(a in v for a in arg), "all": lambda: all(a in v for a in arg)}[op]())
    cond = filters.condition or FilterCondition.AND
    return all(results) if cond == FilterCondition.AND else any(results) if cond == FilterCondition.OR \
        else not any(results)


def F(*filters, condition="and"):
    return MetadataFilters(filters=[f if isinstance(f, MetadataFilters) else MetadataFilter(**f) for f in filters],
                           condition=condition)


FLAT = [
    F(dict(key="year", value=2020)),
    F(dict(key="year", value=2019, operator=">="), dict(key="year", value=2022, operator="<")),
    F(dict(key="year", value=2018, operator=">"), dict(key="year", value=2023, operator="<=")),
    F(dict(key="lang", value=["en", "fr"], operator="in")),
    F(dict(key="lang", value="en", operator="!=")),
    F(dict(key="lang", value=["en", "de"], operator="nin")),
    F(dict(key="tags", value="law", operator="contains")),
    F(dict(key="tags", value=["eu", "us"], operator="any")),
    F(dict(key="tags", value=["law", "tax"], operator="all")),
    F(dict(key="score", value=0.5, operator=">")),
    F(dict(key="score", value=0.5, operator="!=")),
    F(dict(key="lang", value="de"), dict(key="year", value=2018, operator="<="), condition="or"),
    F(dict(key="lang", value="en"), dict(key="year", value=2020, operator=">"), condition="not"),
    F(dict(key="year", value=1999)),
]
NESTED = [
    F(F(dict(key="lang", value="de"), dict(key="year", value=2018, operator="<="), condition="or"),
      dict(key="score", value=0.2, operator=">=")),
    F(F(dict(key="tags", value="eu", operator="contains"), dict(key="lang", value="fr")),
      F(dict(key="year", value=2024), condition="not"), condition="or"),
]


@pytest.mark.parametrize("filters", FLAT + NESTED, ids=[f"f{i}" for i in range(len(FLAT + NESTED))])
def test_filters_equal_brute_force(filled, filters):
    store, index, simple, docs, _ = filled
    want = {i for i, d in docs.items() if holds(filters, d.metadata)}
    got = index.as_retriever(similarity_top_k=len(docs), filters=filters).retrieve(QUERIES[0])
    assert {n.node.ref_doc_id for n in got} == want
    assert {n.ref_doc_id for n in store.get_nodes(filters=filters)} == want
    if filters in FLAT:  # SimpleVectorStore filters too (not nested ones): the same ranking
        plain = simple.as_retriever(similarity_top_k=len(docs), filters=filters).retrieve(QUERIES[0])
        assert [n.node.node_id for n in got] == [n.node.node_id for n in plain]


def test_filters_sieve_cannot_translate():
    for op in ("text_match", "text_match_insensitive", "is_empty"):
        with pytest.raises(ValueError, match="no operator"):
            to_sieve_filter(F(dict(key="lang", value="en", operator=op)))
    for op in ("in", "all"):
        with pytest.raises(ValueError, match="takes a list"):
            to_sieve_filter(F(dict(key="lang", value="en", operator=op)))
    assert to_sieve_filter(F(dict(key="a", value=1), F(dict(key="b", value=["x"], operator="nin")),
                             condition="or")) == {"$or": [{"a": {"$eq": 1}}, {"b": {"$nin": ["x"]}}]}
    assert to_sieve_filter(MetadataFilters(filters=[])) is None


# -- writes ----------------------------------------------------------------------------------------

def test_delete_ref_doc_and_nodes(tmp_path, embed):
    long = Document(text=" ".join(f"Sentence {i} is about the {WORDS[i % 12]}." for i in range(40)), id_="long",
                    metadata={"kind": "long"})
    short = [Document(text=f"the {w} report", id_=f"s{i}", metadata={"kind": "short", "n": i})
             for i, w in enumerate(WORDS[:5])]
    store = SieveVectorStore(tmp_path / "index")
    assert store.query(VectorStoreQuery(query_str="river", similarity_top_k=3)).ids == [] and store.get_nodes() == []
    index = VectorStoreIndex.from_documents(
        [long] + short, storage_context=StorageContext.from_defaults(vector_store=store), embed_model=embed,
        transformations=[SentenceSplitter(chunk_size=40, chunk_overlap=0)])
    long_ids = [n.node_id for n in store.get_nodes() if n.ref_doc_id == "long"]
    assert len(long_ids) > 2 and len(store.get_nodes()) == len(long_ids) + 5
    index.delete_ref_doc("long")  # the store's delete(ref_doc_id)
    assert {n.ref_doc_id for n in store.get_nodes()} == {f"s{i}" for i in range(5)}
    assert "long" not in {n.node.ref_doc_id for n in index.as_retriever(similarity_top_k=20).retrieve("sentence river")}
    assert {n.ref_doc_id for n in SieveVectorStore(tmp_path / "index").get_nodes()} == {f"s{i}" for i in range(5)}

    s_ids = {n.ref_doc_id: n.node_id for n in store.get_nodes()}
    got = store.get_nodes(node_ids=[s_ids["s3"], "absent", s_ids["s1"]])
    assert [n.ref_doc_id for n in got] == ["s3", "s1"]
    store.delete_nodes(node_ids=[s_ids["s0"], "absent"])
    store.delete_nodes(filters=F(dict(key="n", value=3, operator=">=")))  # s3, s4
    store.delete_nodes(node_ids=[s_ids["s1"], s_ids["s2"]], filters=F(dict(key="n", value=2)))  # s2 only
    assert [n.ref_doc_id for n in store.get_nodes()] == ["s1"]
    store.clear()
    assert store.get_nodes() == [] and store.query(VectorStoreQuery(query_str="report", similarity_top_k=3)).ids == []
    store.add([TextNode(text="after the clear", id_="again")])
    assert store.query(VectorStoreQuery(query_str="report", similarity_top_k=3)).ids == ["again"]


def test_metadata_sieve_cannot_store(tmp_path):
    store = SieveVectorStore(tmp_path / "index")
    for bad in ({"source": {"page": 3}}, {"pages": [1, 2]}):
        with pytest.raises(ValueError, match="flat object"):
            store.add([TextNode(text="fine", id_="a"), TextNode(text="bad", id_="b", metadata=bad)])
    assert store.client is None
    store.add([TextNode(text="a null is left out", id_="c", metadata={"page": None, "n": 1})])
    (node,) = store.get_nodes(node_ids=["c"])
    assert node.metadata == {"page": None, "n": 1}  # the node itself round-trips
    assert "page" not in store.client.document("c")["metadata"]


TWINS = ["the dog bit the man", "the man bit the dog", "the dog never bit the man", "the dog did not bite the man"]


def test_gate_rejects_structural_twins(tmp_path, embed):
    nodes = [TextNode(text=t, id_=f"t{i}") for i, t in enumerate(TWINS)]
    plain = SieveVectorStore(tmp_path / "index")
    plain.add(nodes)
    index = VectorStoreIndex.from_vector_store(plain, embed_model=embed)
    ungated = index.as_retriever(similarity_top_k=4).retrieve("the dog bit the man")
    assert ungated[0].node.text == TWINS[0] and {n.node.text for n in ungated} == set(TWINS)
    gated = VectorStoreIndex.from_vector_store(SieveVectorStore(tmp_path / "index", gate=True), embed_model=embed)
    assert [n.node.text for n in gated.as_retriever(similarity_top_k=4).retrieve("the dog bit the man")] == [TWINS[0]]
    per_query = index.as_retriever(similarity_top_k=4, vector_store_kwargs={"gate": True})
    assert [n.node.text for n in per_query.retrieve("the dog bit the man")] == [TWINS[0]]


def test_async(tmp_path, embed):
    store = SieveVectorStore(tmp_path / "index")
    index = VectorStoreIndex.from_documents(  # use_async: the nodes go in through async_add
        [Document(text=t, id_=f"t{i}") for i, t in enumerate(TWINS[2:] + ["a river flooded the town"])],
        storage_context=StorageContext.from_defaults(vector_store=store), embed_model=embed, use_async=True,
        transformations=[splitter()])

    async def run():
        assert await store.async_add([TextNode(text="the senate passed the budget", id_="senate")]) == ["senate"]
        res = await store.aquery(VectorStoreQuery(query_str="the senate passed the budget", similarity_top_k=2))
        assert res.ids[0] == "senate" and res.similarities[0] == pytest.approx(1.0, abs=1e-4)
        got = await index.as_retriever(similarity_top_k=1).aretrieve("the river flooded")
        assert got[0].node.ref_doc_id == "t2"
        await store.adelete("t2")
        await store.adelete_nodes(node_ids=["senate"])
        assert {n.ref_doc_id for n in await store.aget_nodes()} == {"t0", "t1"}
        await store.aclear()
        assert await store.aget_nodes() == []
    asyncio.run(run())


def test_ingestion_without_a_second_encoding(tmp_path):
    """The store encodes with sieve's model and queries by text, so LlamaIndex's own embedding pass
    may be skipped with a mock embed_model (the nodes are then encoded once)."""
    store = SieveVectorStore(tmp_path / "index")
    index = VectorStoreIndex.from_documents(
        [Document(text="the river flooded the town", id_="r"), Document(text="the senate passed the budget", id_="s")],
        storage_context=StorageContext.from_defaults(vector_store=store), embed_model=MockEmbedding(embed_dim=1))
    assert [n.node.ref_doc_id for n in index.as_retriever(similarity_top_k=2).retrieve("budget vote")] == ["s", "r"]


def test_import_sieve_without_llama_index():
    code = ("import sys; sys.modules['llama_index'] = None; sys.modules['llama_index.core'] = None\n"
            "import sieve; sieve.Filter({'a': 1})\n"
            "try:\n    import sieve.llama_index\nexcept ImportError as e:\n    print('ImportError:', e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "pip install llama-index-core" in out.stdout
