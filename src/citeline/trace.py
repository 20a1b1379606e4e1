"""The record of one answer: every stage's candidates with scores, the context, the completion,
the claim checks and the timings. Built by the answerer, stored by the store, read back by
`citeline trace`, the server and `citeline eval` as the same typed object.

``to_json()`` is the stored and printed form; ``from_json()`` reads it back (traces written by
earlier versions, which lack newer fields, load with their defaults).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any, TypeVar, cast

from citeline.types import Hit

_T = TypeVar("_T")


@dataclass(frozen=True)
class TracedHit:
    """A candidate as one stage saw it; ``n`` is its passage number when it was in the context."""

    chunk_id: str
    source: str = ""
    heading: str = ""
    start: int = 0
    end: int = 0
    score: float = 0.0
    stages: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    n: int | None = None
    #: the number the answer shows for this passage ([1], [2]...): None when the answer does not cite it
    cited_as: int | None = None
    #: the reader of the trace may not read this passage's document: its source, heading and span
    #: are left out (trace_access.py)
    redacted: bool = False

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

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {} if self.n is None else {"n": self.n}
        if self.cited_as is not None:
            out["cited_as"] = self.cited_as
        if self.redacted:
            out["redacted"] = True
        out.update(
            chunk_id=self.chunk_id,
            source=self.source,
            heading=self.heading,
            start=self.start,
            end=self.end,
            score=self.score,
            stages={k: dict(v) for k, v in self.stages.items()},
        )
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TracedHit:
        return _from(cls, data)


@dataclass(frozen=True)
class Candidates:
    """Each retrieval stage's list: (chunk id, score) for the engines, full hits once fused."""

    bm25: tuple[tuple[str, float], ...] = ()
    dense: tuple[tuple[str, float], ...] = ()
    fused: tuple[TracedHit, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "bm25": [{"chunk_id": c, "score": round(s, 6)} for c, s in self.bm25],
            "dense": [{"chunk_id": c, "score": round(s, 6)} for c, s in self.dense],
            "fused": [h.to_json() for h in self.fused],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Candidates:
        return cls(
            bm25=tuple((c["chunk_id"], float(c["score"])) for c in data.get("bm25", [])),
            dense=tuple((c["chunk_id"], float(c["score"])) for c in data.get("dense", [])),
            fused=tuple(TracedHit.from_json(h) for h in data.get("fused", [])),
        )


@dataclass(frozen=True)
class Check:
    """One answer sentence checked against the passages it cites."""

    text: str
    citations: tuple[int, ...]
    supported: bool
    score: float
    reason: str = ""
    verifier: str = ""
    #: the citations the sentence keeps, numbered as the answer shows them (``citations`` are
    #: context passage numbers, as in ``Trace.context``); empty for a sentence not in the answer
    answer_citations: tuple[int, ...] = ()
    #: context passages the sentence cited that do not support it: not cited in the answer
    unsupporting: tuple[int, ...] = ()
    #: the reader of the trace may not read a passage the sentence could draw on: text left out
    redacted: bool = False

    def to_json(self) -> dict[str, Any]:
        out = {
            "text": self.text,
            "citations": list(self.citations),
            "supported": self.supported,
            "score": round(self.score, 4),
            "reason": self.reason,
            "verifier": self.verifier,
            "answer_citations": list(self.answer_citations),
            "unsupporting": list(self.unsupporting),
        }
        if self.redacted:
            out["redacted"] = True
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Check:
        return _from(cls, data)


@dataclass(frozen=True)
class Trace:
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

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "candidates":
                value = value.to_json()
            elif f.name in ("context", "verification"):
                value = [v.to_json() for v in value]
            elif isinstance(value, tuple):
                value = [dict(v) if isinstance(v, Mapping) else v for v in value]
            elif isinstance(value, Mapping):
                value = dict(value)
            out[f.name] = value
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Trace:
        known = {f.name for f in fields(cls)}
        values: dict[str, Any] = {k: v for k, v in data.items() if k in known}
        values["candidates"] = Candidates.from_json(data.get("candidates") or {})
        values["context"] = tuple(TracedHit.from_json(h) for h in data.get("context") or [])
        values["verification"] = tuple(Check.from_json(c) for c in data.get("verification") or [])
        values["dropped_citations"] = tuple(data.get("dropped_citations") or ())
        values["citations"] = tuple(data.get("citations") or ())
        values.setdefault("id", "")
        values.setdefault("question", "")
        return cls(**values)


def _from(cls: type[_T], data: Mapping[str, Any]) -> _T:
    known = {f.name for f in fields(cast(Any, cls))}
    values = {k: (tuple(v) if isinstance(v, list) else v) for k, v in data.items() if k in known}
    return cls(**values)


@dataclass(frozen=True)
class TraceSummary:
    """A row of `citeline trace` listings."""

    id: str
    created_at: float
    question: str
    refused: bool
    support: float | None
    owner: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "created_at": self.created_at,
            "question": self.question,
            "refused": self.refused,
            "support": self.support,
            "owner": self.owner,
        }


def context_hits(hits: Sequence[tuple[int, Hit]]) -> tuple[TracedHit, ...]:
    return tuple(TracedHit.of(hit, n) for n, hit in hits)
