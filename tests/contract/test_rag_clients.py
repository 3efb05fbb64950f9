"""LangChain's and LlamaIndex's Text Embeddings Inference integrations, unmodified, pointed at
`sieve serve`'s URL (tests/contract, ctest contract.rag, build/rag-venv from
tests/contract/rag-requirements.txt): a small retrieval-augmented pipeline over SciFact in each
framework, with the framework's own in-memory vector store, must retrieve what `sieve search
--mode dense` retrieves from a sieve index of the same documents.

- LangChain: `langchain_huggingface.HuggingFaceEndpointEmbeddings` (huggingface_hub's
  `InferenceClient.feature_extraction` on the server's base URL, i.e. TEI's POST /, which sieve
  serves as /embed) under `InMemoryVectorStore`, its
  retriever in a runnable chain that builds the prompt. The package is pinned to 1.2.1: from 1.2.2
  on it refuses a URL as `model` (only Hub repo ids; langchain-ai/docs#4364). LangChain has no TEI
  reranker (langchain-community's compressors speak Jina, Infinity, FlashRank, ... instead).
- LlamaIndex: `TextEmbeddingsInference` (POST /embed) under `VectorStoreIndex` (its simple
  in-memory store), then `TextEmbeddingInference` from llama-index-postprocessor-tei-rerank
  (POST /rerank) as the query engine's node postprocessor.

Sieve's /rerank scores a (query, text) pair with the server's stage-2 relevance verifier: with no
`--verifier`, F1 (MaxSim over the two texts' token states), mapped from [-1, 1] onto [0, 1] as
(score + 1) / 2 (docs/server.md). The reranked nodes must carry exactly what POST /rerank answers
for the same query and texts (up to 1e-6), in its order.

The index's keys and the server's are encoded in other batches, so cosines may differ in the last
bits: two hits may swap only where sieve's scores differ by less than 1e-5 (TIE).
Skipped when a framework is not installed or ../shared/data (SciFact) is absent."""
import csv
import json
import os
import subprocess
import sys
import urllib.request

import pytest
from conftest import sieve_serve

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from oracles import oracle  # noqa: E402  (pytest.importorskip, but a failure under CI=true)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("SIEVE_BUILD_DIR", "build")
CLI = os.environ.get("SIEVE_CLI") or os.path.join(BUILD, "sieve")
DATA = os.environ.get("SIEVE_SHARED_DATA") or os.path.join(ROOT, "..", "shared", "data")
SCIFACT = os.path.join(DATA, "retrieval", "scifact")
DOCS = 220  # the corpus' first documents
QUERIES = 10  # SciFact test queries with a relevant document among them
K = 10
TIE = 1e-5


def encoder_text(doc):
    """What sieve encodes for a BEIR document (index_builder.cpp: title, a space, text)."""
    return f"{doc['title']} {doc['text']}" if doc["title"] else doc["text"]


@pytest.fixture(scope="module")
def langchain_hf():
    oracle("langchain_core")
    return oracle("langchain_huggingface")


@pytest.fixture(scope="module")
def llamaindex():
    oracle("llama_index.core")
    return (oracle("llama_index.embeddings.text_embeddings_inference"),
            oracle("llama_index.postprocessor.tei_rerank"))


@pytest.fixture(scope="module")
def scifact(tmp_path_factory):
    if not os.path.isfile(os.path.join(SCIFACT, "corpus.jsonl")):
        pytest.skip(f"SciFact is absent ({SCIFACT})")  # shared data, not an oracle: skipped cleanly
    tmp = tmp_path_factory.mktemp("rag")
    with open(os.path.join(SCIFACT, "corpus.jsonl")) as f:
        docs = [json.loads(next(f)) for _ in range(DOCS)]
    ids = {d["_id"] for d in docs}
    with open(os.path.join(SCIFACT, "qrels", "test.tsv")) as f:
        relevant = {r["query-id"] for r in csv.DictReader(f, delimiter="\t") if r["corpus-id"] in ids}
    with open(os.path.join(SCIFACT, "queries.jsonl")) as f:
        queries = [q for q in map(json.loads, f) if q["_id"] in relevant]
    queries = sorted(queries, key=lambda q: int(q["_id"]))[:QUERIES]
    assert len(queries) == QUERIES
    corpus, qfile, index = tmp / "corpus.jsonl", tmp / "queries.jsonl", tmp / "index"
    corpus.write_text("".join(json.dumps(d) + "\n" for d in docs))
    qfile.write_text("".join(json.dumps(q) + "\n" for q in queries))
    subprocess.run([CLI, "index", "build", "-c", str(corpus), "-o", str(index), "--no-tokens"],
                   check=True, capture_output=True)
    # sieve search's hits, a few past K to have the scores of hits that tie across the K-th place
    out = subprocess.run([CLI, "search", "--index", str(index), "--mode", "dense", "-k", str(K + 5),
                          "--queries", str(qfile)], check=True, capture_output=True, text=True).stdout
    want = {}
    for line in out.splitlines():
        r = json.loads(line)
        want[r["query_id"]] = [(h["id"], h["score"]) for h in r["hits"]]
    return {"docs": docs, "queries": queries, "index": str(index), "want": want, "tmp": tmp}


@pytest.fixture(scope="module")
def server(scifact):
    with sieve_serve(CLI, ["--index", scifact["index"]], scifact["tmp"] / "serve.log") as url:
        yield url


def post(url, body):
    req = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as r:
        return json.loads(r.read())


def assert_same_hits(got, want, qid):
    """`got` (ids, best first) is sieve's top K up to swaps of ulp-level ties: at each rank, the hit
    taken has sieve's score for that rank within TIE."""
    score = dict(want)
    assert len(got) == K and len(set(got)) == K, (qid, got)
    for rank, doc in enumerate(got):
        assert doc in score, (qid, rank, doc, want)
        assert abs(score[doc] - want[rank][1]) < TIE, (qid, rank, got, want)


def assert_scores(scores, want, qid):
    """The frameworks' own cosines are sieve's dense scores (printed as floats by the CLI)."""
    score = dict(want)
    for doc, s in scores:
        assert abs(s - score[doc]) < TIE, (qid, doc, s, score[doc])


def test_langchain_huggingface_endpoint_embeddings_rag(langchain_hf, server, scifact):
    from langchain_core.documents import Document
    from langchain_core.prompts import ChatPromptTemplate
    from langchain_core.runnables import RunnableLambda, RunnableParallel, RunnablePassthrough
    from langchain_core.vectorstores import InMemoryVectorStore

    # TEI's documented form: the server's base URL as the model, which posts to TEI's root route
    # (POST /, an alias of /embed). Long abstracts need TEI's "truncate" (without it TEI, and
    # sieve, refuse them).
    embeddings = langchain_hf.HuggingFaceEndpointEmbeddings(model=server, model_kwargs={"truncate": True})
    store = InMemoryVectorStore(embeddings)
    docs = scifact["docs"]
    store.add_documents([Document(page_content=encoder_text(d), id=d["_id"]) for d in docs],
                        ids=[d["_id"] for d in docs])
    by_id = {d["_id"]: encoder_text(d) for d in docs}
    retriever = store.as_retriever(search_kwargs={"k": K})
    prompt = ChatPromptTemplate.from_template("Answer from the context.\n\n{context}\n\nClaim: {question}")
    chain = RunnableParallel(docs=retriever, question=RunnablePassthrough()) | RunnableLambda(
        lambda x: {"ids": [d.id for d in x["docs"]],
                   "prompt": prompt.invoke({"context": "\n\n".join(d.page_content for d in x["docs"]),
                                            "question": x["question"]})})
    for q in scifact["queries"]:
        want = scifact["want"][q["_id"]]
        out = chain.invoke(q["text"])
        assert_same_hits(out["ids"], want, q["_id"])
        text = out["prompt"].to_string()
        assert q["text"] in text and all(by_id[i] in text for i in out["ids"])
        scored = store.similarity_search_with_score(q["text"], k=K)
        assert_scores([(d.id, s) for d, s in scored], want, q["_id"])


def test_llamaindex_tei_embeddings_and_tei_rerank_rag(llamaindex, server, scifact):
    tei, tei_rerank = llamaindex
    from llama_index.core import VectorStoreIndex
    from llama_index.core.llms import MockLLM
    from llama_index.core.query_engine import RetrieverQueryEngine
    from llama_index.core.response_synthesizers.context_only import ContextOnly
    from llama_index.core.schema import TextNode

    embed_model = tei.TextEmbeddingsInference(model_name="all-MiniLM-L6-v2", base_url=server,
                                              timeout=120)
    nodes = [TextNode(text=encoder_text(d), id_=d["_id"]) for d in scifact["docs"]]
    index = VectorStoreIndex(nodes, embed_model=embed_model)
    retriever = index.as_retriever(similarity_top_k=K)
    rerank = tei_rerank.TextEmbeddingInference(base_url=server, top_n=K, timeout=120)
    # A query engine without a generator: its answer is the context an LLM would be given (the
    # reranked texts), and no LLM runs (MockLLM only keeps LlamaIndex from reaching for OpenAI).
    engine = RetrieverQueryEngine(retriever, response_synthesizer=ContextOnly(llm=MockLLM()),
                                  node_postprocessors=[rerank])
    for q in scifact["queries"]:
        want = scifact["want"][q["_id"]]
        hits = retriever.retrieve(q["text"])
        assert_same_hits([h.node.node_id for h in hits], want, q["_id"])
        assert_scores([(h.node.node_id, h.score) for h in hits], want, q["_id"])
        # The reranker over the retrieved nodes: exactly what POST /rerank answers for those texts.
        texts = [h.node.text for h in hits]
        direct = post(server + "/rerank", {"query": q["text"], "texts": texts})
        assert sorted(r["index"] for r in direct) == list(range(K))
        assert all(0 <= r["score"] <= 1 for r in direct)
        assert [r["score"] for r in direct] == sorted((r["score"] for r in direct), reverse=True)
        answer = engine.query(q["text"])
        reranked = answer.source_nodes
        assert answer.response == "\n\n".join(n.node.text for n in reranked)
        by_id = {h.node.node_id: i for i, h in enumerate(hits)}
        got = [(by_id[n.node.node_id], n.score) for n in reranked]
        assert len(got) == K
        # the same scores (up to 1e-6: the texts are encoded anew) in the same order, up to swaps
        # of equal scores
        assert dict(got) == pytest.approx({r["index"]: r["score"] for r in direct}, abs=1e-6)
        for (_, score), r in zip(got, direct):
            assert score == pytest.approx(r["score"], abs=1e-6), (q["_id"], got, direct)
