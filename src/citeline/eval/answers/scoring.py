"""Scoring one question (pure: tests build the inputs by hand) and its failure stage."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from citeline.eval.answers.evidence import GoldEvidence
from citeline.eval.answers.row import (
    CitationCounts,
    CitedQuote,
    Correctness,
    JudgeCounts,
    QuestionRow,
    RetrievalOutcome,
    SentenceCounts,
)
from citeline.eval.metrics import (
    contains_any,
    exact_match,
    hit_rate_at_k,
    recall_at_k,
    span_overlap,
    token_f1,
)
from citeline.types import REFUSAL, Answer

# The failure stages, in pipeline order, and how the report names them.
STAGES: dict[str, str] = {
    "not_retrieved": "not retrieved",
    "not_in_context": "retrieved but not in the context",
    "refused_wrongly": "refused wrongly",
    "cited_wrongly": "cited wrongly",
    "answered_should_refuse": "answered when it should refuse",
    "error": "error while asking",
}

_MARKER = re.compile(r"(?<!\s)\s*(?:\[\d+\]|\(unverified\))")  # from where the spaces start: linear


@dataclass(frozen=True)
class Retrieved:
    """A retrieved chunk as the trace records it: its document and span."""

    document_id: str
    source: str
    start: int
    end: int


@dataclass
class Observation:
    """Everything measured for one question, before aggregation."""

    golden: Mapping[str, Any]
    answer: Answer | None
    gold: Sequence[GoldEvidence] = ()
    candidates: Sequence[Retrieved] = ()
    context: Sequence[Retrieved] = ()
    latency_ms: float = 0.0
    tokens: Mapping[str, int] | None = None
    quote_text: Callable[[str, int, int], str] | None = None
    judge_supported: tuple[int, int] | None = None  # (supported, judged) shown sentences
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def answer_text(answer: Answer) -> str:
    """The answer without [n] markers and '(unverified)' tags; '' for a refusal."""
    if answer.refused:
        return ""
    return " ".join(_MARKER.sub("", answer.answer).split())


def citation_span(c: Any) -> tuple[int, int]:
    if c.quote_end > c.quote_start:
        return int(c.quote_start), int(c.quote_end)
    return int(c.start), int(c.end)


def _overlaps(doc: str, span: tuple[int, int], gold: Sequence[GoldEvidence]) -> list[int]:
    """Indexes of the gold items with a span overlapping `span` in document `doc`."""
    return [
        i
        for i, g in enumerate(gold)
        if g.document_id == doc and any(span_overlap(span[0], span[1], a, b) for a, b in g.spans)
    ]


def _ranked_documents(hits: Sequence[Retrieved]) -> list[str]:
    return list(dict.fromkeys(h.document_id for h in hits))


def _retrieval(
    obs: Observation, gold: Sequence[GoldEvidence], gold_docs: set[str], k: int
) -> RetrievalOutcome:
    """Documents for hit/recall, spans (when the gold quotes were located) for the failure stage."""
    ranked = _ranked_documents(obs.candidates)
    judgments = dict.fromkeys(gold_docs, 1)
    evidence_retrieved = evidence_in_context = None
    if gold:
        evidence_retrieved = any(_overlaps(h.document_id, (h.start, h.end), gold) for h in obs.candidates)
        evidence_in_context = any(_overlaps(h.document_id, (h.start, h.end), gold) for h in obs.context)
    return RetrievalOutcome(
        hit_at_k=hit_rate_at_k(ranked, judgments, k),
        recall_at_k=recall_at_k(ranked, judgments, k),
        top_documents=tuple(
            next((h.source for h in obs.candidates if h.document_id == d), d) for d in ranked[:k]
        ),
        document_retrieved=bool(gold_docs & set(ranked)),
        document_in_context=bool(gold_docs & {h.document_id for h in obs.context}),
        evidence_retrieved=evidence_retrieved,
        evidence_in_context=evidence_in_context,
    )


def _correctness(g: Mapping[str, Any], a: Answer) -> Correctness | None:
    """Answer text against the golden answers or reference; None when there is nothing to compare."""
    prediction = answer_text(a)
    answers = g.get("answers") or []
    reference = g.get("reference")
    if not (bool(g["answerable"]) and (answers or reference)):
        return None
    golds = answers or [reference]
    first = "" if a.refused else next((s.text for s in a.sentences if not s.removed and s.citations), "")
    return Correctness(
        exact_match=exact_match(prediction, answers) if answers else None,
        token_f1=token_f1(prediction, golds),
        contains=(1.0 if contains_any(prediction, answers) else 0.0) if answers else None,
        first_contains=(1.0 if contains_any(first, answers) else 0.0) if answers else None,
    )


def score_question(obs: Observation, k: int = 5) -> QuestionRow:
    """One per-question report row: outcomes, per-question metrics and the failure stage."""
    g = obs.golden
    answerable = bool(g["answerable"])
    gold = [e for e in obs.gold if e.resolved]
    gold_docs = {e.document_id for e in obs.gold if e.document_id is not None}
    head = QuestionRow(
        id=str(g["id"]),
        question=g["question"],
        answerable=answerable,
        expected=tuple(g.get("answers") or ()) or g.get("reference"),
        gold_evidence=tuple(obs.gold),
        meta=g.get("meta"),
        latency_ms=round(obs.latency_ms, 2),
        tokens=dict(obs.tokens) if obs.tokens is not None else None,
        extra=dict(obs.extra),
    )
    if obs.answer is None:
        return replace(head, stage="error", error=obs.error or "no answer")
    a = obs.answer

    # Citations by span overlap.
    covered: set[int] = set()
    cited: list[CitedQuote] = []
    correct_citations = 0
    for c in a.citations:
        span = citation_span(c)
        hits = _overlaps(c.document_id, span, gold)
        covered.update(hits)
        correct_citations += bool(hits)
        if obs.quote_text is not None:
            quote = obs.quote_text(c.document_id, *span)
        else:  # Citation.quote is the passage text, which starts at c.start
            quote = c.quote[max(0, span[0] - c.start) : max(0, span[1] - c.start)]
        cited.append(
            CitedQuote(c.n, c.source, c.page, span, quote, bool(hits) if answerable and gold else None)
        )
    counts = None
    if answerable and gold:
        counts = CitationCounts(
            citations=len(a.citations) if not a.refused else 0,
            correct_citations=correct_citations if not a.refused else 0,
            evidence=len(gold),
            covered_evidence=len(covered) if not a.refused else 0,
        )

    row = replace(
        head,
        refused=a.refused,
        answer=a.answer,
        refusal_reason=a.refusal_reason,
        refusal_text_ok=(a.answer == REFUSAL and not a.citations) if a.refused else a.answer != REFUSAL,
        retrieval=_retrieval(obs, gold, gold_docs, k) if answerable and gold_docs else None,
        correctness=_correctness(g, a),
        citations=tuple(cited),
        citation_counts=counts,
        # Faithfulness (the pipeline verifier's view) and the judge's view.
        sentences=SentenceCounts(
            total=len(a.sentences),
            supported=sum(1 for s in a.sentences if s.supported),
            removed=sum(1 for s in a.sentences if s.removed),
        ),
        judge=JudgeCounts(*obs.judge_supported) if obs.judge_supported is not None else None,
    )
    return replace(row, stage=failure_stage(row))


def failure_stage(row: QuestionRow) -> str | None:
    """The first stage that failed, in pipeline order (see the package docstring)."""
    if row.error:
        return "error"
    if not row.answerable:
        return None if row.refused else "answered_should_refuse"
    r = row.retrieval
    if r is not None:
        # Span level when the gold quotes were located, else document level.
        spans = r.evidence_retrieved is not None
        retrieved = r.evidence_retrieved if spans else r.document_retrieved
        in_context = r.evidence_in_context if spans else r.document_in_context
        if not retrieved:
            return "not_retrieved"
        if not in_context:
            return "not_in_context"
    if row.refused:
        return "refused_wrongly"
    counts = row.citation_counts
    if counts is not None and counts.correct_citations == 0:
        return "cited_wrongly"
    return None
