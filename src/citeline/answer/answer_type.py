"""What kind of answer a question asks for, and whether a sentence can be one.

Classic IR-based QA: "how long" wants a duration, "how much does it cost" an amount
of money, "when" a date or time. A sentence that cannot be such an answer is not
chosen however similar it is, and if no passage has one, the answer is a refusal.
Likewise a sentence (with its heading) that does not name the years the question asks
about is about something else.
"""

from __future__ import annotations

import re

_UNITS = r"(?:milli)?seconds?|secs?|minutes?|mins?|hours?|hrs?|days?|weeks?|months?|years?|ms|[smhdw]"
_DURATION = re.compile(
    # "45 minutes", "5 business days", "1,500 operating hours", "7-day"
    # (?<!\d[.,]): a number starts only where a run of digits does ("1,1,1,..." stays linear)
    rf"\b(?<!\d[.,])\d[\d.,]*\s*(?:-\s*)?(?:[a-z]+\s+)?(?:{_UNITS})\b|\b(?:one|two|three|four|five|six|seven|"
    rf"eight|nine|ten|twelve|thirty|sixty|ninety)\s+(?:{_UNITS})\b",
    re.IGNORECASE,
)
_MONEY = re.compile(
    r"[$€£¥]\s*\d|\b(?<!\d[.,])\d[\d.,]*\s*(?:EUR|USD|GBP|CHF|JPY|dollars?|euros?|pounds?)\b|"
    r"\b(?:EUR|USD|GBP|CHF)\s*\d",
    re.IGNORECASE,
)
_MONTHS = "january|february|march|april|may|june|july|august|september|october|november|december"
_DATE = re.compile(
    rf"\b\d{{4}}-\d{{2}}-\d{{2}}\b|\b(?:{_MONTHS})\b|\b\d{{1,2}}:\d{{2}}\b|\b(?:19|20)\d{{2}}\b|"
    # a time of day: "9 am", "5.30 p.m.", "noon" ("When does the library open?")
    r"\b\d{1,2}(?:[.:]\d{2})?\s?[ap]\.?m\b\.?|\b(?:noon|midday|midnight|o'clock)\b|"
    r"\b(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)s?\b",
    re.IGNORECASE,
)
_NUMBER = re.compile(
    r"\d|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|hundred|"
    r"thousand|million|dozen)\b",
    re.IGNORECASE,
)
_EVERY = re.compile(
    r"\b(?:daily|weekly|monthly|yearly|annually|hourly|nightly)\b|\bevery\s+(?:\d[\d.,]*\s+|other\s+)?(?:[a-z]+\s+)?"
    r"(?:second|minute|hour|day|week|month|quarter|year|night|morning|monday|tuesday|wednesday|"
    r"thursday|friday|saturday|sunday)s?\b",
    re.IGNORECASE,
)

_RULES: list[tuple[re.Pattern[str], str | None]] = [
    # "Which setting controls how many days..." asks for the setting, not the number.
    (
        re.compile(
            r"^\s*(?:which|what)\s+(?:\w+\s+)?(?:setting|option|command|file|tool|role|variable|parameter|"
            r"flag|key|field|port|team|connector|endpoint|format)s?\b",
            re.IGNORECASE,
        ),
        None,
    ),
    (
        re.compile(
            r"\bhow (?:much|expensive)\b.*\b(?:cost|price|pay|charge|fee)|\b(?:cost|price|fee)s? of\b|"
            r"\bhow much (?:do|does|will|would) .* (?:cost|pay)",
            re.IGNORECASE,
        ),
        "money",
    ),
    (
        re.compile(
            r"\bhow long\b|\bfor how many (?:seconds|minutes|hours|days|weeks|months|years)\b|"
            r"\bhow many (?:seconds|minutes|hours|days|weeks|months|years)\b|\bhow often\b",
            re.IGNORECASE,
        ),
        "duration",
    ),
    (
        re.compile(r"^\s*when\b|\bwhat (?:date|day|time|year)\b|\bon which (?:date|day)\b", re.IGNORECASE),
        "date",
    ),
    (
        re.compile(
            r"\bhow (?:many|much|big|large|small|fast)\b|\bwhat is the (?:maximum|minimum|max|min|"
            r"number|size|limit|default value)\b|\bnumber of\b",
            re.IGNORECASE,
        ),
        "number",
    ),
]

_CHECKS = {"money": _MONEY, "duration": _DURATION, "date": _DATE, "number": _NUMBER}


def expected_type(question: str) -> str | None:
    for pattern, kind in _RULES:
        if pattern.search(question):
            return kind
    return None


def can_answer(kind: str | None, text: str) -> bool:
    if kind is None:
        return True
    if kind == "duration":
        # "how often" is also answered by "every Monday" or "weekly".
        return bool(_DURATION.search(text) or _EVERY.search(text))
    return bool(_CHECKS[kind].search(text))
