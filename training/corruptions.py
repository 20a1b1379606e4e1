"""Labelled corruptions of claims for the claim checker.

Pure functions (no model, no I/O). Every corruption takes the claim, the premise it must contradict
or not be entailed by, and a seeded ``random.Random``; it returns a new sentence of its kind, or
None when the kind does not apply. It never returns the claim itself, and what it introduces (a new
number, name, year, unit or person) never occurs in the premise, so the label "not entailed" holds.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Mapping, Sequence

from training.claims import _NUMBER, _STOP, identifiers, norm

# ------------------------------------------------------------------------------ numbers & units

_YEAR = re.compile(r"(?<![\w.\-/])(19[5-9]\d|20[0-4]\d)(?![\w.\-/]\w)")
_MONTHS = "January February March April May June July August September October November December".split()
_MONTH = re.compile(r"\b(" + "|".join(_MONTHS) + r")\b")
_WEEKDAYS = "Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split()
_WEEKDAY = re.compile(r"\b(" + "|".join(_WEEKDAYS) + r")\b")

# unit words, each with the alternatives it may become (same dimension, different value)
_UNIT_SWAPS: dict[str, tuple[str, ...]] = {
    "milliseconds": ("seconds", "microseconds"),
    "microseconds": ("milliseconds", "nanoseconds"),
    "nanoseconds": ("microseconds",),
    "seconds": ("minutes", "milliseconds"),
    "second": ("minute", "millisecond"),
    "minutes": ("seconds", "hours"),
    "minute": ("second", "hour"),
    "hours": ("minutes", "days"),
    "hour": ("minute", "day"),
    "days": ("hours", "weeks"),
    "day": ("hour", "week"),
    "weeks": ("days", "months"),
    "week": ("day", "month"),
    "months": ("weeks", "years"),
    "years": ("months", "days"),
    "bytes": ("kilobytes", "bits"),
    "byte": ("kilobyte", "bit"),
    "bits": ("bytes",),
    "kilobytes": ("megabytes", "bytes"),
    "megabytes": ("gigabytes", "kilobytes"),
    "gigabytes": ("megabytes", "terabytes"),
    "KB": ("MB",),
    "kB": ("MB",),
    "KiB": ("MiB",),
    "MB": ("GB", "KB"),
    "MiB": ("GiB", "KiB"),
    "GB": ("MB", "TB"),
    "GiB": ("MiB",),
    "TB": ("GB",),
    "ms": ("s", "us"),
    "percent": ("times",),
    "kbps": ("Mbps",),
    "Mbps": ("kbps", "Gbps"),
    "Gbps": ("Mbps",),
    "Hz": ("kHz",),
    "kHz": ("Hz", "MHz"),
    "MHz": ("kHz", "GHz"),
}
_UNIT_WORD = re.compile(r"\b(" + "|".join(sorted(_UNIT_SWAPS, key=len, reverse=True)) + r")\b")
# a number glued to a short unit: 30s, 5m, 4MB, 512k, 10ms, 2h, 1d
_GLUED = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)(ms|s|m|h|d|w|k|K|M|G|KB|MB|GB|kB|KiB|MiB|GiB)\b")
_GLUED_SWAPS = {
    "ms": ("s", " seconds", " minutes"),
    "s": (" minutes", "ms", " hours"),
    "m": ("h", " seconds", " hours"),
    "h": ("m", " days", " minutes"),
    "d": ("h", " weeks"),
    "w": ("d",),
    "k": ("M",),
    "K": ("M",),
    "M": ("G", "K"),
    "G": ("M", "T"),
    "KB": ("MB",),
    "kB": ("MB",),
    "MB": ("GB", "KB"),
    "GB": ("MB", "TB"),
    "KiB": ("MiB",),
    "MiB": ("GiB", "KiB"),
    "GiB": ("MiB",),
}


def _other_number(value: str, rng: random.Random) -> str:
    plain = value.replace(",", "")
    if "." in plain:
        whole, frac = plain.split(".", 1)
        choices = [f"{int(whole) + 1}.{frac}", f"{int(whole) * 2 + 1}.{frac}"]
        if int(whole) > 0:
            choices.append(f"{int(whole) - 1}.{frac}")
        return rng.choice(choices)
    n = int(plain)
    if n == 0:
        out = rng.choice([1, 10, 100])
    elif n == 1:
        out = rng.choice([0, 2, 3, 10])
    elif n < 10:
        out = rng.choice([n + 1, n - 1, n * 2, n + 5])
    elif n % 1024 == 0 or n in (64, 128, 256, 512):
        out = rng.choice([n * 2, n // 2, n * 4])
    else:
        out = rng.choice([n * 2, n * 10, max(1, n // 2), n + 1, n - 1])
    if out == n:
        out = n + 1
    text = str(out)
    if "," in value and out >= 1000:
        text = f"{out:,}"
    if len(value) > 1 and value.startswith("0") and "." not in value:
        text = text.zfill(len(value))
    return text


def _mentions(text: str, token: str) -> bool:
    """Whether ``token`` occurs in ``text`` as a whole token (case-sensitive)."""
    return re.search(r"(?<![\w.])" + re.escape(token) + r"(?![\w])", text) is not None


def change_number(claim: str, premise: str, rng: random.Random) -> str | None:
    """A number of the claim (one the premise also states) gets another value the premise lacks."""
    found = [m for m in _NUMBER.finditer(claim) if _mentions(premise, m.group(1))]
    found = [m for m in found if not _YEAR.fullmatch(m.group(1))] or found
    rng.shuffle(found)
    for m in found:
        for _ in range(6):
            new = _other_number(m.group(1), rng)
            if new != m.group(1) and not _mentions(premise, new):
                out = claim[: m.start(1)] + new + claim[m.end(1) :]
                if out != claim:
                    return out
    return None


def change_unit(claim: str, premise: str, rng: random.Random) -> str | None:
    """A unit changes magnitude: "4 MB" -> "4 GB", "30s" -> "30 minutes", "seconds" -> "minutes"."""
    options: list[tuple[int, int, str]] = []
    for m in _GLUED.finditer(claim):
        for alt in _GLUED_SWAPS.get(m.group(2), ()):
            options.append((m.start(2), m.end(2), alt))
    for m in _UNIT_WORD.finditer(claim):
        for alt in _UNIT_SWAPS[m.group(1)]:
            options.append((m.start(1), m.end(1), alt))
    rng.shuffle(options)
    for start, end, alt in options:
        out = claim[:start] + alt + claim[end:]
        changed = out[max(0, start - 12) : start + len(alt) + 1]
        if out != claim and norm(changed) not in norm(premise):
            return out
    return None


def change_date(claim: str, premise: str, rng: random.Random) -> str | None:
    """A year, month or weekday changes to one the premise does not name."""
    options: list[tuple[int, int, list[str]]] = []
    for m in _YEAR.finditer(claim):
        year = int(m.group(1))
        alts = [str(year + d) for d in (-3, -2, -1, 1, 2, 5) if 1950 <= year + d <= 2049]
        options.append((m.start(1), m.end(1), alts))
    for m in _MONTH.finditer(claim):
        options.append((m.start(1), m.end(1), [x for x in _MONTHS if x != m.group(1)]))
    for m in _WEEKDAY.finditer(claim):
        options.append((m.start(1), m.end(1), [x for x in _WEEKDAYS if x != m.group(1)]))
    rng.shuffle(options)
    for start, end, alts in options:
        alts = [a for a in alts if a not in premise]
        if alts:
            return claim[:start] + rng.choice(alts) + claim[end:]
    return None


# ---------------------------------------------------------------------------------------- names


def swap_name(
    claim: str, premise: str, rng: random.Random, vocabulary: Mapping[str, Sequence[str]]
) -> str | None:
    """An identifier of the claim is replaced by another one of the same shape from the manual."""
    found = [(s, t) for s, t in identifiers(claim) if s != "hyphenated" or t in vocabulary.get(s, ())]
    found = [(s, t) for s, t in found if t in premise]
    rng.shuffle(found)
    for shape, token in found:
        pool = [x for x in vocabulary.get(shape, ()) if x != token and x not in premise]
        if not pool:
            continue
        new = rng.choice(pool)
        out = re.sub(r"(?<![\w$-])" + re.escape(token) + r"(?![\w-])", lambda _m, n=new: n, claim, count=1)
        if out != claim:
            return out
    return None


# ----------------------------------------------------------------------------------- negation

# (pattern, replacement): inserting a negation
_NEGATE = [
    (r"\bis\b(?! not\b)", "is not"),
    (r"\bare\b(?! not\b)", "are not"),
    (r"\bwas\b(?! not\b)", "was not"),
    (r"\bwere\b(?! not\b)", "were not"),
    (r"\bcan\b(?! not\b)", "cannot"),
    (r"\bmust\b(?! not\b)", "must not"),
    (r"\bshould\b(?! not\b)", "should not"),
    (r"\bwill\b(?! not\b)", "will not"),
    (r"\bmay\b(?! not\b)", "may not"),
    (r"\bdoes\b(?! not\b)", "does not"),
    (r"\bhas been\b", "has not been"),
    (r"\balways\b", "never"),
    (r"\benabled\b", "disabled"),
    (r"\benables\b", "disables"),
    (r"\benable\b", "disable"),
    (r"\ballowed\b", "forbidden"),
    (r"\ballows\b", "does not allow"),
    (r"\brequired\b", "not required"),
    (r"\brequires\b", "does not require"),
    (r"\bsupports\b", "does not support"),
    (r"\btrue\b", "false"),
    (r"\bTrue\b", "False"),
    (r"\bincluded\b", "excluded"),
    (r"\bpermitted\b", "not permitted"),
]
# removing a negation (or flipping a negative word)
_AFFIRM = [
    (r"\bis not\b", "is"),
    (r"\bisn't\b", "is"),
    (r"\bare not\b", "are"),
    (r"\baren't\b", "are"),
    (r"\bwas not\b", "was"),
    (r"\bcannot\b", "can"),
    (r"\bcan not\b", "can"),
    (r"\bcan't\b", "can"),
    (r"\bmust not\b", "must"),
    (r"\bshould not\b", "should"),
    (r"\bwill not\b", "will"),
    (r"\bwon't\b", "will"),
    (r"\bdoes not\b", "does"),
    (r"\bdoesn't\b", "does"),
    (r"\bdo not\b", "do"),
    (r"\bdon't\b", "do"),
    (r"\bnever\b", "always"),
    (r"\bdisabled\b", "enabled"),
    (r"\bdisables\b", "enables"),
    (r"\bdisable\b", "enable"),
    (r"\bfalse\b", "true"),
    (r"\bFalse\b", "True"),
    (r"\bno longer\b", "still"),
    (r"\bunless\b", "if"),
    (r"\bforbidden\b", "allowed"),
    (r"\bexcluded\b", "included"),
    (r"\bignored\b", "used"),
]


def negation_flips(claim: str) -> list[tuple[int, int, str]]:
    """Every place where the claim's polarity can be flipped: (start, end, replacement)."""
    flips: list[tuple[int, int, str]] = []
    taken: list[tuple[int, int]] = []
    for pattern, replacement in _AFFIRM + _NEGATE:
        for m in re.finditer(pattern, claim):
            if any(a < m.end() and m.start() < b for a, b in taken):
                continue
            taken.append((m.start(), m.end()))
            flips.append((m.start(), m.end(), replacement))
    return flips


def flip_negation(claim: str, premise: str, rng: random.Random) -> str | None:
    """Insert or remove one negation ("is" -> "is not", "cannot" -> "can", "enabled" -> "disabled")."""
    flips = negation_flips(claim)
    if not flips:
        return None
    # prefer the first flip of the main clause: most claims put their verb early
    flips.sort(key=lambda f: f[0])
    start, end, replacement = flips[0] if rng.random() < 0.6 else rng.choice(flips)
    out = claim[:start] + replacement + claim[end:]
    return out if out != claim else None


# ------------------------------------------------------------------------------- antonyms

# A word swapped for its opposite keeps every number and name but reverses the meaning: the
# checker must read the sentence, not count overlapping words ("limits" vs "unlimited").
_OPPOSITES = [
    ("at most", "at least"), ("more than", "less than"), ("more than", "fewer than"), ("up to", "at least"),
    ("limited", "unlimited"), ("maximum", "minimum"), ("maximal", "minimal"), ("most", "least"),
    ("higher", "lower"), ("larger", "smaller"), ("longer", "shorter"), ("greater", "smaller"),
    ("increase", "decrease"), ("increases", "decreases"), ("increased", "decreased"),
    ("before", "after"), ("first", "last"), ("earliest", "latest"), ("oldest", "newest"),
    ("inbound", "outbound"), ("incoming", "outgoing"), ("local", "remote"), ("client", "server"),
    ("clients", "servers"), ("sender", "recipient"), ("senders", "recipients"), ("read", "write"),
    ("reads", "writes"), ("accept", "reject"), ("accepts", "rejects"), ("accepted", "rejected"),
    ("allow", "deny"), ("allows", "denies"), ("include", "exclude"), ("includes", "excludes"),
    ("start", "stop"), ("starts", "stops"), ("open", "close"), ("opens", "closes"),
    ("optional", "mandatory"), ("synchronous", "asynchronous"), ("encrypted", "unencrypted"),
    ("secure", "insecure"), ("success", "failure"), ("valid", "invalid"), ("upper", "lower"),
    ("above", "below"), ("add", "remove"), ("adds", "removes"), ("added", "removed"),
    ("ascending", "descending"), ("faster", "slower"), ("slow", "fast"), ("internal", "external"),
    ("public", "private"), ("temporary", "permanent"), ("temporarily", "permanently"),
    ("automatically", "manually"), ("explicitly", "implicitly"), ("same", "different"),
    ("only", "also"), ("sent", "received"), ("send", "receive"), ("sends", "receives"),
]  # fmt: skip
_OPPOSITE: dict[str, str] = {}
for _a, _b in _OPPOSITES:
    _OPPOSITE.setdefault(_a, _b)
    _OPPOSITE.setdefault(_b, _a)
_OPPOSITE_RE = re.compile(
    r"\b(" + "|".join(sorted(map(re.escape, _OPPOSITE), key=len, reverse=True)) + r")\b", re.IGNORECASE
)


def swap_antonym(claim: str, premise: str, rng: random.Random) -> str | None:
    """Replace one word or phrase by its opposite ("at most" -> "at least", "local" -> "remote")."""
    found = [
        m for m in _OPPOSITE_RE.finditer(claim) if _OPPOSITE[m.group(1).lower()].lower() not in claim.lower()
    ]
    if not found:
        return None
    m = rng.choice(found)
    word = m.group(1)
    other = _OPPOSITE[word.lower()]
    if word[0].isupper():
        other = other[0].upper() + other[1:]
    return claim[: m.start()] + other + claim[m.end() :]


# ------------------------------------------------------------------------------- added entity

PERSONS = (
    "John Smith",
    "Maria Keller",
    "Rajesh Iyer",
    "Li Wei",
    "Anna Kowalski",
    "David Moreau",
    "Sofia Lindqvist",
    "Kenji Tanaka",
    "Peter Novak",
    "Laura Bianchi",
    "Ahmed Haddad",
    "Emily Carter",
)
ORGANISATIONS = (
    "Acme Networks",
    "the Helios Foundation",
    "Northwind Systems",
    "Globex Corporation",
    "the Open Relay Consortium",
    "Initech Labs",
    "Vertex Software GmbH",
    "the Stanford Systems Group",
    "Umbrella Data Inc.",
    "the European Network Institute",
)
_ENTITY_TEMPLATES = (
    "According to {person}, {claim_lc}",
    "{claim_np}, as {person} recommends.",
    "{claim_np}; this behaviour was introduced by {org}.",
    "{org} recommends this: {claim_lc}",
    "{claim_np}, a change contributed by {person} of {org}.",
    "As documented by {org}, {claim_lc}",
    "{claim_np}, according to a benchmark by {org}.",
    "{person} designed it so that {claim_lc}",
)


_LOWER_OK = _STOP | frozenset(
    "use set setting run specify enable disable add note by most many there see when after before "
    "unlike since because although while during within without".split()
)


def _lc_first(text: str) -> str:
    """Lower-case the first letter when the first word is a common word (not a name or identifier)."""
    first = text.split(" ", 1)[0]
    if first.lower().strip(",") not in _LOWER_OK or first[1:].lower() != first[1:]:
        return text
    return text[:1].lower() + text[1:]


def add_entity(claim: str, premise: str, rng: random.Random) -> str | None:
    """Attribute the claim to a person or organisation the premise does not name."""
    persons = [p for p in PERSONS if p.split()[-1] not in premise]
    orgs = [o for o in ORGANISATIONS if o.replace("the ", "").split()[0] not in premise]
    if not persons or not orgs:
        return None
    text = claim.strip()
    claim_np = text.rstrip(".!")
    template = rng.choice(_ENTITY_TEMPLATES)
    out = template.format(
        person=rng.choice(persons),
        org=rng.choice(orgs),
        claim_lc=_lc_first(text if text.endswith((".", "!")) else text + "."),
        claim_np=claim_np,
    )
    if out.startswith(("the ", "according")):
        out = out[0].upper() + out[1:]
    return out if out != claim else None


# --------------------------------------------------------------------------------- registry

Corruption = Callable[[str, str, random.Random], "str | None"]

CORRUPTION_KINDS = ("number", "unit", "date", "negation", "antonym", "name", "added_entity")


def corrupt(
    kind: str,
    claim: str,
    premise: str,
    rng: random.Random,
    vocabulary: Mapping[str, Sequence[str]] | None = None,
) -> str | None:
    """Apply the corruption ``kind``; None when it does not apply. Never returns ``claim``."""
    if kind == "number":
        out = change_number(claim, premise, rng)
    elif kind == "unit":
        out = change_unit(claim, premise, rng)
    elif kind == "date":
        out = change_date(claim, premise, rng)
    elif kind == "negation":
        out = flip_negation(claim, premise, rng)
    elif kind == "antonym":
        out = swap_antonym(claim, premise, rng)
    elif kind == "name":
        out = swap_name(claim, premise, rng, vocabulary or {})
    elif kind == "added_entity":
        out = add_entity(claim, premise, rng)
    else:
        raise ValueError(f"unknown corruption kind {kind!r}")
    if out is None or norm(out) == norm(claim):
        return None
    return out
