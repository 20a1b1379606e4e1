"""The embedder contract."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

Vectors = npt.NDArray[np.float32]


class Embedder(Protocol):
    #: registry name, e.g. "minilm-int8"
    name: str
    #: changes whenever vectors from this embedder would change (weights, tokenizer, pooling)
    version: str
    dim: int
    #: longest input in tokens, special tokens included; longer input would be truncated
    max_tokens: int

    def embed(self, texts: Sequence[str]) -> Vectors:
        """L2-normalised vectors, one row per text."""
        ...

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Tokens each text takes as embedder input, special tokens included."""
        ...
