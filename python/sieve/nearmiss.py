"""Rule-based structural near-misses from WordNet (`sieve nearmiss generate`)."""
from . import _sieve


def generate(sentences, kinds=None, seed=42, wordnet=None):
    """Perturbs each sentence by each kind (at most one pair per sentence and kind), as
    `sieve nearmiss generate` does: [{"source", "perturbed", "kind", "positive"}] in input order.

    `kinds`: names such as "negation", "role_swap", "binding_swap", "spatial_flip", "antonym",
    "passive", "synonym" (None: the five structural families). The output depends only on
    (seed, sentence, kind). `wordnet`: WordNet's folder (None: Debian's /usr/share/wordnet)."""
    if isinstance(sentences, str):
        sentences = [sentences]
    if isinstance(kinds, str):
        kinds = [k for k in kinds.split(",") if k]
    return _sieve.nearmiss_generate(list(sentences), list(kinds or []), seed, wordnet or "")
