"""The record of one answer: every stage's candidates with scores, the context, the completion,
the claim checks and the timings. Built by the answerer, stored by the store, read back by
`citeline trace`, the server and `citeline eval` as the same typed object.

``to_json()`` is the stored and printed form; ``from_json()`` reads it back (traces written by
earlier versions, which lack newer fields, load with their defaults).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from citeline.jsonable import Jsonable, json_spec, omit_false, omit_none
from citeline.types import Hit


@dataclass(frozen=True)
class TracedHit(Jsonable):
    """A candidate as one stage saw it; ``n`` is its passage number when it was in the context.

    ``n``, ``cited_as`` and ``redacted`` come first in its JSON, and only when set: keyword-only,
    they are last in ``__init__``."""

    n: int | None = field(default=None, kw_only=True, metadata=json_spec(omit=omit_none))
    #: the number the answer shows for this passage ([1], [2]...): None when the answer does not cite it
    cited_as: int | None = field(default=None, kw_only=True, metadata=json_spec(omit=omit_none))
    #: the reader of the trace may not read this passage's document: its source, heading and span
    #: are left out (trace_access.py)
    redacted: bool = field(default=False, kw_only=True, metadata=json_spec(omit=omit_false))
    chunk_id: str
    source: str = ""
    heading: str = ""
    start: int = 0
    end: int = 0
    score: float = 0.0
    stages: Mapping[str, Mapping[str, float]] = field(default_factory=dict)

    @classmethod
    def of(cls, hit: Hit, n: int | None = None) -> TracedHit:
        return cls(
            chunk_id=hit.chunk.id,
            source=hit.source,
            heading=hit.chunk.heading,
            start=hit.chunk.start,
            end=hit.chunk.end,
            score=round(hit.score, 6),
            stages={k: {"score": round(v.score, 6), "rank": v.rank} for k, v in hit.stages.items()},
            n=n,
        )


def _scored_json(pairs: tuple[tuple[str, float], ...]) -> list[dict[str, Any]]:
    return [{"chunk_id": c, "score": round(s, 6)} for c, s in pairs]


def _scored_of(items: list[Mapping[str, Any]]) -> tuple[tuple[str, float], ...]:
    return tuple((c["chunk_id"], float(c["score"])) for c in items)


@dataclass(frozen=True)
class Candidates(Jsonable):
    """Each retrieval stage's list: (chunk id, score) for the engines, full hits once fused."""

    bm25: tuple[tuple[str, float], ...] = field(
        default=(), metadata=json_spec(encode=_scored_json, decode=_scored_of)
    )
    dense: tuple[tuple[str, float], ...] = field(
        default=(), metadata=json_spec(encode=_scored_json, decode=_scored_of)
    )
    fused: tuple[TracedHit, ...] = ()


@dataclass(frozen=True)
class Check(Jsonable):
    """One answer sentence checked against the passages it cites."""

    text: str
    citations: tuple[int, ...]
    supported: bool
    score: float = field(metadata=json_spec(digits=4))
    reason: str = ""
    verifier: str = ""
    #: the citations the sentence keeps, numbered as the answer shows them (``citations`` are
    #: context passage numbers, as in ``Trace.context``); empty for a sentence not in the answer
    answer_citations: tuple[int, ...] = ()
    #: context passages the sentence cited that do not support it: not cited in the answer
    unsupporting: tuple[int, ...] = ()
    #: the reader of the trace may not read a passage the sentence could draw on: text left out
    redacted: bool = field(default=False, metadata=json_spec(omit=omit_false))


@dataclass(frozen=True)
class Trace(Jsonable):
    id: str
    question: str
    #: who asked (``user:NAME``, ``local-admin``, ``anonymous``); only they and admins may read it
    owner: str = ""
    created_at: float = 0.0
    candidates: Candidates = field(default_factory=Candidates)
    expansion: Mapping[str, Any] | None = None
    context: tuple[TracedHit, ...] = ()
    relevance: Mapping[str, Any] = field(default_factory=dict)
    #: what the question asks for: attribute, answer kind and subject (query/slot.py)
    slot: Mapping[str, Any] = field(default_factory=dict)
    threshold: float = 0.0
    generator: str = ""
    verifier: str = ""
    generator_called: bool = False
    raw_completion: str | None = None
    confidence: float | None = None
    tokens: Mapping[str, int] = field(default_factory=dict)
    verification: tuple[Check, ...] = ()
    dropped_citations: tuple[int, ...] = ()
    citations: tuple[Mapping[str, Any], ...] = ()
    refusal_reason: str | None = None
    answer: str = ""
    refused: bool = False
    timings_ms: Mapping[str, float] = field(default_factory=dict)
    #: retrieval fell back to keyword-only (dense side failed or too slow), and why
    degraded: str | None = None
    #: the trained reader's best score, threshold and top units (None without a reader)
    reader: Mapping[str, Any] | None = None
    #: with an LLM generator whose answer was refused, the extractive answer replaced it: the
    #: model's name, its refusal reason and claim checks (answer/fallback.py); else None
    fallback: Mapping[str, Any] | None = None
    #: parts of this trace came from documents its reader may not read and are left out
    #: (trace_access.py); never stored, only set on what is shown
    redacted: bool = False

    @property
    def support(self) -> float | None:
        """Share of checked sentences that passed (None when nothing was checked)."""
        if not self.verification:
            return None
        return sum(c.supported for c in self.verification) / len(self.verification)

    def with_(self, **changes: Any) -> Trace:
        return replace(self, **changes)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Trace:
        """A stored trace back; one written before a field existed takes the field's default."""
        present = {k: v for k, v in data.items() if v is not None or k in _NULLABLE}
        return super().from_json({"id": "", "question": "", **present})


#: the fields of a trace whose null is a value (the rest read a stored null as their default)
_NULLABLE = frozenset(
    {"expansion", "raw_completion", "confidence", "refusal_reason", "degraded", "reader", "fallback"}
)


@dataclass(frozen=True)
class TraceSummary(Jsonable):
    """A row of `citeline trace` listings."""

    id: str
    created_at: float
    question: str
    refused: bool
    support: float | None
    owner: str = ""


def context_hits(hits: Sequence[tuple[int, Hit]]) -> tuple[TracedHit, ...]:
    return tuple(TracedHit.of(hit, n) for n, hit in hits)
