"""The per-question row of an answers report, typed, and its JSON (format ``citeline-answers/1``).

``QuestionRow.to_json`` writes exactly the object the report has always held under ``"rows"``
(same keys, same order; a row for a question that raised an error has fewer keys), and
``QuestionRow.from_json`` reads such an object back, from a report written now or before.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from citeline.eval.answers.evidence import GoldEvidence
from citeline.jsonable import Jsonable, json_spec, omit_none


@dataclass(frozen=True)
class RetrievalOutcome(Jsonable):
    """Where the gold evidence ended up: among the top k documents, the retrieved chunks, the context.

    ``evidence_*`` are by span overlap and None when no gold quote was located (then only the
    document-level ``document_*`` are known).
    """

    hit_at_k: float = field(metadata=json_spec(key="hit@k"))
    recall_at_k: float = field(metadata=json_spec(key="recall@k"))
    top_documents: tuple[str, ...]
    document_retrieved: bool
    document_in_context: bool
    evidence_retrieved: bool | None = None
    evidence_in_context: bool | None = None


@dataclass(frozen=True)
class Correctness(Jsonable):
    """Answer text against the gold answers; ``exact_match`` and the two ``contains`` need ``answers``.

    ``first_contains``: the answer's first sentence alone contains a gold answer, as a reader who
    stops there would read it (None in reports written before it was kept)."""

    exact_match: float | None
    token_f1: float
    contains: float | None
    #: absent, not null, when unknown: reports written before it was kept write back unchanged
    first_contains: float | None = field(default=None, metadata=json_spec(omit=omit_none))


@dataclass(frozen=True)
class CitedQuote(Jsonable):
    """One citation of the answer: its span in the document, the text there, and whether it overlaps
    a gold span (None when the question has no resolved gold evidence to check against)."""

    n: int
    source: str
    page: int | None
    span: tuple[int, int]
    quote: str
    correct: bool | None


@dataclass(frozen=True)
class CitationCounts(Jsonable):
    """The pooled counts behind citation precision and recall (refusals count zero citations)."""

    citations: int
    correct_citations: int
    evidence: int
    covered_evidence: int


@dataclass(frozen=True)
class SentenceCounts(Jsonable):
    """The generator's sentences: all, marked supported by the pipeline's verifier, and removed."""

    total: int
    supported: int
    removed: int


@dataclass(frozen=True)
class JudgeCounts(Jsonable):
    """Shown sentences with citations that an independent judge checked, and found supported."""

    supported: int
    judged: int


# Keys QuestionRow.to_json writes from its own fields; any other key of a row is in `extra`.
_KEYS = frozenset(
    {
        "id",
        "question",
        "answerable",
        "expected",
        "gold_evidence",
        "meta",
        "latency_ms",
        "tokens",
        "refused",
        "answer",
        "refusal_reason",
        "refusal_text_ok",
        "error",
        "retrieval",
        "correctness",
        "citations",
        "citation_counts",
        "citation_precision",
        "citation_recall",
        "sentences",
        "judge",
        "stage",
    }
)


T = TypeVar("T")


def _optional(data: Mapping[str, Any], key: str, read: Callable[[Mapping[str, Any]], T]) -> T | None:
    value = data.get(key)
    return None if value is None else read(value)


@dataclass(frozen=True)
class QuestionRow:
    """One question of an answers report: what was asked and expected, what came back, how it scored.

    A question whose ``kb.ask`` raised has ``error`` set, ``stage == "error"``, no answer and no
    scores. ``extra`` holds keys the caller attached to the row (the runner adds ``trace_id``).
    """

    id: str
    question: str
    answerable: bool
    expected: tuple[str, ...] | str | None = None  # the gold answers, else the reference answer
    gold_evidence: tuple[GoldEvidence, ...] = ()
    meta: Any = None  # the golden row's free-form "meta"
    latency_ms: float = 0.0
    tokens: Mapping[str, int] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    refused: bool | None = None
    answer: str | None = None
    refusal_reason: str | None = None
    refusal_text_ok: bool | None = None  # a refusal used exactly REFUSAL, or an answer did not
    error: str | None = None
    retrieval: RetrievalOutcome | None = None  # None: unanswerable, or no gold document indexed
    correctness: Correctness | None = None  # None: unanswerable, or nothing to compare with
    citations: tuple[CitedQuote, ...] = ()
    citation_counts: CitationCounts | None = None  # None: no resolved gold evidence
    sentences: SentenceCounts | None = None
    judge: JudgeCounts | None = None
    stage: str | None = None  # the failure stage (see STAGES); None when nothing went wrong

    @property
    def citation_precision(self) -> float | None:
        c = self.citation_counts
        return c.correct_citations / c.citations if c is not None and c.citations else None

    @property
    def citation_recall(self) -> float | None:
        c = self.citation_counts
        return c.covered_evidence / c.evidence if c is not None else None

    @property
    def trace_id(self) -> str | None:
        value = self.extra.get("trace_id")
        return None if value is None else str(value)

    # Hand-written: an error row has other keys in another order, and ``extra`` sits mid-object.
    def to_json(self) -> dict[str, Any]:
        """The row as the report's JSON holds it (keys in the order reports have always had)."""
        row: dict[str, Any] = {
            "id": self.id,
            "question": self.question,
            "answerable": self.answerable,
            "expected": list(self.expected) if isinstance(self.expected, tuple) else self.expected,
            "gold_evidence": [e.to_json() for e in self.gold_evidence],
            "meta": self.meta,
            "latency_ms": self.latency_ms,
            "tokens": dict(self.tokens) if self.tokens is not None else None,
            **self.extra,
        }
        citations = [c.to_json() for c in self.citations]
        retrieval = self.retrieval.to_json() if self.retrieval is not None else None
        correctness = self.correctness.to_json() if self.correctness is not None else None
        counts = self.citation_counts.to_json() if self.citation_counts is not None else None
        sentences = self.sentences.to_json() if self.sentences is not None else None
        if self.error is not None:
            row.update(
                refused=self.refused,
                answer=self.answer,
                stage=self.stage,
                error=self.error,
                citations=citations,
                retrieval=retrieval,
                correctness=correctness,
                citation_counts=counts,
                sentences=sentences,
            )
            return row
        row.update(
            refused=self.refused,
            answer=self.answer,
            refusal_reason=self.refusal_reason,
            refusal_text_ok=self.refusal_text_ok,
            error=None,
        )
        row["retrieval"] = retrieval
        row["correctness"] = correctness
        row["citations"] = citations
        row["citation_counts"] = counts
        row["citation_precision"] = self.citation_precision
        row["citation_recall"] = self.citation_recall
        row["sentences"] = sentences
        row["judge"] = self.judge.to_json() if self.judge is not None else None
        row["stage"] = self.stage
        return row

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> QuestionRow:
        """A row back from a report's JSON (``citation_precision``/``recall`` are derived, not read)."""
        expected = data.get("expected")
        tokens = data.get("tokens")
        return cls(
            id=data["id"],
            question=data["question"],
            answerable=data["answerable"],
            expected=tuple(expected) if isinstance(expected, list) else expected,
            gold_evidence=tuple(GoldEvidence.from_json(e) for e in data.get("gold_evidence") or ()),
            meta=data.get("meta"),
            latency_ms=data.get("latency_ms", 0.0),
            tokens=dict(tokens) if tokens is not None else None,
            extra={k: v for k, v in data.items() if k not in _KEYS},
            refused=data.get("refused"),
            answer=data.get("answer"),
            refusal_reason=data.get("refusal_reason"),
            refusal_text_ok=data.get("refusal_text_ok"),
            error=data.get("error"),
            retrieval=_optional(data, "retrieval", RetrievalOutcome.from_json),
            correctness=_optional(data, "correctness", Correctness.from_json),
            citations=tuple(CitedQuote.from_json(c) for c in data.get("citations") or ()),
            citation_counts=_optional(data, "citation_counts", CitationCounts.from_json),
            sentences=_optional(data, "sentences", SentenceCounts.from_json),
            judge=_optional(data, "judge", JudgeCounts.from_json),
            stage=data.get("stage"),
        )
