"""The generator contract: the analysed question and numbered passages in, a Draft out."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Protocol

from citeline.query.analysis import Query
from citeline.types import Draft, Passage


class Generator(Protocol):
    name: str
    #: how many tokens of context this generator can take (prompt budget)
    context_tokens: int

    def generate(self, question: Query | str, passages: Sequence[Passage]) -> Draft: ...

    def stream(self, question: Query | str, passages: Sequence[Passage]) -> Iterator[str]:
        """Yield answer text as it is produced; never a half-written [n] marker."""
        ...
