"""Verified-sentence events for streaming answers (the server's SSE stream, the web page).

``SentenceStream`` listens to the answerer's per-sentence claim checks (``Answerer.ask(...,
on_sentence=stream.on_sentence)``) and emits an event only for a sentence the check kept, with
its citations numbered exactly as the final Answer numbers them (by first appearance among the
kept sentences). A sentence the check removes is never emitted as answer text: it is announced
after the kept ones as a ``removed`` notice, with the reason.

With ``unsupported = "mark"``, an unverified sentence is held back until a supported one has
been emitted (an answer whose kept sentences are all unverified is refused, so nothing it held
back is ever shown). The citation objects sent with a sentence carry that sentence's own
supporting quote (``quotes``); the final answer object (``Answer.to_json()``) is authoritative.

``on_progress`` turns the answerer's stages into ``progress`` events (passages retrieved, the
reader's score, the generator called, "checking sentence k of n"), so a client can show where
the answer stands before its first sentence.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from citeline.answer.verify import Support
from citeline.types import AnswerSentence, Citation, Passage, SentenceQuote


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
    quotes: tuple[SentenceQuote, ...] = ()

    # Hand-written: the two kinds are two shapes (SSE clients read them), not one with omissions.
    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"index": self.index, "text": self.text}
        if self.kind == "sentence":
            out.update(
                citations=list(self.citations),
                supported=self.supported,
                support_score=round(self.score, 4),
                sources=[c.to_json() for c in self.sources],
                quotes=[q.to_json() for q in self.quotes],
            )
        else:
            out.update(reason=self.reason, support_score=round(self.score, 4))
        return out


@dataclass(frozen=True)
class ProgressEvent:
    """Where the answer stands: ``stage`` is retrieved, read, generating or checking."""

    stage: str
    data: Mapping[str, Any]
    kind: str = "progress"

    @property
    def message(self) -> str:
        d = self.data
        if self.stage == "retrieved":
            return f"Found {d.get('passages', 0)} passages; reading them…"
        if self.stage == "read":
            return "Read the passages; writing the answer…"
        if self.stage == "generating":
            return "Writing the answer…"
        if self.stage == "checking":
            return f"Checking sentence {d.get('sentence')} of {d.get('of')}…"
        return self.stage

    # Hand-written: ``data``'s keys are spread into the event itself, as SSE clients read them.
    def to_json(self) -> dict[str, Any]:
        return {"stage": self.stage, **self.data, "message": self.message}


@dataclass
class SentenceStream:
    """Turns claim checks into ordered events; ``emit`` is called from the answering thread."""

    emit: Callable[[SentenceEvent | ProgressEvent], None]
    _index: int = 0
    _renumber: dict[int, int] = field(default_factory=dict)
    _held: list[tuple[int, AnswerSentence, Support, Sequence[Passage]]] = field(default_factory=list)
    _removed: list[SentenceEvent] = field(default_factory=list)
    _verified_seen: bool = False

    def on_progress(self, stage: str, data: Mapping[str, Any]) -> None:
        self.emit(ProgressEvent(stage, dict(data)))

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
        own = {q.n: q for q in sentence.quotes}
        sources = tuple(
            self._citation(by_number[n], own.get(n)) for n in sentence.citations if n in by_number
        )
        self.emit(
            SentenceEvent(
                "sentence",
                index,
                sentence.text,
                tuple(self._renumber[n] for n in sentence.citations),
                sentence.supported,
                support.score,
                sources,
                quotes=tuple(
                    SentenceQuote(self._renumber[q.n], q.quote_start, q.quote_end) for q in sentence.quotes
                ),
            )
        )

    def _citation(self, p: Passage, quote: SentenceQuote | None) -> Citation:
        """The passage as this sentence cites it: its quote is this sentence's support."""
        span = (quote.quote_start, quote.quote_end) if quote is not None else None
        return Citation.of(p, self._renumber[p.number], span)
