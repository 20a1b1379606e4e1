"""Verified-sentence events for streaming answers (the server's SSE stream, the web page).

``SentenceStream`` listens to the answerer's per-sentence claim checks (``Answerer.ask(...,
on_sentence=stream.on_sentence)``) and emits an event only for a sentence the check kept, with
its citations numbered exactly as the final Answer numbers them (by first appearance among the
kept sentences). A sentence the check removes is never emitted as answer text: it is announced
after the kept ones as a ``removed`` notice, with the reason.

With ``unsupported = "mark"``, an unverified sentence is held back until a supported one has
been emitted (an answer whose kept sentences are all unverified is refused, so nothing it held
back is ever shown). The citation objects sent with a sentence carry the best supporting quote
known at that point; the final answer object (``Answer.to_json()``) is authoritative.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from citeline.answer.verify import Support
from citeline.models import AnswerSentence, Citation, Passage


@dataclass(frozen=True)
class SentenceEvent:
    """``kind`` is "sentence" (verified, part of the answer) or "removed" (never part of it)."""

    kind: str
    index: int
    text: str
    citations: tuple[int, ...] = ()
    supported: bool = True
    score: float = 0.0
    sources: tuple[Citation, ...] = ()
    reason: str = ""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"index": self.index, "text": self.text}
        if self.kind == "sentence":
            out.update(
                citations=list(self.citations),
                supported=self.supported,
                support_score=round(self.score, 4),
                sources=[c.to_json() for c in self.sources],
            )
        else:
            out.update(reason=self.reason, support_score=round(self.score, 4))
        return out


@dataclass
class SentenceStream:
    """Turns claim checks into ordered events; ``emit`` is called from the answering thread."""

    emit: Callable[[SentenceEvent], None]
    _index: int = 0
    _renumber: dict[int, int] = field(default_factory=dict)
    _quotes: dict[int, tuple[float, tuple[int, int]]] = field(default_factory=dict)
    _held: list[tuple[int, AnswerSentence, Support, Sequence[Passage]]] = field(default_factory=list)
    _removed: list[SentenceEvent] = field(default_factory=list)
    _verified_seen: bool = False

    def on_sentence(self, sentence: AnswerSentence, support: Support, passages: Sequence[Passage]) -> None:
        index = self._index
        self._index += 1
        if sentence.removed or not sentence.citations:
            reason = support.reason or "not supported by the cited passage"
            if not sentence.citations:
                reason = "no valid citation"
            self._removed.append(
                SentenceEvent("removed", index, sentence.text, score=support.score, reason=reason)
            )
            return
        if not sentence.supported and not self._verified_seen:
            self._held.append((index, sentence, support, passages))
            return
        if sentence.supported:
            self._verified_seen = True
        for held in self._held:
            self._send(*held)
        self._held.clear()
        self._send(index, sentence, support, passages)

    def finish(self) -> None:
        """Emit the removed-sentence notices (after every kept sentence)."""
        for event in self._removed:
            self.emit(event)
        self._removed.clear()

    def _send(
        self, index: int, sentence: AnswerSentence, support: Support, passages: Sequence[Passage]
    ) -> None:
        by_number = {p.number: p for p in passages}
        for n in sentence.citations:
            self._renumber.setdefault(n, len(self._renumber) + 1)
        for n, span in support.quotes.items():
            if n not in self._quotes or support.score > self._quotes[n][0]:
                self._quotes[n] = (support.score, span)
        sources = tuple(self._citation(by_number[n]) for n in sentence.citations if n in by_number)
        self.emit(
            SentenceEvent(
                "sentence",
                index,
                sentence.text,
                tuple(self._renumber[n] for n in sentence.citations),
                sentence.supported,
                support.score,
                sources,
            )
        )

    def _citation(self, p: Passage) -> Citation:
        quote_start, quote_end = (
            self._quotes[p.number][1] if p.number in self._quotes else (p.chunk.start, p.chunk.end)
        )
        return Citation(
            n=self._renumber[p.number],
            document_id=p.chunk.document_id,
            source=p.hit.source,
            title=p.hit.title,
            page=p.chunk.page,
            page_end=p.chunk.page_end,
            heading=p.chunk.heading,
            start=p.chunk.start,
            end=p.chunk.end,
            quote=p.chunk.text,
            chunk_id=p.chunk.id,
            quote_start=quote_start,
            quote_end=quote_end,
        )
