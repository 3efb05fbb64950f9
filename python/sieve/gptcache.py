"""GPTCache's similarity evaluation by sieve's identity gate (needs gptcache; `import sieve` does
not): GPTCache keeps its own storage, vector search and adapters; sieve decides whether a cached
question is the one asked, where GPTCache's own evaluations compare distances or exact text.

    from gptcache import Cache, Config
    from gptcache.manager import CacheBase, VectorBase, get_data_manager
    from gptcache.processor.pre import get_prompt
    from sieve.gptcache import SieveGateEvaluation, sieve_embedding
    gate = SieveGateEvaluation()                          # the default model's shipped gate
    cache = Cache()
    cache.init(pre_embedding_func=get_prompt, embedding_func=sieve_embedding(), similarity_evaluation=gate,
               data_manager=get_data_manager(CacheBase("sqlite"), VectorBase("faiss", dimension=gate.dim)),
               config=Config(similarity_threshold=gate.threshold))   # a hit: gate score >= threshold

GPTCache calls `evaluation(src, cached)` for each candidate its vector store returns and keeps the
best whose score reaches `(max - min) * similarity_threshold` of `range()`; the gate's scores are
probabilities (range 0..1), so the threshold to give is the gate's own (`gate.threshold`)."""
from . import Encoder, Verifier

try:
    from gptcache.similarity_evaluation import SimilarityEvaluation
except ImportError as _e:  # pragma: no cover (the tests run with GPTCache installed)
    raise ImportError("sieve.gptcache needs GPTCache: pip install gptcache") from _e

__all__ = ["SieveGateEvaluation", "sieve_embedding"]


class SieveGateEvaluation(SimilarityEvaluation):
    """The gate's score of (the question asked, a cached question). `verifier`: a sieve verifier
    spec ("default": the model's shipped gate); `model`: its encoder (None: the default model)."""

    def __init__(self, verifier="default", model=None):
        self._verifier = Verifier.load(verifier, model=model)
        if self._verifier.threshold is None:
            raise ValueError(f"verifier {verifier!r} has no calibrated threshold: give a gate")
        self.threshold = float(self._verifier.threshold)
        self.dim = Encoder.load(model).dim

    def evaluation(self, src_dict, cache_dict, **_):
        asked, cached = src_dict["question"], cache_dict["question"]
        return float(self._verifier.score([(asked, cached)])[0])

    def range(self):
        return 0.0, 1.0


def sieve_embedding(model=None):
    """GPTCache's embedding function over sieve's encoder: a text -> float32 unit key."""
    encoder = Encoder.load(model)

    def embed(text, **_):
        return encoder.encode([text])[0]
    return embed
