"""The facts a sentence states (numbers with their units, dates, names) and whether its cited
passage states them too, after normalisation: "4MB" = "4 MB" = "four megabytes", "5min" =
"5 minutes" = "300 seconds", "March 3" = "3 March"; "unlimited" counts as a value. A sentence whose facts are not in the
passage it cites is never marked supported, whatever the claim checker says (an invented person's
name or a changed number must not pass).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

_WORDS: dict[str, int | Decimal] = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
    "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30,
    "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90, "hundred": 100,
    "thousand": 1000, "million": 1_000_000, "once": 1, "twice": 2, "half": Decimal("0.5"),
}  # fmt: skip
_SECONDS: dict[str, int | Decimal] = {
    "ms": Decimal("0.001"), "millisecond": Decimal("0.001"), "milliseconds": Decimal("0.001"),
    "s": 1, "sec": 1, "secs": 1, "second": 1, "seconds": 1,
    "m": 60, "min": 60, "mins": 60, "minute": 60, "minutes": 60,
    "h": 3600, "hr": 3600, "hrs": 3600, "hour": 3600, "hours": 3600,
    "d": 86400, "day": 86400, "days": 86400, "w": 604800, "week": 604800, "weeks": 604800,
}  # fmt: skip
_BYTES = {
    "b": 1, "byte": 1, "bytes": 1,
    "k": 10**3, "kb": 10**3, "kib": 2**10, "kilobyte": 10**3, "kilobytes": 10**3,
    "mb": 10**6, "mib": 2**20, "megabyte": 10**6, "megabytes": 10**6,
    "gb": 10**9, "gib": 2**30, "gigabyte": 10**9, "gigabytes": 10**9,
    "tb": 10**12, "tib": 2**40, "terabyte": 10**12, "terabytes": 10**12,
}  # fmt: skip
_BINARY = {"kb": 2**10, "kilobyte": 2**10, "kilobytes": 2**10, "mb": 2**20, "megabyte": 2**20, "megabytes": 2**20,
           "gb": 2**30, "gigabyte": 2**30, "gigabytes": 2**30, "tb": 2**40, "terabyte": 2**40, "terabytes": 2**40,
           "k": 2**10}  # fmt: skip
_MONTHS = {
    m: i
    for i, m in enumerate(
        "january february march april may june july august september october november december".split(), 1
    )
}
_MONTHS.update({m[:3]: i for m, i in list(_MONTHS.items())} | {"sept": 9})

_UNITS = frozenset({*_SECONDS, *_BYTES, "percent"})
_UNIT = "|".join(sorted({*_SECONDS, *_BYTES, "%", "percent"}, key=len, reverse=True))
_NUMBER_WORD = "|".join(sorted(_WORDS, key=len, reverse=True))
# (?!\.\d): "3.5" of a release "3.5.23" is no quantity; the release is a version (below)
_QUANTITY = re.compile(
    rf"(?<![\w.])(?P<num>\d{{1,3}}(?:,\d{{3}})+(?:\.\d+)?(?!\.\d)|\d+(?:\.\d+)?(?!\.\d)|(?:{_NUMBER_WORD})(?:[- ](?:{_NUMBER_WORD}))*)"
    rf"(?:\s*-?\s*(?P<unit>{_UNIT})\b|(?P<pct>%))?",
    re.IGNORECASE,
)
# a release or address of three or more dotted numbers: stated exactly or not at all
_VERSION = re.compile(r"(?<![\w.])\d+(?:\.\d+){2,}(?![\w]|\.\d)")
_DAY_MONTH = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({'|'.join(_MONTHS)})\b", re.IGNORECASE)
_MONTH_DAY = re.compile(rf"\b({'|'.join(_MONTHS)})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?\b", re.IGNORECASE)
_ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_CODE = re.compile(
    # (?<!\w[._-]): a code starts where its run of characters does, never inside it (linear time)
    r"\b(?=\w)(?<!\w[._-])(?=[\w.-]*[A-Za-z])(?=[\w.-]*(?:\d|_|[a-z]\.[a-z]))[\w]+(?:[._-][\w]+)+\b|\b[A-Za-z]+\d[\w-]*\b"
)
# "No limit" is a value too: a claim that something is unlimited needs a passage that says so.
_UNBOUNDED = re.compile(
    r"\b(?:unlimited|unbounded|infinite(?:ly)?|limitless|no (?:upper )?limit|without (?:a |any )?limit)\b",
    re.IGNORECASE,
)
_NAME = re.compile(r"\b[A-Z][a-zA-Z0-9]*(?:[-'][A-Za-z0-9]+)*\b")
_SKIP_NAMES = frozenset(
    "i a an the this that these those it its if when while then there here what which who how why where "
    "yes no not note see also for and or but so to in on at by of with from as is are be you your we our "
    "they their he she his her each every all any some none one".split()
)


def _value(text: str) -> Decimal | None:
    text = text.lower().replace(",", "")
    try:
        return Decimal(text)
    except InvalidOperation:
        pass
    total, current = Decimal(0), Decimal(0)
    for word in re.split(r"[- ]", text):
        if word not in _WORDS:
            return None
        v = Decimal(_WORDS[word])
        if v in (100, 1000, 1_000_000):
            current = (current or 1) * v
            if v >= 1000:
                total, current = total + current, Decimal(0)
        else:
            current += v
    return total + current


@dataclass(frozen=True)
class Quantity:
    raw: Decimal
    #: "" when no unit is attached to the number
    unit: str
    #: the values it may mean in base units ("4MB" -> 4e6 or 4*2**20 bytes; "5 min" -> 300 s)
    readings: frozenset[tuple[str, Decimal]]
    text: str


@dataclass(frozen=True)
class Facts:
    quantities: tuple[Quantity, ...]
    dates: frozenset[str]
    names: frozenset[str]
    #: the sentence says something has no limit
    unbounded: bool = False
    #: releases and addresses of three or more dotted numbers (3.5.23, 10.0.0.1)
    versions: frozenset[str] = frozenset()


def _quantities(text: str) -> list[Quantity]:
    out = []
    for m in _QUANTITY.finditer(text):
        value = _value(m.group("num"))
        if value is None:
            continue
        unit = (m.group("unit") or ("%" if m.group("pct") else "")).lower()
        if m.group("num").isalpha() and value in (0, 1) and not unit:
            continue  # "one of them", "zero-downtime": not a stated number
        if unit in ("%", "percent"):
            readings = {("%", value)}
        elif unit in _SECONDS:
            readings = {("s", value * Decimal(_SECONDS[unit]))}
        elif unit in _BYTES:
            readings = {("b", value * _BYTES[unit]), ("b", value * _BINARY.get(unit, _BYTES[unit]))}
        else:
            readings = {("", value)}
        out.append(Quantity(value, unit, frozenset(readings), m.group(0).strip()))
    return out


def _dates(text: str) -> set[str]:
    dates = {f"{int(m.group(2))}-{int(m.group(3))}" for m in _ISO.finditer(text)}
    dates |= {f"{_MONTHS[m.group(2).lower()]}-{int(m.group(1))}" for m in _DAY_MONTH.finditer(text)}
    dates |= {f"{_MONTHS[m.group(1).lower()]}-{int(m.group(2))}" for m in _MONTH_DAY.finditer(text)}
    return dates


def _names(text: str) -> set[str]:
    names = {m.group(0).lower() for m in _CODE.finditer(text)}
    for sentence in re.split(r"(?<=[.!?:;])\s+|\n", text):
        for i, m in enumerate(_NAME.finditer(sentence)):
            word = m.group(0)
            starts = sentence[: m.start()].strip() == "" or (
                i == 0 and not sentence[: m.start()].strip(" \"'(")
            )
            lowered = word.lower()
            if (
                starts
                or lowered in _SKIP_NAMES
                or lowered in _MONTHS
                or lowered in _WORDS
                or lowered in _UNITS
            ):
                continue
            names.add(word.lower())
    return names


def facts(text: str) -> Facts:
    return Facts(
        tuple(_quantities(text)),
        frozenset(_dates(text)),
        frozenset(_names(text)),
        bool(_UNBOUNDED.search(text)),
        frozenset(_VERSION.findall(text)),
    )


def _squash(text: str) -> str:
    return re.sub(r"[\s\-_.'’`\"]+", "", text.lower())


def missing_facts(sentence: str, passage: str) -> list[str]:
    """The sentence's numbers, dates and names that the passage does not state (empty: all there).

    A number must appear in the passage with the same value in base units ("5 min" = "300 s"), or,
    when either side gives no unit, as the same bare number.
    """
    said, source = facts(sentence), facts(passage)
    readings = {r for q in source.quantities for r in q.readings}
    # "3.5" is said by a passage that gives the release 3.5.24 (the series, not a quantity)
    series = {Decimal(".".join(v.split(".")[:2])) for v in source.versions}
    raw = {q.raw for q in source.quantities} | series
    bare = {q.raw for q in source.quantities if not q.unit} | series
    missing: list[str] = []
    for q in said.quantities:
        present = q.raw in raw if not q.unit else bool(q.readings & readings) or q.raw in bare
        if not present:
            missing.append(q.text)
    missing += sorted(said.dates - source.dates) + sorted(said.versions - source.versions)
    if said.unbounded and not source.unbounded:
        missing.append("no limit")
    squashed = _squash(passage)
    missing += [n for n in sorted(said.names) if _squash(n) not in squashed]
    return missing


# Stand-ins for the numbers of a (claim, premise) pair: uncommon values, so that the checker
# compares the two sides instead of judging a number by how it looks (trained on rule-made
# corruptions, it learned that round numbers such as 500 are often the changed ones).
_STAND_INS = (17, 23, 31, 43, 59, 67, 71, 83, 97, 113, 127, 137, 149, 163, 173, 181, 191, 199)
_PLAIN_NUMBER = re.compile(r"(?<![\w.,-])\d{1,3}(?:,\d{3})+(?![\d,])|(?<![\w.,-])\d+(?![\d,]|\.\d)")


def _is_year(number: str) -> bool:
    return len(number) == 4 and 1900 <= int(number) <= 2100


_SPELLED = re.compile(
    r"\b(" + "|".join(w for w, v in _WORDS.items() if isinstance(v, int) and 2 <= v <= 100) + r")\b",
    re.IGNORECASE,
)


def _as_digits(text: str, other: str) -> str:
    """``text`` with each spelled-out number ("two") written in digits when ``other`` has that
    number in digits ("2"), so that the pair shows the model one number, not two."""
    digits = {m.group(0).replace(",", "") for m in _PLAIN_NUMBER.finditer(other)}

    def swap(match: re.Match[str]) -> str:
        value = str(_WORDS[match.group(0).lower()])
        return value if value in digits else match.group(0)

    return _SPELLED.sub(swap, text)


def neutral_numbers(first: str, second: str) -> tuple[str, str]:
    """Both texts with each plain whole number replaced by a stand-in, the same number by the same
    stand-in on both sides ("500" and "500" stay equal, "500" and "5000" stay different; "two" and
    "2" are the same number). Years, decimals and numbers inside words or codes are left alone."""
    first, second = _as_digits(first, second), _as_digits(second, first)
    mapping: dict[str, str] = {}

    def swap(match: re.Match[str]) -> str:
        raw = match.group(0)
        key = raw.replace(",", "")
        if _is_year(key):
            return raw
        if key not in mapping:
            if len(mapping) >= len(_STAND_INS):
                return raw
            mapping[key] = str(_STAND_INS[len(mapping)])
        return mapping[key]

    return _PLAIN_NUMBER.sub(swap, first), _PLAIN_NUMBER.sub(swap, second)
