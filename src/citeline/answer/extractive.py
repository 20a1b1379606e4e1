"""The offline default generator: picks the sentences of the passages that best answer the question.

No LLM: every answer sentence is a verbatim unit (sentence, table row, list item) of a
numbered passage, so its citation is right by construction.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from citeline.answer.answer_type import can_answer, expected_type
from citeline.answer.relevance import weighted_coverage
from citeline.answer.units import Unit, passage_units
from citeline.embedding.base import Embedder
from citeline.errors import ConfigError
from citeline.models import Draft, DraftSentence, Passage
from citeline.retrieval.query import Query, analyze, mentions_years

if TYPE_CHECKING:
    from citeline.registry import BuildContext

SIMILARITY_WEIGHT = 0.55
OVERLAP_WEIGHT = 0.45


@dataclass(frozen=True)
class Scored:
    passage: int
    unit: Unit
    score: float


class ExtractiveGenerator:
    name = "extractive"
    context_tokens = 4096

    def __init__(
        self,
        embedder: Embedder,
        max_sentences: int = 3,
        keep_ratio: float = 0.85,
        min_score: float = 0.0,
    ) -> None:
        self.embedder = embedder
        self.min_score = min_score
        self.max_sentences = max_sentences
        self.keep_ratio = keep_ratio

    def score_units(self, question: Query | str, passages: Sequence[Passage]) -> list[Scored]:
        query = analyze(question)
        candidates: list[tuple[int, Unit, str]] = []
        for p in passages:
            for unit in passage_units(p.chunk.text, p.chunk.start):
                context = " > ".join(p.chunk.heading_trail[-2:])
                candidates.append((p.number, unit, f"{context}: {unit.text}" if context else unit.text))
        if not candidates:
            return []
        vectors = self.embedder.embed([query.text] + [c[2] for c in candidates])
        sims = vectors[1:] @ vectors[0]
        weights = query.weights or None
        kind = expected_type(query.text)
        years = query.years  # of the asking part: a story's years are circumstances
        scored = []
        for (n, unit, contextual), sim in zip(candidates, sims, strict=True):
            if not can_answer(kind, contextual):
                continue
            if not mentions_years(years, contextual):
                continue  # about another year (RGB: "revenue in Q1 2021" answered with Q1 2023)
            overlap = weighted_coverage(query.terms, contextual, weights)
            score = SIMILARITY_WEIGHT * float(sim) + OVERLAP_WEIGHT * overlap
            scored.append(Scored(n, unit, score))
        scored.sort(key=lambda s: -s.score)
        return scored

    def select(self, scored: list[Scored]) -> list[Scored]:
        chosen: list[Scored] = []
        seen: list[set[str]] = []
        for s in scored:
            if len(chosen) >= self.max_sentences:
                break
            if chosen and s.score < self.keep_ratio * chosen[0].score:
                break
            words = set(s.unit.text.lower().split())
            if any(len(words & w) / max(1, len(words | w)) > 0.7 for w in seen):
                continue  # near-duplicate of a chosen sentence (overlapping chunks repeat text)
            chosen.append(s)
            seen.append(words)
        return chosen

    def generate(self, question: Query | str, passages: Sequence[Passage]) -> Draft:
        scored = self.score_units(question, passages)
        confidence = scored[0].score if scored else 0.0
        if confidence < self.min_score:
            return Draft(sentences=(), refused=True, confidence=confidence)
        chosen = self.select(scored)
        sentences = tuple(DraftSentence(s.unit.text, (s.passage,)) for s in chosen)
        raw = " ".join(f"{s.text} [{s.citations[0]}]" for s in sentences)
        return Draft(sentences=sentences, refused=not sentences, raw=raw, confidence=confidence)

    def stream(self, question: Query | str, passages: Sequence[Passage]) -> Iterator[str]:
        """Sentence by sentence; each piece ends after its complete [n] markers."""
        draft = self.generate(question, passages)
        for i, s in enumerate(draft.sentences):
            yield ("" if i == 0 else " ") + s.text + "".join(f" [{n}]" for n in s.citations)


def extractive_factory(context: BuildContext | None, argument: str | None) -> ExtractiveGenerator:
    if context is None:
        raise ConfigError("The extractive generator needs the index's embedder (build it from settings).")
    s = context.settings
    return ExtractiveGenerator(
        context.embedder, max_sentences=s.max_answer_sentences, min_score=s.min_answer_score
    )
