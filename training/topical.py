"""Topical hard negatives for the reader: units that share the question's words but not what its
answer adds (third round, ``build_data.py --topical N``).

The first reader learned topic, not answers: its negatives were siblings, other sections and
other manuals, and `same_doc`/`other_manual` units naming the question's key terms were skipped
(they might answer too). So a passage on the question's topic that does not hold the answer
scored like the answer (RGB negative rejection: "The costs of hosting the Olympics ... twelve for
the 2004 games" scored 0.96 for "Which city hosted the Olympic games in 2004?"). These negatives
are the units of the same manual and split that cover most of the question's words, minus any
that contain what the answer adds to the question (its numbers, identifiers, or most of its other
content words), which might answer it too.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from collections.abc import Sequence

from training import claims as C
from training.questions import _GENERIC
from training.units import Unit

# a negative covers at least this share of the question's word weight (IDF within its manual)
MIN_COVERAGE = 0.5
# candidates are drawn from the postings of this many of the question's rarest words
POSTING_WORDS = 4
# a unit holding this share of the answer's own content words might answer: not a negative
MAX_ANSWER_SHARE = 0.5


def _matchable(text: str) -> set[str]:
    return {w for w in C.content_words(text) if w not in _GENERIC and len(w) > 2}


def answer_words(question: str, unit: Unit) -> tuple[set[str], set[str]]:
    """What the answer adds to the question: (decisive, other). Decisive are its numbers and
    identifiers that the question lacks, any of which in a candidate disqualifies it; other are its
    remaining content words the question lacks."""
    asked = C.content_words(question) | {t.lower() for _, t in C.identifiers(question)}
    decisive = {n for n in C.numbers(unit.text) if n not in asked}
    decisive |= {t.lower() for _, t in C.identifiers(unit.text) if t.lower() not in asked}
    other = {w for w in _matchable(unit.text) if w not in asked and not w.isdigit()} - decisive
    return decisive, other


class TopicalIndex:
    """An inverted index of the units (with their heading trail) per (split, manual)."""

    def __init__(self, units: Sequence[Unit], split: dict[str, str]) -> None:
        self.words: dict[str, set[str]] = {}
        self.postings: dict[tuple[str, str], dict[str, list[Unit]]] = defaultdict(lambda: defaultdict(list))
        self.sizes: dict[tuple[str, str], int] = defaultdict(int)
        for u in units:
            if u.kind == "window" or len(u.text.split()) < 5:
                continue
            ws = _matchable(u.b)
            self.words[u.id] = ws
            postings = self.postings[(split[u.doc], u.manual)]
            self.sizes[(split[u.doc], u.manual)] += 1
            for w in ws:
                postings[w].append(u)
        self.split = split

    def idf(self, key: tuple[str, str], word: str) -> float:
        return math.log(1 + self.sizes[key] / (1 + len(self.postings[key].get(word, ()))))

    def negatives(
        self, question: str, unit: Unit, excluded: Sequence[Unit], rng: random.Random, k: int = 2
    ) -> list[Unit]:
        """Up to ``k`` units of the question's manual and split that cover at least MIN_COVERAGE
        of its word weight and hold nothing decisive of its answer, best covered first."""
        if k <= 0:
            return []
        key = (self.split[unit.doc], unit.manual)
        postings = self.postings.get(key)
        asked = _matchable(question)
        if not postings or not asked:
            return []
        weight = {w: self.idf(key, w) for w in asked}
        total = sum(weight.values())
        rare = sorted(asked, key=lambda w: len(postings.get(w, ())))[:POSTING_WORDS]
        decisive, other = answer_words(question, unit)
        excluded_ids = {u.id for u in excluded} | {m for u in excluded for m in u.members}
        excluded_texts = [C.norm(u.text) for u in excluded]
        seen: set[str] = set()
        scored: list[tuple[float, float, Unit]] = []
        for w in rare:
            for cand in postings.get(w, ()):
                if cand.id in seen or cand.id in excluded_ids:
                    continue
                seen.add(cand.id)
                ws = self.words[cand.id]
                cover = sum(weight[x] for x in asked & ws) / total
                if cover < MIN_COVERAGE:
                    continue
                if decisive & (ws | {n for n in C.numbers(cand.text)}):
                    continue  # it states a value or names what the answer names: it may answer
                if other and len(other & ws) / len(other) >= MAX_ANSWER_SHARE:
                    continue
                cn = C.norm(cand.text)
                if any(cn == t or t in cn or cn in t for t in excluded_texts):
                    continue
                scored.append((cover, rng.random(), cand))
        scored.sort(key=lambda s: (-s[0], s[1]))
        return [c for _, _, c in scored[:k]]
