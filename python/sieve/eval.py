"""Retrieval metrics with the BEIR / trec_eval definitions (`sieve eval`).

A run is {query_id: [doc ids, best first]} or {query_id: {doc_id: score}} (ranked as trec_eval
ranks: score descending, ties by doc id descending); qrels are {query_id: {doc_id: grade}}. Means
are over the qrels' queries with a relevant document; a judged query missing from the run scores 0.
"""
from . import _sieve


def evaluate(run, qrels, ks=(1, 3, 5, 10, 100, 1000), per_query=False):
    """Means {"ndcg@k", "mrr@k", "acc@k", "recall@k", "p@k" for each k, and "map"}, or, with
    `per_query`, {query_id: {...}} for each judged query."""
    return _sieve.evaluate(dict(run), dict(qrels), [int(k) for k in ks], per_query)


def _one(name, run, qrels, k):
    return evaluate(run, qrels, (k,))[f"{name}@{k}"]


def ndcg(run, qrels, k=10):
    """Mean nDCG@k (linear gain, as BEIR)."""
    return _one("ndcg", run, qrels, k)


def recall(run, qrels, k=100):
    """Mean recall@k."""
    return _one("recall", run, qrels, k)


def precision(run, qrels, k=10):
    """Mean P@k."""
    return _one("p", run, qrels, k)


def mrr(run, qrels, k=10):
    """Mean reciprocal rank of the first relevant document within the top k."""
    return _one("mrr", run, qrels, k)


def map(run, qrels):  # noqa: A001 (the metric's name)
    """Mean average precision over the whole ranked lists (trec_eval's map)."""
    return evaluate(run, qrels, (1000,))["map"]
