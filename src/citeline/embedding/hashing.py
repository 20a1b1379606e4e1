"""A lexical embedder by feature hashing: no model, instant, weak on meaning.

Useful where no neural model can run, and as a second real backend so that
switching embedders (``citeline reindex``) is exercised without a second model.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from citeline.embedding.base import Vectors

if TYPE_CHECKING:
    from citeline.build_context import BuildContext

_TOKEN = re.compile(r"\w+", re.UNICODE)


class HashingEmbedder:
    name = "hashing"
    version = "1"

    def __init__(self, dim: int = 384, max_tokens: int = 512) -> None:
        self.dim = dim
        self.max_tokens = max_tokens
        self.calls = 0
        self.texts_embedded = 0

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return [len(_TOKEN.findall(t)) + 2 for t in texts]

    def embed(self, texts: Sequence[str]) -> Vectors:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if texts:
            self.calls += 1
            self.texts_embedded += len(texts)
        for row, text in enumerate(texts):
            for tok in _TOKEN.findall(text.lower())[: self.max_tokens]:
                digest = hashlib.blake2b(tok.encode(), digest_size=8).digest()
                h = int.from_bytes(digest, "little")
                out[row, h % self.dim] += 1.0 if (h >> 63) & 1 else -1.0
            norm = float(np.linalg.norm(out[row]))
            if norm > 0:
                out[row] /= norm
        return out


def hashing_factory(context: BuildContext | None, argument: str | None) -> HashingEmbedder:
    return HashingEmbedder()
