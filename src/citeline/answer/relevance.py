"""The refusal guard: a calibrated relevance signal computed before any generator runs.

RRF scores are rank-only and say nothing about relevance, so the signal combines
the best dense cosine with the share of the question's salient terms found in the
evidence. Identifiers and numbers asked about must appear in the evidence at all.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from citeline.models import Hit
from citeline.retrieval.bm25 import is_identifier, query_terms

_WORD = re.compile(r"\w+(?:[-_./:]\w+)*")

DENSE_WEIGHT = 0.6
COVERAGE_WEIGHT = 0.4


@dataclass(frozen=True)
class Relevance:
    score: float
    dense_best: float
    coverage: float
    missing_identifiers: tuple[str, ...]

    def to_json(self) -> dict[str, object]:
        return {
            "score": round(self.score, 4),
            "dense_best": round(self.dense_best, 4),
            "coverage": round(self.coverage, 4),
            "missing_identifiers": list(self.missing_identifiers),
        }


def _stem(term: str) -> str:
    """A light suffix strip so "configured" meets "configuration"; identifiers stay exact."""
    if is_identifier(term) or len(term) <= 4:
        return term
    for suffix in ("ations", "ation", "ings", "ing", "ies", "ied", "ed", "es", "s", "ly", "er", "ers"):
        if term.endswith(suffix) and len(term) - len(suffix) >= 4:
            return term[: -len(suffix)]
    return term


def term_present(term: str, words: set[str], text: str) -> bool:
    if is_identifier(term):
        return term in text
    stem = _stem(term)
    return term in words or any(w.startswith(stem) for w in words)


def evidence_words(text: str) -> set[str]:
    lowered = text.lower()
    words = set(_WORD.findall(lowered))
    words.update(w for m in _WORD.findall(lowered) for w in re.split(r"[-_./:]", m) if w)
    return words


def assess(question: str, hits: Sequence[Hit], depth: int = 5) -> Relevance:
    top = list(hits[:depth])
    dense_best = max((h.stages["dense"].score for h in top if "dense" in h.stages), default=0.0)
    terms = query_terms(question)
    text = "\n".join(h.chunk.index_text for h in top).lower()
    words = evidence_words(text)
    found = [t for t in terms if term_present(t, words, text)]
    coverage = len(found) / len(terms) if terms else 0.0
    missing = tuple(t for t in terms if is_identifier(t) and t not in found)
    score = DENSE_WEIGHT * max(dense_best, 0.0) + COVERAGE_WEIGHT * coverage
    return Relevance(score, dense_best, coverage, missing)
