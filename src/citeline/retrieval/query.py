"""The question, analysed once: a frozen Query built at the top of `ask`/`search` and passed to
retrieval, reranking, the refusal guard and the generators, so no stage re-derives what an
earlier one already knew.

* ``terms``: salient terms in order, lower-cased, stopwords dropped (the keyword side's terms).
* ``focus``: the asking part of a question that first tells a story ("I am 43 and live in
  Devon. ... Can I claim X?"): its sentences with a question mark. Names and numbers of the
  story are circumstances, not the subject, so the refusal guard looks at ``focus_terms``.
* ``codes``: exact tokens with no paraphrase (LDG-4012, sync_batch, 3.5.0) and versioned names
  ("windows server 2022"): when no candidate mentions them, the documents do not hold the answer.
* ``names``: other identifiers, product names and proper nouns (softer evidence); a number written
  with thousands separators ("30,000") is one name ("30000").
* ``unknown``: words no English word list knows ("certbot", "mailertable"): written in lower case,
  they are still most likely the name of a tool or a thing, and as soft as ``names``.
* ``years``: years the question names; an answer about another year is wrong.
* ``weights``: IDF of each term over the documents the asker may read (filled by retrieval).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

import blingfire

from citeline.retrieval.bm25 import STOPWORDS, is_code, is_identifier, query_terms

# Matches start where a run of word characters and hyphens starts (linear time on "a-a-a-...").
_NAME = re.compile(r"\b(?<![\w-])[A-Za-z][\w-]*[A-Z][\w-]*\b|\b[A-Z][a-z][\w-]*\b")
_YEAR = re.compile(r"\b(?:1[5-9]|20)\d{2}\b")
# "Version 3.4.0" or "Section 8" name the number, not a product: the number alone is the key.
_GENERIC_NOUNS = frozenset(
    "version release section chapter step page part article table figure item rule level phase "
    "option error code line tier plan stage day week month year room floor building".split()
)
# "30,000": one number, not the terms "30" and "000"
_GROUPED_NUMBER = re.compile(r"(?<![\d.,])\d{1,3}(?:,\d{3})+(?!\d|[.,]\d)")
_UNSPACED_STOP = re.compile(r"(?<=[a-z])\.(?=[A-Z][a-z])")
_VERSIONED_NAME = re.compile(r"\b(?<![\w-])([A-Z][\w-]*+)\s+(v?\d+(?:\.\d+)*)\b")


@dataclass(frozen=True)
class Query:
    text: str
    focus: str
    terms: tuple[str, ...]
    focus_terms: tuple[str, ...]
    codes: tuple[str, ...]
    names: tuple[str, ...]
    years: frozenset[str]
    weights: Mapping[str, float] = field(default_factory=dict, compare=False)
    unknown: tuple[str, ...] = ()

    def with_weights(self, weights: Mapping[str, float]) -> Query:
        return replace(self, weights=dict(weights))


def analyze(question: str | Query) -> Query:
    """The Query for a question (a Query passes through unchanged)."""
    if isinstance(question, Query):
        return question
    # "...last year.My income...": a full stop without its space ends a sentence, not a name
    text = _UNSPACED_STOP.sub(". ", " ".join(question.split()))
    asking = focus(text)
    focus_terms = tuple(query_terms(asking))
    codes = [t for t in focus_terms if is_code(t)] + versioned_names(asking)
    grouped = _GROUPED_NUMBER.findall(asking)
    pieces = {piece for number in grouped for piece in number.split(",")}
    names = [
        t
        for t in focus_terms
        if is_identifier(t) and not is_code(t) and t not in pieces and not english_compound(t)
    ]
    names += [number.replace(",", "") for number in grouped] + named_terms(asking)
    known = set(codes) | set(names)
    return Query(
        text=text,
        focus=asking,
        terms=tuple(query_terms(text)),
        focus_terms=focus_terms,
        codes=tuple(dict.fromkeys(codes)),
        names=tuple(dict.fromkeys(names)),
        years=frozenset(_YEAR.findall(asking)),
        unknown=tuple(unknown_words(t for t in focus_terms if t not in known)),
    )


def _english() -> Mapping[str, float]:
    """wordfreq's large English list (321,000 words from books, news, the web and subtitles),
    loaded on first use and kept by wordfreq itself (a copy would cost 16 MB more)."""
    from wordfreq import get_frequency_dict

    return get_frequency_dict("en", wordlist="large")


def unknown_words(terms: Iterable[str]) -> list[str]:
    """The terms that are words of letters (four or more) no English word list knows: "certbot",
    "concurrencyremote". Misspellings are among them too, so they only ever count as soft evidence."""
    return [t for t in terms if len(t) >= 4 and t.isalpha() and t not in _english()]


def english_compound(term: str) -> bool:
    """A hyphenated word made of English words ("mail-client", "built-in", "time-to-live") is
    ordinary prose, not a name the documents must spell the same way; "opendkim-genkey" is a name."""
    parts = term.split("-")
    return len(parts) > 1 and all(p.isalpha() and p in _english() for p in parts)


def focus(question: str) -> str:
    """The asking part of a question that first tells a story: its sentences with a question mark."""
    if question.count(".") + question.count("?") + question.count("!") <= 1:
        return question
    _, offsets = blingfire.text_to_sentences_and_offsets(question)
    sentences = [question[a:b] for a, b in offsets]
    asking = [s for s in sentences if s.rstrip().endswith("?")]
    return " ".join(asking) if asking and len(asking) < len(sentences) else question


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


def years_in(text: str) -> set[str]:
    return set(_YEAR.findall(text))


def mentions_years(years: frozenset[str] | set[str], text: str) -> bool:
    """True when ``text`` names every year asked about (or none was asked about)."""
    return not years or set(years) <= years_in(text)
