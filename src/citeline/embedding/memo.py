"""Vectors of short texts embedded while answering, remembered for a while.

The reader's prefilter and the extractive generator rank the units of the same context by
embedding similarity; each embedded them again (about 250 ms a question on 2 cores). Both now ask
through :func:`remembered`, which keeps the last few thousand vectors of each embedder.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from citeline.embedding.base import Embedder, Vectors

#: vectors kept per embedder (384 floats each: about 6 MB)
SIZE = 4096


class EmbeddingMemo:
    """The most recently used ``size`` vectors of one embedder, by text."""

    def __init__(self, size: int = SIZE) -> None:
        self.size = size
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def embed(self, embedder: Embedder, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, embedder.dim), dtype=np.float32)
        found: dict[str, np.ndarray] = {}
        with self._lock:
            for text in texts:
                vector = self._vectors.get(text)
                if vector is not None:
                    self._vectors.move_to_end(text)
                    found[text] = vector
        missing = [t for t in dict.fromkeys(texts) if t not in found]
        if missing:
            fresh = embedder.embed(missing)
            with self._lock:
                for text, vector in zip(missing, fresh, strict=True):
                    found[text] = self._vectors[text] = vector
                while len(self._vectors) > self.size:
                    self._vectors.popitem(last=False)
        return np.stack([found[t] for t in texts])


_MEMOS: weakref.WeakKeyDictionary[Embedder, EmbeddingMemo] = weakref.WeakKeyDictionary()
_MEMOS_LOCK = threading.Lock()


def remembered(embedder: Embedder, texts: Sequence[str]) -> Vectors:
    """``embedder.embed(texts)``, with the vectors of texts it embedded lately taken from memory."""
    with _MEMOS_LOCK:
        try:
            memo = _MEMOS.setdefault(embedder, EmbeddingMemo())
        except TypeError:  # an embedder that cannot be weakly referenced: nothing is remembered
            return embedder.embed(texts)
    return memo.embed(embedder, texts)
