"""Claim checks: does the cited passage support the sentence?

The offline default is a heuristic and says so: it checks that the sentence's numbers
and salient terms occur in the cited passage and how close the sentence is, by
embedding, to the passage's best-matching unit. It catches citations of the wrong
passage and invented numbers; it cannot catch a subtle paraphrase that flips meaning.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from citeline.answer.relevance import evidence_words, term_present
from citeline.answer.units import Unit, passage_units
from citeline.embedding.base import Embedder
from citeline.retrieval.bm25 import query_terms

_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


@dataclass(frozen=True)
class Support:
    supported: bool
    score: float
    # per cited passage number: the best supporting unit (document offsets)
    quotes: dict[int, tuple[int, int]]
    reason: str = ""


class Verifier(Protocol):
    name: str

    def check(self, sentence: str, cited: Sequence[tuple[int, str, int]]) -> Support:
        """``cited``: (passage number, passage text, passage start in its document) per citation."""
        ...


class HeuristicVerifier:
    """Numbers and salient terms present, plus embedding similarity to the best unit (offline default)."""

    name = "heuristic"

    def __init__(self, embedder: Embedder, threshold: float = 0.55) -> None:
        self.embedder = embedder
        self.threshold = threshold

    def check(self, sentence: str, cited: Sequence[tuple[int, str, int]]) -> Support:
        if not cited:
            return Support(False, 0.0, {}, "no valid citation")
        units_by_n: dict[int, list[Unit]] = {}
        for n, text, start in cited:
            units_by_n[n] = passage_units(text, start) or [Unit(start, start + len(text), text, "sentence")]
        all_units = [(n, u) for n, us in units_by_n.items() for u in us]
        vectors = self.embedder.embed([sentence] + [u.text for _, u in all_units])
        sims = vectors[1:] @ vectors[0]
        quotes: dict[int, tuple[int, int]] = {}
        for n in units_by_n:
            idx = [i for i, (m, _) in enumerate(all_units) if m == n]
            best = idx[int(np.argmax(sims[idx]))]
            quotes[n] = (all_units[best][1].start, all_units[best][1].end)
        similarity = float(sims.max()) if len(sims) else 0.0
        evidence = "\n".join(text for _, text, _ in cited)
        lowered = evidence.lower()
        words = evidence_words(lowered)
        numbers = _NUMBER.findall(sentence)
        missing_numbers = [x for x in numbers if x not in evidence]
        terms = query_terms(sentence)
        share = sum(term_present(t, words, lowered) for t in terms) / len(terms) if terms else 1.0
        score = 0.5 * share + 0.5 * max(similarity, 0.0)
        if missing_numbers:
            return Support(False, score * 0.5, quotes, f"numbers not in the cited passage: {missing_numbers}")
        supported = score >= self.threshold
        return Support(supported, score, quotes, "" if supported else "weak overlap with the cited passage")
