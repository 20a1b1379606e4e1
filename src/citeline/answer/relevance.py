"""The refusal guard: a calibrated relevance signal computed before any generator runs.

RRF scores are rank-only and say nothing about relevance, so the signal combines
the best dense cosine with the share of the question's salient terms found in the
evidence. Identifiers and numbers asked about must appear in the evidence at all; names, and
words no English word list knows ("certbot"), that no candidate mentions lower the relevance.
"""

from __future__ import annotations

import difflib
import itertools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from citeline.jsonable import Jsonable, json_spec, omit_false
from citeline.query.analysis import Query, years_in
from citeline.text.terms import is_identifier, joined_forms
from citeline.types import Hit

_WORD = re.compile(r"\w+(?:[-_./:]\w+)*")
# "3.x", "2.4.*", "v5.x": a release series; any release of it in the text mentions it. It starts
# where no number goes on, so a run of "1.1.1..." is read once (the regex audit)
_SERIES = re.compile(r"(?<![\d.])(v?\d+(?:\.\d+)*)\.[x*]", re.IGNORECASE)
# A versioned name ("mysql 5.7", "chronicles 2", "election 2017"; query/analysis.py: versioned_names)
_VERSIONED = re.compile(r"([a-z][\w-]*) (v?\d+(?:\.\d+)*)")

DENSE_WEIGHT = 0.6
COVERAGE_WEIGHT = 0.4
# Share of the relevance lost when every name or plain number of the question is missing
# from all candidates. Names can be incidental ("I live in Sheffield"), so they only count
# against the relevance; codes (LDG-4012, sync_batch, 3.5.0) are decisive and refuse outright.
MISSING_PENALTY = 0.9
# difflib's ratio above which two words are one spelled two ways: "microenviroment" and
# "microenvironment" score 0.97, "concurrencyremote" and "concurrency" 0.79
TYPO_SIMILARITY = 0.85


@dataclass(frozen=True)
class Relevance(Jsonable):
    score: float = field(metadata=json_spec(digits=4))
    dense_best: float = field(metadata=json_spec(digits=4))
    coverage: float = field(metadata=json_spec(digits=4))
    missing_identifiers: tuple[str, ...]
    missing_terms: tuple[str, ...] = ()
    #: the dense side did not answer (circuit breaker): the score is the keyword coverage alone
    keyword_only: bool = field(default=False, metadata=json_spec(omit=omit_false))


def _stem(term: str) -> str:
    """A light suffix strip so "configured" meets "configuration"; identifiers stay exact."""
    if is_identifier(term) or len(term) <= 4:
        return term
    for suffix in ("ations", "ation", "ings", "ing", "ies", "ied", "ed", "es", "s", "ly", "er", "ers"):
        if term.endswith(suffix) and len(term) - len(suffix) >= 4:
            return term[: -len(suffix)]
    return term


def term_present(term: str, words: set[str], text: str, *, whole_numbers: bool = False) -> bool:
    """Whether ``text`` (lower-cased; ``words``: its evidence_words) mentions ``term``.
    ``whole_numbers``: a plain number must occur as a whole number (the guard's check of what the
    question names); else as any digits, as the coverage scores were calibrated with."""
    series = _SERIES.fullmatch(term)
    if series:
        return re.search(rf"(?<![\w.]){re.escape(series.group(1))}\.\d", text) is not None
    versioned = _VERSIONED.fullmatch(term)
    if versioned:
        return versioned_name_present(versioned.group(1), versioned.group(2), words, text)
    if whole_numbers and term.isdigit():
        return integer_present(term, text)
    if is_identifier(term):
        # a PDF drawn from LaTeX often loses the underscores of names set in text ("GPVAL ERRNO")
        if term in text or ("_" in term and term.replace("_", " ") in text):
            return True
        return compound_present(term, words, text)
    stem = _stem(term)
    return (
        term in words
        or any(w.startswith(stem) for w in words)
        # a unit of measure written against its number: "a total size of 1TiB" for "1 TiB"
        or (term.isalpha() and re.search(rf"\d{re.escape(term)}(?![^\W\d_])", text) is not None)
    )


# Two words or a number and a word joined by a hyphen: "ascii-art", "2048-bit", "read-only"
_COMPOUND = re.compile(r"([a-z]+|\d+)-([a-z]+)")


def compound_present(term: str, words: set[str], text: str) -> bool:
    """A hyphenated compound as prose also writes it: apart or joined ("an ASCII art
    representation" for "ascii-art"), or a measure by its number and unit ("-O bits=2048" for
    "2048-bit"). Codes ("LDG-4012", "x11-forwarding") are left to the exact match."""
    compound = _COMPOUND.fullmatch(term)
    if compound is None:
        return False
    head, tail = compound.groups()
    if head.isdigit():
        return integer_present(head, text) and term_present(tail, words, text)
    joined = any(form in words for form in joined_forms(term))
    return joined or re.search(rf"(?<![\w-]){head}\s+{tail}(?![\w-])", text) is not None


def integer_present(number: str, text: str) -> bool:
    """A whole number, not a piece of another: "30" is not in "300", "2030" or "3.30", and
    "30000" is in "30,000" or "30 000" (a thousands separator between any groups of three)."""
    head = len(number) % 3 or 3
    groups = [number[:head]] + [number[i : i + 3] for i in range(head, len(number), 3)]
    pattern = r"(?<![\d.,])" + r"[,\u00a0\u202f ]?".join(groups) + r"(?!\d|[.,]\d)"
    return re.search(pattern, text) is not None


def versioned_name_present(name: str, number: str, words: set[str], text: str) -> bool:
    """A name with its number, however the text writes the pair: "mysql 5.7" in "MySQL(TM) 5.7",
    "No.1" for "no 1", "Postfix version 3" for "postfix 3". A year is an edition, and prose puts
    it anywhere ("the 2021 US Open" for "open 2021"): the name and the year in the same text."""
    if years_in(number) == {number}:
        return number in words and term_present(name, words, text)
    pattern = rf"(?<![\w-]){re.escape(name)}[^\w\s]*\s*(?:(?:version|release)\s+)?{re.escape(number)}(?!\d)"
    return re.search(pattern, text) is not None


def spelled_in(word: str, words: set[str], text: str) -> bool:
    """Whether ``text`` (lower-cased; ``words``: its evidence_words) uses ``word``, allowing for a
    typo ("microenviroment", "chenodeosycholic") and for a compound written apart ("panicprone"
    for "panic-prone"): an unknown word of the question is as often a misspelling as a name."""
    if term_present(word, words, text):
        return True
    tokens = re.findall(r"[^\W_]+", text)
    if any(a + b == word for a, b in itertools.pairwise(tokens)):
        return True
    similar = [w for w in words if w[:1] == word[:1] and abs(len(w) - len(word)) <= 2]
    return bool(difflib.get_close_matches(word, similar, n=1, cutoff=TYPO_SIMILARITY))


def evidence_words(text: str) -> set[str]:
    lowered = text.lower()
    words = set(_WORD.findall(lowered))
    words.update(w for m in _WORD.findall(lowered) for w in re.split(r"[-_./:]", m) if w)
    return words


def weighted_coverage(terms: Sequence[str], text: str, weights: Mapping[str, float] | None = None) -> float:
    """Share of the terms found in ``text``, each weighted by its IDF when weights are given."""
    if not terms:
        return 0.0
    lowered = text.lower()
    words = evidence_words(lowered)
    total = sum((weights or {}).get(t, 1.0) for t in terms)
    found = sum((weights or {}).get(t, 1.0) for t in terms if term_present(t, words, lowered))
    return found / total if total > 0 else 0.0


def assess(
    query: Query,
    hits: Sequence[Hit],
    depth: int = 5,
    retrieved: Sequence[Hit] = (),
    keyword_only: bool = False,
) -> Relevance:
    """Relevance of the context ``hits`` to the question.

    Codes in the question (LDG-4012, sync_batch, 3.5.0) must occur somewhere in ``retrieved``
    (all candidates, not only the context): when none mentions them, the documents do not
    talk about the thing asked. Names, plain numbers and words no English word list knows
    ("certbot") that no candidate mentions lower the relevance instead. Term weights are the
    query's (IDF over what the asker may read).
    ``keyword_only`` (the dense side did not answer): the score is the weighted coverage alone.
    """
    top = list(hits[:depth])
    dense_best = max((h.stages["dense"].score for h in top if "dense" in h.stages), default=0.0)
    coverage = weighted_coverage(
        query.focus_terms, "\n".join(h.chunk.index_text for h in top), query.weights or None
    )
    pool = "\n".join(h.chunk.index_text for h in (retrieved or hits)).lower()
    pool_words = evidence_words(pool)
    missing_codes = tuple(t for t in query.codes if not term_present(t, pool_words, pool, whole_numbers=True))
    missing_soft = tuple(t for t in query.names if not term_present(t, pool_words, pool, whole_numbers=True))
    # an unknown word ("certbot") the candidates never use counts as a missing name; one they use
    # is an ordinary term ("tlsproxy"), and does not dilute the names' penalty (counted among the
    # names, "tlsproxy" let golden dev-extra's "How many tlsproxy(8) processes should I allow for
    # 2,000 ... sessions?" through)
    missing_unknown = tuple(t for t in query.unknown if not spelled_in(t, pool_words, pool))
    # keyword only (the dense side did not answer): the weighted coverage is the whole signal
    score = coverage if keyword_only else DENSE_WEIGHT * max(dense_best, 0.0) + COVERAGE_WEIGHT * coverage
    if query.names or missing_unknown:
        missing = len(missing_soft) + len(missing_unknown)
        score *= 1.0 - MISSING_PENALTY * missing / (len(query.names) + len(missing_unknown))
    missing_soft += missing_unknown
    return Relevance(score, dense_best, coverage, missing_codes, missing_soft, keyword_only)
