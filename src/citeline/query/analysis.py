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
* ``qualifiers``: versions named in passing ("in Node 18", "since 3.7", "on Postfix 3.x"): the
  question is about something else, asked for that version; documents need not repeat the number.
  A question about a release itself ("What is new in 4.0?", "Is 3.7 supported with ...?") keeps its
  versions as codes.
* ``weights``: IDF of each term over the documents the asker may read (filled by retrieval).
* ``slot``: what the asking part asks for: an attribute (default, maximum, version, ...) of a
  subject (its identifiers), answered by a value of some kind (query/slot.py).
"""

from __future__ import annotations

import re
from collections.abc import Container, Iterable, Mapping
from dataclasses import dataclass, field, replace

from citeline.query.english import english_words
from citeline.query.slot import Slot, asked_slot
from citeline.text.terms import STOPWORDS, is_code, is_identifier, query_terms

# Matches start where a run of word characters and hyphens starts (linear time on "a-a-a-...").
_NAME = re.compile(r"\b(?<![\w-])[A-Za-z][\w-]*[A-Z][\w-]*\b|\b[A-Z][a-z][\w-]*\b")
_YEAR = re.compile(r"\b(?:1[5-9]|20)\d{2}\b")
# "Version 3.4.0" or "Section 8" name the number, not a product: the number alone is the key.
_GENERIC_NOUNS = frozenset(
    "version release section chapter step page part article table figure item rule level phase "
    "option error code line tier plan stage day week month year room floor building".split()
)
# "30,000": one number, not the terms "30" and "000"
# Words that say what is asked (a default, a limit, a version), not what it is about
ASKING_WORDS = frozenset(
    """default defaults maximum max minimum min limit limits version versions release value values
    unless otherwise configured configure set setting change specify specified give given name named
    pass told anything nothing left unset omitted first kind sort type happens happen mean means
    long often big large small exactly number amount count one without cannot asked ask naming""".split()
)
# A configuration name written in CamelCase ("MaxSolutions", "PerSourceMaxStartups"): as exact as a
# snake_case one, so a question naming one that no passage mentions is not about these documents
_CAMEL_CASE = re.compile(r"\b[A-Z][a-z]+(?:[A-Z][a-z0-9]+)+\b|\b[a-z]+(?:[A-Z][a-z0-9]+)+\b")
_GROUPED_NUMBER = re.compile(r"(?<![\d.,])\d{1,3}(?:,\d{3})+(?!\d|[.,]\d)")
_UNSPACED_STOP = re.compile(r"(?<=[a-z])\.(?=[A-Z][a-z])")
_VERSIONED_NAME = re.compile(r"\b(?<![\w-])([A-Z][\w-]*+)\s+(v?\d+(?:\.\d+)*)\b")
# A version after a preposition qualifies the question: "in Node 18", "since 3.7", "with Python 3.11"
_QUALIFIER = re.compile(
    r"\b(?i:in|since|as of|for|with|on|from|after|before|until|using|under|of|to)\s+"
    r"(?:(?i:version|release)\s+(?P<n1>v?\d+(?:\.\d+)*)|(?P<name>[A-Z][\w.+-]*)\s+(?P<n2>v?\d+(?:\.\d+)*)|"
    r"(?P<n3>v\d+(?:\.\d+)*|\d+\.\d+(?:\.\d+)*))(?:\.[x*])?(?![\w.])"
)
# ... unless the question is about the release itself
_ABOUT_RELEASE = re.compile(
    r"\b(?:new|newer|changes?|changed|remov\w*|add(?:ed|s)?|deprecat\w*|introduc\w*|releas\w*|"
    r"support\w*|end[- ]of[- ]life|eol|differ\w*|upgrad\w*|future|latest|upcoming|roadmap|plann\w*|"
    r"compatib\w*|still)\b",
    re.IGNORECASE,
)


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
    qualifiers: tuple[str, ...] = ()
    slot: Slot = field(default_factory=lambda: asked_slot(""))

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
    camel = {m.lower() for m in _CAMEL_CASE.findall(asking)}
    codes = [t for t in focus_terms if is_code(t) or t in camel] + versioned_names(asking)
    grouped = _GROUPED_NUMBER.findall(asking)
    pieces = {piece for number in grouped for piece in number.split(",")}
    names = [
        t
        for t in focus_terms
        if is_identifier(t) and not is_code(t) and t not in pieces and not english_compound(t)
    ]
    known_codes = set(codes)
    names += [number.replace(",", "") for number in grouped] + [
        t for t in named_terms(asking) if t not in known_codes
    ]
    qualifiers = version_qualifiers(asking)
    if qualifiers:
        numbers = {q.split()[-1].lower() for q in qualifiers}
        numbers |= {f"{n}.x" for n in numbers} | {f"{n}.*" for n in numbers}

        def qualifying(term: str) -> bool:
            return term in numbers or term.split()[-1] in numbers or term in {q.lower() for q in qualifiers}

        codes = [c for c in codes if not qualifying(c)]
        names = [n for n in names if not qualifying(n)]
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
        qualifiers=tuple(qualifiers),
        slot=replace(
            asked_slot(asking),
            names=tuple(n for n in names if not n.isdigit()),
            topic=tuple(t for t in focus_terms if t not in ASKING_WORDS and t not in known),
        ),
    )


def _english() -> Container[str]:
    """wordfreq's large English list (321,000 words from books, news, the web and subtitles),
    looked up in a sorted copy in the cache folder (query/english.py): loading wordfreq
    costs a one-shot command more than the rest of its query analysis."""
    return english_words()


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
    # ~0.1 s to load: only questions of several sentences need it
    from citeline.text.sentences import blingfire

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


def version_qualifiers(question: str) -> list[str]:
    """The versions ``question`` names in passing, as written ("Node 18", "3.7"); none when it
    asks about a release itself (what is new, removed, supported, when it ends)."""
    if _ABOUT_RELEASE.search(question):
        return []
    out = []
    for m in _QUALIFIER.finditer(question):
        name, number = m.group("name"), m.group("n1") or m.group("n2") or m.group("n3")
        if name and name.lower() in STOPWORDS:
            name = None
        if _YEAR.fullmatch(number):
            continue  # "in 2021" asks about a year (``years``), not a release
        out.append(f"{name} {number}" if name else number)
    return list(dict.fromkeys(out))


def years_in(text: str) -> set[str]:
    return set(_YEAR.findall(text))


def mentions_years(years: frozenset[str] | set[str], text: str) -> bool:
    """True when ``text`` names every year asked about (or none was asked about)."""
    return not years or set(years) <= years_in(text)
