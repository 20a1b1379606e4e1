"""The refusal guard: a calibrated relevance signal computed before any generator runs.

RRF scores are rank-only and say nothing about relevance, so the signal combines
the best dense cosine with the share of the question's salient terms found in the
evidence. Identifiers and numbers asked about must appear in the evidence at all.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import blingfire

from citeline.models import Hit
from citeline.retrieval.bm25 import STOPWORDS, is_code, is_identifier, query_terms

_WORD = re.compile(r"\w+(?:[-_./:]\w+)*")

DENSE_WEIGHT = 0.6
COVERAGE_WEIGHT = 0.4
# Share of the relevance lost when every name or plain number of the question is missing
# from all candidates. Names can be incidental ("I live in Sheffield"), so they only count
# against the relevance; codes (LDG-4012, sync_batch, 3.5.0) are decisive and refuse outright.
MISSING_PENALTY = 0.9


@dataclass(frozen=True)
class Relevance:
    score: float
    dense_best: float
    coverage: float
    missing_identifiers: tuple[str, ...]
    missing_terms: tuple[str, ...] = ()

    def to_json(self) -> dict[str, object]:
        return {
            "score": round(self.score, 4),
            "dense_best": round(self.dense_best, 4),
            "coverage": round(self.coverage, 4),
            "missing_identifiers": list(self.missing_identifiers),
            "missing_terms": list(self.missing_terms),
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


_NAME = re.compile(r"\b[A-Za-z][\w-]*[A-Z][\w-]*\b|\b[A-Z][a-z][\w-]*\b")


def named_terms(question: str) -> list[str]:
    """Product names, acronyms and proper nouns (LDAP, BigQuery, Kafka, macOS), lower-cased.

    The question's first word is skipped (it is capitalised anyway), as are stopwords.
    """
    names = []
    for m in _NAME.finditer(question):
        word = m.group(0)
        before = question[: m.start()].rstrip()
        sentence_start = not before or before.endswith((".", "?", "!", ":", '"'))
        if sentence_start and not any(c.isupper() for c in word[1:]):
            continue
        lowered = word.lower()
        if lowered not in STOPWORDS and len(lowered) > 1:
            names.append(lowered)
    return list(dict.fromkeys(names))


def weighted_coverage(terms: Sequence[str], text: str, weights: Mapping[str, float] | None = None) -> float:
    """Share of the terms found in ``text``, each weighted by its IDF when weights are given."""
    if not terms:
        return 0.0
    lowered = text.lower()
    words = evidence_words(lowered)
    total = sum((weights or {}).get(t, 1.0) for t in terms)
    found = sum((weights or {}).get(t, 1.0) for t in terms if term_present(t, words, lowered))
    return found / total if total > 0 else 0.0


# "Version 3.4.0" or "Section 8" name the number, not a product: the number alone is the key.
_GENERIC_NOUNS = frozenset(
    "version release section chapter step page part article table figure item rule level phase "
    "option error code line tier plan stage day week month year room floor building".split()
)
_VERSIONED_NAME = re.compile(r"\b([A-Z][\w-]*)\s+(v?\d+(?:\.\d+)*)\b")


def versioned_names(question: str) -> list[str]:
    """A name followed by its number ("Windows Server 2022", "MySQL 5.7"), lower-cased as a phrase.

    Such a pair names one specific thing: documents about "Server 2019" do not answer it.
    """
    return list(
        dict.fromkeys(
            f"{m.group(1)} {m.group(2)}".lower()
            for m in _VERSIONED_NAME.finditer(question)
            if m.group(1).lower() not in _GENERIC_NOUNS
        )
    )


def focus(question: str) -> str:
    """The asking part of a question that first tells a story ("I am 43 and live in Devon. ...
    Can I claim X?"): its sentences with a question mark. Names and numbers of the story are
    circumstances, not the subject, so the term checks look at the focus only."""
    if question.count(".") + question.count("?") + question.count("!") <= 1:
        return question
    _, offsets = blingfire.text_to_sentences_and_offsets(question)
    sentences = [question[a:b] for a, b in offsets]
    asking = [s for s in sentences if s.rstrip().endswith("?")]
    return " ".join(asking) if asking and len(asking) < len(sentences) else question


def assess(
    question: str,
    hits: Sequence[Hit],
    depth: int = 5,
    retrieved: Sequence[Hit] = (),
    weights: Mapping[str, float] | None = None,
) -> Relevance:
    """Relevance of the context ``hits`` to the question.

    Codes in the question (LDG-4012, sync_batch, 3.5.0) must occur somewhere in ``retrieved``
    (all candidates, not only the context): when none mentions them, the documents do not
    talk about the thing asked. Names and plain numbers that no candidate mentions lower
    the relevance instead.
    """
    top = list(hits[:depth])
    dense_best = max((h.stages["dense"].score for h in top if "dense" in h.stages), default=0.0)
    question = focus(question)
    terms = query_terms(question)
    coverage = weighted_coverage(terms, "\n".join(h.chunk.index_text for h in top), weights)
    pool = "\n".join(h.chunk.index_text for h in (retrieved or hits)).lower()
    pool_words = evidence_words(pool)
    codes = [t for t in terms if is_code(t)] + versioned_names(question)
    soft = list(
        dict.fromkeys([t for t in terms if is_identifier(t) and not is_code(t)] + named_terms(question))
    )
    missing_codes = tuple(t for t in codes if not term_present(t, pool_words, pool))
    missing_soft = tuple(t for t in soft if not term_present(t, pool_words, pool))
    score = DENSE_WEIGHT * max(dense_best, 0.0) + COVERAGE_WEIGHT * coverage
    if soft:
        score *= 1.0 - MISSING_PENALTY * len(missing_soft) / len(soft)
    return Relevance(score, dense_best, coverage, missing_codes, missing_soft)
