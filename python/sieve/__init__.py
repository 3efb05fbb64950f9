"""sieve: semantic search that does not confuse "the dog bit the man" with "the man bit the dog".

The Python face of sieve's C++ library, with NumPy arrays in and out:

    import sieve
    enc = sieve.Encoder.load()                       # the embedded sieve-mini, or a model folder
    keys = enc.encode(["the dog bit the man"])       # float32 [n, dim], unit rows
    ver = sieve.Verifier.load()                      # sieve-mini's calibrated verifier
    ver.score([("the dog bit the man", "the man bit the dog")])   # float32 [n]
    ver.accept([...])                                # bool [n] at its threshold
    idx = sieve.Index.open("build/demo/index")
    idx.search(["who bit the man"], k=10)            # hits as dicts
    D, I = idx.search_arrays(["who bit the man"], k=10)   # like FAISS: scores, internal ids

Errors from the library raise `sieve.Error` with its message; bad arguments raise ValueError.
Long calls release the GIL.
"""
import numpy as _np

from ._sieve import Error
from ._sieve import Encoder as _Encoder
from ._sieve import Index as _Index
from ._sieve import Verifier as _Verifier

__all__ = ["Error", "Encoder", "Index", "Verifier"]


class Encoder:
    """A text encoder (any model folder in Hugging Face layout; default: sieve-mini)."""

    def __init__(self, impl):
        self._impl = impl

    @classmethod
    def load(cls, path=None, device="cpu", threads=0):
        """Loads a model folder (None: the embedded sieve-mini) on `device` with `threads`
        compute threads (0: every core)."""
        return cls(_Encoder.load(path or "", device, threads))

    @property
    def dim(self):
        """Width of keys and token states."""
        return self._impl.dim

    @property
    def max_length(self):
        """Token cap including special tokens."""
        return self._impl.max_length

    def encode(self, texts, batch_size=32, normalize=True, output="pooled", show_progress_bar=False):
        """Encodes a string or a list of strings, as sentence-transformers' `encode` does.

        output="pooled": float32 [n, dim] (unit rows when `normalize`); "tokens": a list of
        float32 [length, dim] token states; "both": (pooled, tokens). A single string gives the
        pooled vector [dim]."""
        single = isinstance(texts, str)
        out = self._impl.encode([texts] if single else list(texts), batch_size, normalize, output)
        if single and output == "pooled":
            return out[0]
        return out

    def tokenize(self, texts):
        """[{"ids", "tokens", "offsets"}] per text, with the special tokens."""
        return self._impl.tokenize([texts] if isinstance(texts, str) else list(texts))


class Index:
    """A sieve index (`sieve index build`), opened for search."""

    def __init__(self, impl):
        self._impl = impl

    @classmethod
    def open(cls, path, model=None, encoder=True):
        """Opens an index folder; `encoder=False` skips loading the model (BM25 search only)."""
        return cls(_Index.open(path, model or "", encoder))

    def __len__(self):
        return len(self._impl)

    def search(self, queries, k=10, mode=None):
        """Hits per query: [{"rank", "id", "doc", "score", "dense", "bm25"}], best first. `mode`:
        "dense", "bm25", "hybrid" or None (what the index's model recommends)."""
        single = isinstance(queries, str)
        out = self._impl.search([queries] if single else list(queries), k, mode or "")
        return out[0] if single else out

    def search_arrays(self, queries, k=10, mode=None):
        """(scores float32 [n, k], ids int64 [n, k]) like FAISS's `search`; missing hits are
        (-inf, -1). The ids are internal document numbers (see `document_id`)."""
        return self._impl.search_arrays([queries] if isinstance(queries, str) else list(queries), k, mode or "")

    def document(self, id):
        """{"_id", "title", "text"} of an external id (KeyError when absent)."""
        return self._impl.document(id)

    def tokens(self, id):
        """The stored token states of a document, float32 [length, dim]."""
        return self._impl.tokens(id)


class Verifier:
    """A stage-2 verifier with the encoder that makes its token states."""

    def __init__(self, impl):
        self._impl = impl

    @classmethod
    def load(cls, path_or_name="default", model=None, threads=0):
        """A verifier file, or "F0", "F1", "F2"; "default": sieve-mini's calibrated verifier (F1
        for another `model`)."""
        return cls(_Verifier.load(path_or_name, model or "", threads))

    @property
    def kind(self):
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
