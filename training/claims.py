"""Claims for the claim checker: the words, numbers and identifiers of a text, and entailed
restatements of a passage unit.

Pure functions (no model, no I/O), used by the labelled corruptions (corruptions.py) and by the
filters and pair builders of the training-data builder.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# ---------------------------------------------------------------------------------------- tokens

_WORD = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*")
_STOP = frozenset(
    "a an the of to in on for and or but is are was were be been being it its this that these those "
    "with as by at from into than then so if when which who whom whose what where how can could may "
    "might must should will would shall do does did not no nor also only any all each every some "
    "such there their they them he she his her we you your our us i one two use used using".split()
)


def words(text: str) -> list[str]:
    return [w.strip(".-+").lower() for w in _WORD.findall(text) if w.strip(".-+")]


_CAMEL = re.compile(r"\b[A-Z]?[a-z]+(?:[A-Z]+[a-z0-9]*)+\b")
_CAMEL_PART = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z0-9]+")
_OPTION_TOKEN = re.compile(r"(?<![\w-])--?[A-Za-z][\w-]*")


def content_words(text: str) -> set[str]:
    """Lower-cased words that carry content; an identifier also counts as its parts
    ("retry_interval" gives retry_interval, retry, interval)."""
    out = {m.group(0).lower() for m in _OPTION_TOKEN.finditer(text)}
    for m in _CAMEL.finditer(text):  # FlushOnTXEnd -> flush, tx, end
        out.update(
            p.lower() for p in _CAMEL_PART.findall(m.group(0)) if len(p) > 1 and p.lower() not in _STOP
        )
    for w in words(text):
        if w in _STOP or len(w) < 2:
            continue
        out.add(w)
        if any(c in w for c in "_.-"):
            out.update(p for p in re.split(r"[_.-]+", w) if len(p) > 1 and p not in _STOP)
    return out


def jaccard(a: str, b: str) -> float:
    x, y = content_words(a), content_words(b)
    if not x or not y:
        return 0.0
    return len(x & y) / len(x | y)


def norm(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.casefold()).split())


# -------------------------------------------------------------------------------------- numbers

# A number not glued to letters or to other digits' punctuation (so "mod_http2", "ipv6", "3DES",
# "x86_64" are left alone): 30, 4.5, 1,000, 0.25.
_NUMBER = re.compile(r"(?<![\w.\-/:$])(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)(?![\w.]*[A-Za-z_]\w)(?!\.\d)")


def numbers(text: str) -> list[str]:
    return [m.group(1) for m in _NUMBER.finditer(text)]


# --------------------------------------------------------------------------------- identifiers

_IDENT_PATTERNS: dict[str, re.Pattern[str]] = {
    "long_option": re.compile(r"(?<![\w-])--[a-z][a-z0-9-]+(?![\w-])"),
    "short_option": re.compile(r"(?<![\w-])-[a-zA-Z](?![\w-])"),
    "snake": re.compile(r"(?<![\w$.-])[a-z][a-z0-9]*(?:_[a-z0-9]+)+(?![\w-])"),
    "dotted": re.compile(r"(?<![\w.])[a-z][a-z0-9_]*(?:\.[a-z][a-z0-9_]*)+(?![\w])(?<!\.)"),
    "camel": re.compile(r"(?<![\w.])[A-Z][a-z]+(?:[A-Z][a-z0-9]*)+(?![\w])"),
    "variable": re.compile(r"(?<![\w])\$[A-Za-z_][A-Za-z0-9_]*"),
    "upper": re.compile(r"(?<![\w.-])[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+(?![\w])"),
    "path": re.compile(r"(?<![\w])/(?:[\w.-]+/)*[\w.-]+"),
    "hyphenated": re.compile(r"(?<![\w-])[a-z]+(?:-[a-z0-9]+){1,3}(?![\w-])"),
    "mod": re.compile(r"\bmod_[a-z0-9_]+\b"),
}
_NOT_IDENT = frozenset(["e.g", "i.e", "etc", "vs"])


def identifiers(text: str) -> list[tuple[str, str]]:
    """(shape, identifier) pairs: option names, snake_case parameters, CamelCase directives,
    variables, paths, dotted names. Hyphenated words count only when the manual uses them as
    names (see :func:`name_vocabulary`)."""
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    for shape, pattern in _IDENT_PATTERNS.items():
        for m in pattern.finditer(text):
            token = m.group(0).rstrip(".,;:")
            if token in seen or token.lower() in _NOT_IDENT or len(token) < 2:
                continue
            if shape == "dotted" and re.search(r"\.(html?|com|org|net|txt)$", token):
                shape = "file"
            seen.add(token)
            out.append((shape, token))
    return out


def name_vocabulary(texts: Iterable[str], min_count: int = 1) -> dict[str, list[str]]:
    """shape -> identifiers seen in a manual (sorted, deterministic), for name swaps."""
    counts: dict[tuple[str, str], int] = {}
    for text in texts:
        for shape, token in identifiers(text):
            counts[(shape, token)] = counts.get((shape, token), 0) + 1
    vocab: dict[str, list[str]] = {}
    for (shape, token), count in sorted(counts.items()):
        if count >= min_count and not (shape == "hyphenated" and count < 3):
            vocab.setdefault(shape, []).append(token)
    return vocab


# ------------------------------------------------------------------------- entailed restatements

_SPLITTERS = re.compile(r";\s+|,\s+(?:and|but|so|while|whereas|although|though)\s+|,\s+which\s+|\s+-{1,2}\s+")
_PARENS = re.compile(r"\s*\([^()]{1,160}\)")
_EXAMPLE_TAIL = re.compile(
    r",?\s+(?:such as|for example|for instance|e\.g\.|i\.e\.|like)\b.*$", re.IGNORECASE
)
_LEADING_CONDITION = re.compile(
    r"^(?:if|when|unless|once|after|before|while|where|although)\b", re.IGNORECASE
)
_PRONOUN_START = re.compile(r"^(?:it|this|that|these|those|they|he|she|which)\b", re.IGNORECASE)


def _finish(text: str) -> str:
    text = " ".join(text.split()).lstrip(" ,;:").rstrip(" ,;:-")
    if not text:
        return ""
    if text[0].islower() and not re.match(r"[a-z][\w.-]*[_.(]|[a-z]+[A-Z]", text):
        text = text[0].upper() + text[1:]  # not an identifier (snake_case, dotted, call(), camelCase)
    return text if text.endswith((".", "!", "?")) else text + "."


def sub_clause(sentence: str) -> str | None:
    """The first independent clause of a compound sentence ("A; B" -> "A.", "A, which B" -> "A.").

    None when the sentence has no such split, when it starts with a condition (the first clause
    alone would be stated unconditionally), or when the clause is too short to be a claim."""
    if _LEADING_CONDITION.match(sentence.strip()):
        return None
    parts = _SPLITTERS.split(sentence, maxsplit=1)
    if len(parts) < 2:
        return None
    first = _finish(parts[0])
    if len(words(first)) < 5 or norm(first) == norm(sentence):
        return None
    return first


def short_restatement(sentence: str) -> str | None:
    """The sentence without parentheses, "such as"/"for example" tails and "which" clauses."""
    if _LEADING_CONDITION.match(sentence.strip()):
        return None
    text = _PARENS.sub("", sentence)
    text = re.split(r",\s+which\s+", text, maxsplit=1)[0]
    text = _EXAMPLE_TAIL.sub("", text)
    out = _finish(text)
    if len(words(out)) < 5 or norm(out) == norm(sentence) or _PRONOUN_START.match(out):
        return None
    return out


def keeps_facts(source: str, rewrite: str) -> bool:
    """A rewrite keeps every number and identifier of the source and adds none, and is not a copy."""
    if not rewrite or norm(rewrite) == norm(source):
        return False
    if sorted(numbers(source)) != sorted(numbers(rewrite)):
        return False
    src_ids = {t for s, t in identifiers(source) if s != "hyphenated"}
    new_ids = {t for s, t in identifiers(rewrite) if s != "hyphenated"}
    if not src_ids <= new_ids or not new_ids <= src_ids | {t.rstrip(".") for t in src_ids}:
        return False
    n_src, n_new = len(words(source)), len(words(rewrite))
    if not (0.6 * n_src <= n_new <= 1.6 * n_src + 3):
        return False
    # no new capitalised names (a person or product the source does not mention)
    src_words = set(words(source))
    for w in re.findall(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]{2,}\b", rewrite):
        if w.lower() not in src_words and w.lower() not in _STOP:
            return False
    return jaccard(source, rewrite) >= 0.3
