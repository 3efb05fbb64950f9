"""What the framework adapters (sieve.langchain, sieve.llama_index) share: the metadata check,
the index built on the first write, batched upserts and the gate's verifier.
Internal: the adapters' own docstrings say what their users see."""
import os

from . import Error as _SieveError
from . import Index, Verifier, check_metadata


def flat_metadata(metadata, what):
    """`metadata` when sieve can store it (a flat object of strings, numbers, booleans and lists of
    strings), else ValueError naming `what` (the document or node)."""
    try:
        check_metadata(metadata)
    except (_SieveError, TypeError, ValueError) as e:
        raise ValueError(f"{what}: sieve stores metadata as a flat object of strings, numbers, booleans "
                         f"and lists of strings ({e})") from None
    return metadata


def write(index, path, model, docs, batch_size):
    """Upserts `docs` (dicts for Index.add) into `index`, or builds the index at `path` from them
    when there is none yet (an empty or absent folder; anything else there is a ValueError).
    Returns the index. The caller holds its write lock."""
    if index is not None:
        index.upsert(docs, batch_size=batch_size)
        return index
    parent = os.path.dirname(os.path.abspath(path))
    os.makedirs(parent, exist_ok=True)  # Index.build writes its corpus file beside the folder
    empty_dir = os.path.isdir(path) and not os.listdir(path)
    if os.path.exists(path) and not empty_dir:
        raise ValueError(f"{path!r} exists and is not a sieve index")
    return Index.build(docs, path, model, batch_size=batch_size, force=empty_dir)


class IndexStore:
    """What both adapters' stores hold and give alike: `_index` (None before the first write),
    `_verifier` (a sieve.Verifier, or a name or file to load; None: the model's own) under
    `_verifier_lock`, and `model`."""

    @property
    def index(self):
        """The sieve.Index, or None before the first add built it."""
        return self._index

    def verifier(self):
        """The sieve.Verifier of `gate` (loaded on first use)."""
        with self._verifier_lock:
            if not isinstance(self._verifier, Verifier):
                self._verifier = Verifier.load(self._verifier or "default", model=self.model)
            return self._verifier
