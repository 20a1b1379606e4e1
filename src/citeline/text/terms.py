"""Keyword-side query handling: salient terms and the FTS5 MATCH expression for BM25."""

from __future__ import annotations

import re
from typing import Protocol


class Analysed(Protocol):
    """A question with its terms found once (query/analysis.py:Query)."""

    @property
    def text(self) -> str: ...

    @property
    def terms(self) -> tuple[str, ...]: ...


# Identifiers such as LDG-4012, sync.batch_size or v2.1.0 are kept whole (matched as phrases).
_TERM = re.compile(r"\w+(?:[-_./:]\w+)*", re.UNICODE)

STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further had
    has have having he her here hers herself him himself his how i if in into is it its itself just
    me more most my myself no nor not now of off on once only or other our ours ourselves out over own
    same she should so some such than that the their theirs them themselves then there these they this
    those through to too under until up very was we were what when where which while who whom why will
    with would you your yours yourself yourselves tell please show explain describe give list much many
    use used using get got need needs want know does doesn't don't isn't aren't i'm it's what's
    i.e e.g etc vs cf viz""".split()  # abbreviations name nothing: "i.e." is no missing name
)


def query_terms(query: str) -> list[str]:
    """Terms of a query in order, lower-cased, without stopwords and duplicates."""
    seen: dict[str, None] = {}
    for match in _TERM.finditer(query.lower()):
        term = match.group(0).strip("._-/:")
        if term and term not in STOPWORDS:
            seen.setdefault(term, None)
    return list(seen)


_VERSION = re.compile(r"(?<!\d)\d++(?:\.\d++){2,}")
# An amount written as an adjective ("2048-bit", "64-bit", "10-second") describes, it names nothing:
# the manual writes "bits=2048"
_MEASURE = re.compile(r"\d[\d.]*-[a-z]+")


def is_code(term: str) -> bool:
    """An exact token with no paraphrase: letters mixed with digits (LDG-4012, v2, sha256), a
    snake_case name, or a dotted version or address (3.5.0). Plain numbers and hyphenated or
    dotted words ("part-time", a missing space after a full stop) and amounts written as adjectives
    ("2048-bit") are not codes."""
    if _MEASURE.fullmatch(term):
        return False
    has_digit = any(ch.isdigit() for ch in term)
    has_alpha = any(ch.isalpha() for ch in term)
    return (has_digit and has_alpha) or "_" in term or bool(_VERSION.fullmatch(term))


def is_identifier(term: str) -> bool:
    """Codes, numbers, option names: the exact tokens users search for verbatim."""
    return any(ch.isdigit() for ch in term) or bool(re.search(r"[-_./:]", term))


def keyword_phrases(query: Analysed | str, max_terms: int = 32) -> list[str]:
    """The quoted units of the keyword search, in order: each term (a compound identifier is one
    phrase of several tokens). Every keyword engine ORs these, so all stores search alike."""
    text = query if isinstance(query, str) else query.text
    terms = list(query_terms(text) if isinstance(query, str) else query.terms)[:max_terms]
    if not terms:
        # A question made only of stopwords still deserves an answer attempt.
        terms = [m.group(0) for m in _TERM.finditer(text.lower())][:max_terms]
    # a hyphenated word is also searched as one word: "re-read" finds "sshd rereads its configuration"
    return list(dict.fromkeys(p for t in terms for p in (t, *joined_forms(t))))


# Two or more words of letters joined by hyphens ("re-read", "e-mail"), not a code ("ldg-4012")
_HYPHENATED = re.compile(r"[a-z]+(?:-[a-z]+)+")


def joined_forms(term: str) -> tuple[str, ...]:
    """A hyphenated word written as one ("re-read" -> "reread"); nothing for a code."""
    return (term.replace("-", ""),) if _HYPHENATED.fullmatch(term) else ()


def fts_quote(phrase: str) -> str:
    return '"' + phrase.replace('"', '""') + '"'


def fts_match_expression(query: Analysed | str, max_terms: int = 32) -> str | None:
    """An OR of quoted terms (phrases for compound identifiers); None if nothing is searchable."""
    terms = keyword_phrases(query, max_terms)
    if not terms:
        return None
    return " OR ".join(fts_quote(t) for t in terms)
