"""The store contract: documents, their chunks and vectors, and filtered search.

Filters are part of every search call so that each engine can apply them *before*
ranking (pre-filtering): a filter matching 1% of chunks still returns k results.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from citeline.models import Chunk, Document
from citeline.retrieval.filters import Filter

Vector = npt.NDArray[np.float32]


class Store(Protocol):
    def get_document(self, source: str) -> Document | None: ...

    def documents(self, flt: Filter | None = None) -> list[Document]: ...

    def document_text(self, document_id: str) -> str: ...

    def replace_document(
        self,
        document: Document,
        text: str,
        chunks: Sequence[Chunk],
        vectors: Mapping[str, Vector],
        page_starts: Sequence[int] = (),
    ) -> None:
        """Atomically replace a document and all its chunks (readers see old or new, never half)."""
        ...

    def remove_document(self, document_id: str) -> None: ...

    def cached_vectors(self, text_hashes: Iterable[str]) -> dict[str, Vector]:
        """Vectors already computed by the index's embedder, keyed by indexed-text hash."""
        ...

    def keyword_search(self, query: str, flt: Filter, k: int) -> list[tuple[str, float]]:
        """(chunk id, BM25 score: higher is better), best first."""
        ...

    def vector_search(self, vector: Vector, flt: Filter, k: int) -> list[tuple[str, float]]:
        """(chunk id, cosine similarity), best first."""
        ...

    def chunks(self, chunk_ids: Sequence[str]) -> dict[str, tuple[Chunk, Document]]: ...

    def stats(self) -> dict[str, Any]: ...

    def close(self) -> None: ...
