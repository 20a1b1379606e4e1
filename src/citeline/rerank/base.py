"""The reranker contract: reorder retrieved hits for one query."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from citeline.query.analysis import Query
from citeline.types import Hit


class Reranker(Protocol):
    name: str

    def rerank(self, query: Query | str, hits: Sequence[Hit]) -> list[Hit]:
        """Return the hits best first, each with a ``rerank`` stage score."""
        ...
