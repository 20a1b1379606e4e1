"""Does a unit bear the answer? It states a value of the kind the question asks for (a default,
a limit, a version, an identifier), about the subject the question names.

The unit alone decides whether it states such a value ("The default is typically 100
connections."); the unit *with its context* (its definition term, the option line or sentence
before it, its heading trail) decides whether that value belongs to the subject: a page's entry
for ``max_connections`` states its default a few sentences after the term, without the name.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from citeline.answer.answer_type import can_answer
from citeline.answer.relevance import evidence_words, term_present
from citeline.answer.units import binding_contexts, chunk_units, entry_terms, never_an_answer
from citeline.query.slot import VALUE_ATTRIBUTES, Slot, subject_of
from citeline.text.terms import STOPWORDS
from citeline.types import Chunk, Hit, Passage

_I = re.IGNORECASE
# Besides the slot's value attributes (query/slot.py), the questions refused when no unit of the
# context states a value of their kind about their subject: "How many keys can ssh-agent hold?"
# over passages that state no number about keys
REFUSED_WITHOUT_VALUE = frozenset({"quantity"})
# Every question for a value: refused when no unit of its context states one (``missing_value``),
# after its context is widened by at most DEEPER_HITS chunks that do (``deeper_context``)
ASKS_VALUE = VALUE_ATTRIBUTES | REFUSED_WITHOUT_VALUE
DEEPER_HITS = 3
_NUMBER = re.compile(
    r"\d|\b(?:zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|"
    r"forty|fifty|sixty|hundred|thousand|million|billion|dozen|unlimited|infinite|infinity)\b",
    _I,
)
# A statement of the default: "(default: 1000)", "defaults to", "by default", "The default is",
# "if not specified, ...", "unless set otherwise", "initially", "is assumed"
_DEFAULT = re.compile(
    r"(?<!non-)\bdefault(?:s|ed)?\b|\bout of the box\b|\b(?:if|when) (?:[\w.-]+ ){0,5}?(?:is |are )?(?:not|no(?= \w)|unset|"
    r"omitted|absent|missing|left (?:out|empty|unset)|none|empty|unspecified)\b|\bunless\b|"
    r"\binitial(?:ly)?\b|\bimplicit(?:ly)?\b|\bassumed?\b|\bnormally\b|\bfalls? back\b|\botherwise\b",
    _I,
)
_MAXIMUM = re.compile(
    r"\bmax(?:imum|imal|\.)?\b|\blimit(?:s|ed)?\b|\bat most\b|\bup to\b|\bno (?:more|longer|larger|greater) "
    r"than\b|\b(?:cannot|can't|must not|may not|never) (?:exceed|be (?:more|longer|larger|greater))\b|"
    r"\bexceed(?:s|ing)?\b|\bupper\b|\b(?:longest|largest|biggest|highest|most)\b|\bcap(?:ped)?\b|"
    r"\bunlimited\b|\bno limit\b",
    _I,
)
_MINIMUM = re.compile(
    r"\bmin(?:imum|imal|\.)?\b|\bat least\b|\b(?:less|fewer|shorter|smaller) than\b|\blower\b|"
    r"\b(?:shortest|smallest|lowest|fewest)\b|\b(?:must|should) be (?:greater|more|larger|longer|above)\b|"
    r"\bbelow\b",
    _I,
)
# A number starts only where no number goes on ("1.5", not its "5"), and its digits are never given
# back: both keep a run like "1.1.1.1 ..." linear (the regex audit in tests/reliability)
_AMOUNT = r"(?:(?<!\d)(?<!\d[.,])\d+(?:[.,]\d+)*+|zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|sixteen|twenty)"
# A range states both ends: "functions of one through twelve variables", "from 0 to 255",
# "between 1 and 65535"
_RANGE = re.compile(
    rf"\b{_AMOUNT}\s*(?:through|thru|to)\s*{_AMOUNT}\b|\bbetween\s+{_AMOUNT}\s+and\s+{_AMOUNT}\b", _I
)
_VERSION_VALUE = re.compile(
    r"\b(?:v|version |release )?\d+\.\d+(?:\.\d+)*[a-z]?\b|\bversion \d+\b|\bv\d+\b", _I
)
_VERSION_CUE = re.compile(
    r"\b(?:since|introduced|added|available|new in|as of|appeared|version|release[sd]?|changed|"
    r"deprecated|removed|starting|requires?|required|later|newer|or (?:later|newer|above|higher))\b",
    _I,
)
# A snake_case or dotted name ("smtpd_recipient_limit", "sync.batch_size"); not an abbreviation
# ("i.e. the height of the box" names nothing)
_DOTTED = r"(?<!\w)(?!(?i:i\.e|e\.g|cf|etc|vs|viz)\b)[A-Za-z_]\w*(?:[._]\w+)+"
# An identifier: an option, a snake_case or dotted name, a man page, a code, a path, a word in
# backticks or capitals (IGNORE, PREPEND), a name=value pair
_IDENTIFIER = re.compile(
    rf"(?<![\w-])--?[A-Za-z][\w-]*|{_DOTTED}|\b\w+\(\d[a-z]?\)|`[^`]+`|"
    r"(?<![\w.])/[\w.-]+/[\w./-]*|\b[A-Z][A-Z0-9_]{2,}\b|\b\w+\s?=\s?\S|\b[A-Z]\w*[a-z]\w*[A-Z]\w*\b|"
    # a flag's or a setting's label opening the unit: "R: Prepend ...", "maxproc: ..."
    r"^[A-Za-z]:\s|^[a-z]\w*[_.-][\w.-]*:\s"
)


# A line as it is typed: a command with its arguments ("set style boxplot fraction 0.95"), a
# comment marker ("value # FIXED"), a prompt ("$ docker ps"), or a setting to write as it is given
# ('In order to change this behavior, set "smtpd_tls_auth_only = yes".'; not 'If you specify ...',
# which says what happens then)
_TYPED = re.compile(
    r"^[ \t]*(?:[$#>%]\s|[a-z][\w.-]* (?:[\w.=,:/-]+ ){0,6}[\w.=,:/-]*\d[\w.]*\s*$)|\s#\s*[A-Z]{3,}|"
    r"(?<![Ii]f you )\b(?:[Ss]et|[Aa]dd|[Ss]pecify|[Pp]ut|[Aa]ppend|[Cc]hange)\s+[\"'`“‘]?[A-Za-z][\w.-]*\s?=\s?[^\s=]",
    re.MULTILINE,
)


def typed(text: str) -> bool:
    """Whether ``text`` holds a line as it is typed: a command with its arguments, a prompt, a
    name=value line with a comment marker, or an instruction to set a setting as it is written."""
    return _TYPED.search(text) is not None


# What a how-to answer names: an option, name=value, a `literal`, a snake_case or dotted name, a
# path, or a command after the verb that runs it ("first use the command set rgbmax 1.0"); not
# an acronym ("RGB components"), nor a verb before a noun phrase ("some data files use an
# alternative convention")
_COMMAND = re.compile(
    rf"(?<![\w-])--?[A-Za-z][\w-]*|\b\w+\s?=\s?\S|`[^`]+`|{_DOTTED}|(?<![\w.])/[\w.-]+/|"
    r"\b(?:command|run|use|type|execute|enter|invoke)\s+[`'\"‘“]?"
    r"(?!(?:a|an|the|this|that|these|those|it|its|them|their|your|our|some|any|all|each|one|of|to|in|on|"
    r"for|with|as|and|or|by|from|at|is|are|be)\b)[a-z][\w.-]*\s+[\w.-]+"
)


# The shape of each sort of name a "which" question may ask for
_SORTS = {
    "environment variable": re.compile(r"\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b|\$[A-Z][A-Z0-9_]+"),
    "signal": re.compile(r"\bSIG[A-Z]{2,}\b"),
    "option": re.compile(r"(?<![\w-])--?[A-Za-z][\w-]*|^[A-Za-z]:\s|\b[A-Za-z][\w.-]*\s?="),
    "file": re.compile(
        r"(?<![\w.])(?:~|\.{0,2})/[\w.-]+|\b[\w-]+\.(?:conf|cfg|json|ya?ml|toml|ini|txt|log|db|cf|pem|key)\b"
    ),
    "function": re.compile(r"\b[A-Za-z_][\w.]*\(\)|`[A-Za-z_][\w.]*\(?`"),
    "port": re.compile(r"\b\d{2,5}\b"),
}


# A unit of measure: of time, size or length, or a one-letter suffix explained ("d (days)")
_UNIT = re.compile(
    r"\b(?:(?:milli|micro|nano)?seconds?|minutes?|hours?|days?|weeks?|months?|years?|bytes?|"
    r"[kmgt]i?b(?:ytes?)?(?:/s)?|[kmgt]i?byte(?:s|/s)?|kbytes|mbytes|characters?|lines?|bits?|percent|"
    r"degrees?|radians?|pixels?|points?|[smhdw] \(|ms|us|ns)\b",
    _I,
)


# A time span: an amount of a unit of time ("30 minutes", "300s", "5d", "an hour", "a few
# seconds"), or one without an amount ("forever", "instantly")
_DURATION = re.compile(
    rf"\b(?:{_AMOUNT}|an?|a few|several|many)[\s-]*(?:(?:milli|micro|nano)?seconds?|secs?|minutes?|mins?|"
    r"hours?|hrs?|days?|weeks?|months?|years?)\b|\b\d+(?:\.\d+)?\s?(?:ms|us|ns|[smhdw])\b|"
    r"\b(?:forever|indefinitely|instantly|immediately|no time)\b",
    _I,
)
# Digits that are part of a name, not an amount: "X11", "sha256", "IPv6", "sshd(8)", "RFC4716",
# a file named with its version ("aptitude-0.8.13.tar.gz")
_NAMED_DIGITS = re.compile(r"\b[A-Za-z_][A-Za-z_-]*\d(?:[\w.-]*\w)?|\w\(\d[a-z]?\)")
# "one" as a pronoun, not an amount: "the keys that are held in one.", "each one", "one another"
_PRONOUN_ONE = re.compile(
    r"\b(?:the|any|each|every|no|this|that|which|a|some)\s+one\b|\bin one(?=\s*(?:[.,;:)]|$))|\bone another\b",
    _I,
)


# A version is no amount: "Destination constraints were added in OpenSSH release 8.9." does not say
# how many keys an agent holds
_VERSION_NUMBER = re.compile(r"\b(?:versions?|releases?)\s+v?\d+(?:\.\d+)*[a-z]?\b", _I)


def _has_number(text: str) -> bool:
    text = _VERSION_NUMBER.sub(" ", _NAMED_DIGITS.sub(" ", text))
    return _NUMBER.search(_PRONOUN_ONE.sub(" ", text)) is not None


# A literal value: a number, a name, a quoted string, or a word that is a setting's value
_LITERAL = re.compile(
    r"[\"'“‘`]\S|(?:\b(?:is|are|to|be)|:)\s+(?:yes|no|on|off|true|false|enabled|disabled|none|unset|empty|"
    r"unlimited|auto)\b",
    _I,
)


def states_literal(text: str) -> bool:
    """Whether ``text`` holds a literal value (a number, an identifier, a quoted string, yes/no
    words): "Default settings: set history size 500" rather than "By default the history command
    prints a line number"."""
    return _has_number(text) or _IDENTIFIER.search(text) is not None or _LITERAL.search(text) is not None


def states_value(slot: Slot, text: str) -> bool:
    """Whether ``text`` states a value of the kind ``slot`` asks for (the context not counted)."""
    attribute = slot.attribute
    if slot.kind == "unit":
        return _UNIT.search(text) is not None
    if slot.kind == "duration":
        return _DURATION.search(_NAMED_DIGITS.sub(" ", text)) is not None
    if attribute == "default":
        return _DEFAULT.search(text) is not None
    if attribute == "maximum":
        return (_MAXIMUM.search(text) is not None or _RANGE.search(text) is not None) and _has_number(text)
    if attribute == "minimum":
        return (_MINIMUM.search(text) is not None or _RANGE.search(text) is not None) and _has_number(text)
    if attribute == "version":
        return _VERSION_VALUE.search(text) is not None and _VERSION_CUE.search(text) is not None
    if attribute == "quantity":
        return _has_number(text)
    if attribute == "which":
        shaped = _SORTS.get(slot.sort)
        return (shaped or _IDENTIFIER).search(text) is not None
    if attribute == "recommended":
        return _ADVICE.search(text) is not None and (
            _has_number(text) or _IDENTIFIER.search(text) is not None
        )
    if attribute == "procedure":
        # how to do it: a command, an option, a setting written as it is typed
        return _COMMAND.search(text) is not None or typed(text)
    if attribute == "when":
        # the year the question names is no date of it ("NBA Draft 2020, free agency dates come
        # into focus." does not say when the 2020 draft is)
        return can_answer("date", _without_years(slot, text)) and _says(slot, text)
    if attribute == "where" and _SORTS["file"].search(text) is not None:
        return True  # a path is a place ("appending them to the remote user's ~/.ssh/authorized_keys")
    if attribute in ("who", "where"):
        return _names_someone(text) and _says(slot, text)
    if attribute == "reason":
        return _REASON.search(text) is not None
    return True


# A reason: a cause ("because -p is already reserved"), a purpose ("to avoid silently ignoring
# changes", "so that"), a risk or a flaw ("reduces the risk of leaking", "is known to be buggy").
# Not a consequence ("Therefore ... is not recommended." restates the question); "since" only
# before a clause ("since version 2.8" is a version)
_REASON = re.compile(
    r"\bbecause\b|\bdue to\b|\bowing to\b|\bso (?:that|as to)\b|\bin order (?:to|for)\b|\bas a result of\b|"
    r"\bsince (?:it|this|that|these|those|they|there|we|you|one|(?:the |an? )?[\w`'-]+ (?:is|are|was|were|has|have|can|cannot|"
    r"does|do|will|would|may|might|must))\b|"
    r"\b(?:avoid|prevent)\w*|\bto (?:protect|ensure|guarantee|minimi[sz]e|preserve|keep|reduce|save)\b|"
    r"\bguard against\b|\bmake sure\b|"
    r"\brisk\w*|\breasons?\b|\bwhy\b|\bintended\b|\bpurpose\b|\bdesigned (?:to|for)\b|\bcaveat\b|"
    r"\b(?:buggy|bugs?|broken|unreliable|insecure|unsafe)\b|\bknown to\b|\bwould (?:otherwise|require|violate|"
    r"break|cause|lead|result|mean)\b|\botherwise\b",
    _I,
)


# Advice: "we recommend", "a good starting point is 2G", "should be set to", "typically"
_ADVICE = re.compile(
    r"\brecommend\w*|\bsuggest\w*|\bshould\b|\badvis\w*|\bbest\b|\bgood\b|\bideal\w*|\boptimal\w*|"
    r"\btypical\w*|\breasonable\b|\bsensible\b|\bstarting point\b|\brule of thumb\b|\bpreferabl\w*",
    _I,
)


# A name: a capitalised word that does not open the text ("... to Olga Tokarczuk", "by Facebook")
_NAME = re.compile(r"(?<=[\w,;:)\]] )[A-Z][\w.'-]+|\b[A-Z]{2,}\b")


# Months and days are capitalised, and name no one ("... in their fiscal year-end March 2021 report")
_CALENDAR = frozenset(
    "january february march april may june july august september october november december jan feb mar "
    "apr jun jul aug sep sept oct nov dec monday tuesday wednesday thursday friday saturday sunday".split()
)


def _names_someone(text: str) -> bool:
    """A capitalised word that is a name, not a function word opening a clause ("Description: The
    location of the debtags vocabulary file" names no place) nor a month or a day."""
    return any(
        (word := m.group().lower().rstrip(".")) not in STOPWORDS and word not in _CALENDAR
        for m in _NAME.finditer(text)
    )


def _year(year: str) -> str:
    """A year the question names, as text states it: not a piece of a longer number."""
    return rf"(?<!\d){year}(?!\d)"


def _without_years(slot: Slot, text: str) -> str:
    """``text`` with the years the question names blanked out."""
    for year in slot.years:
        text = re.sub(_year(year), " ", text)
    return text


def _says(slot: Slot, text: str) -> bool:
    """The unit says what was done: one of the question's verb stems ("win" in "wins", "winner")."""
    if not slot.predicate:
        return True
    lowered = text.lower()
    return any(re.search(rf"\b{re.escape(stem)}", lowered) for stem in slot.predicate)


def bound_to_subject(slot: Slot, text: str) -> bool:
    """Whether ``text`` (a unit with its context) names the subject, or the slot names none."""
    named = slot.subject or slot.names
    lowered = text.lower()
    if not named:
        return _about_topic(slot.topic, lowered)
    return any(_mentions(name.lower().strip("`"), lowered) for name in named) or any(
        _mentions(base, lowered) for name in named if (base := _file_name(name))
    )


def _file_name(name: str) -> str:
    """A path's file name, which its manual page and headings use: "/etc/ssh/moduli" -> "moduli"."""
    if "/" not in name.strip("/"):
        return ""
    base = name.rstrip("/").rsplit("/", 1)[1].lower()
    return base if len(base) >= 4 else ""


# Share of the question's topic words a value's context must use when the question names no
# subject ("Maximum is 3." under ssh-keygen's -d is no limit on a certificate's principals)
TOPIC_SHARE = 1 / 3


def _about_topic(topic: Sequence[str], lowered: str) -> bool:
    if not topic:
        return True
    words = evidence_words(lowered)
    return sum(term_present(t, words, lowered) for t in topic) >= TOPIC_SHARE * len(topic)


def _mentions(name: str, text: str) -> bool:
    # "postconf(5)" is also written "postconf"; "-n" must not match inside "--no-x" or "an-n"
    base = re.sub(r"\(\d[a-z]?\)$", "", name)
    # a word's inflections name it too ("fcntl-lock" in "will be fcntl-locked")
    inflected = r"(?:e?s|e?d|ing)?" if base[-1:].isalpha() and len(base) > 3 else ""
    return re.search(rf"(?<![\w-]){re.escape(base)}{inflected}(?![\w])", text) is not None


def bears(slot: Slot, text: str, context: str, entry: str = "") -> bool:
    """A unit bears the answer: it states a value of the asked kind, and it or its context
    (definition term, option line, the sentence before it, headings) names the subject, and it
    does not belong to the entry of another name (``entry``: units.py, ``entry_terms``)."""
    bound = f"{context}\n{text}"
    return (
        states_value(slot, text)
        and bound_to_subject(slot, bound)
        and not another_entry(slot, text, entry)
        and all(re.search(_year(year), bound) for year in slot.years)
        and all(re.search(rf"\b{re.escape(unit)}", bound, _I) for unit in slot.per)
    )


def another_entry(slot: Slot, text: str, entry: str) -> bool:
    """Whether ``text`` belongs to the entry of a name other than the subject's default's: "The
    default, yes, will attempt to look up ..." in CanonicalizeFallbackLocal's entry states no
    default of CanonicalDomains, though that entry's description names CanonicalDomains. Only
    for the default of one name: a question naming two, or asking for a limit or an amount, often
    names a related setting ("the lowest user ID that virtual(8) accepts from virtual_uid_maps by
    default" is virtual_minimum_uid's)."""
    if slot.attribute != "default" or len(slot.subject) != 1 or not entry or not subject_of(entry):
        return False
    lowered = f"{entry}\n{text}".lower()
    # a part of the entry's name names it too ("X11" for X11DisplayOffset)
    return not any(name.lower().strip("`") in lowered for name in slot.subject)


def bearing_texts(slot: Slot, chunk: Chunk, title: str = "") -> frozenset[str]:
    """The texts of a chunk's units that bear the answer."""
    units = chunk_units(chunk)
    contexts = binding_contexts(units, chunk.text, chunk.start, chunk.heading_trail, title)
    entries = entry_terms(units, chunk.text, chunk.start, chunk.heading_trail)
    return frozenset(
        u.text
        for u, c, e in zip(units, contexts, entries, strict=True)
        if not never_an_answer(u.text) and bears(slot, u.text, c, e)
    )


def deeper_context(
    slot: Slot, context: Sequence[Hit], candidates: Sequence[Hit], n: int = DEEPER_HITS
) -> list[Hit]:
    """``context`` and, when the question asks for a value no chunk of it states, the first ``n``
    retrieved candidates beyond it that state one (each value once: overlapping chunks repeat
    it): retrieval is generous (``top_k``), the context is small, and the chunk that gives the
    value is often ranked below those that describe the setting (golden dev: "SQLite support
    was introduced with Postfix version 2.8." at rank 12)."""
    if slot.attribute not in ASKS_VALUE or any(bearing_texts(slot, h.chunk, h.title) for h in context):
        return list(context)
    chosen = {h.chunk.id for h in context}
    deeper: list[Hit] = []
    seen: set[frozenset[str]] = set()
    for hit in candidates:
        if len(deeper) == n:
            break
        texts = bearing_texts(slot, hit.chunk, hit.title) if hit.chunk.id not in chosen else frozenset()
        if texts and texts not in seen:
            deeper.append(hit)
            seen.add(texts)
    return [*context, *deeper]


def bearing_units(slot: Slot, passages: Sequence[Passage]) -> list[str]:
    """The texts of every unit of the context that bears the answer."""
    return [t for p in passages for t in sorted(bearing_texts(slot, p.chunk, p.hit.title))]


def missing_value(slot: Slot, passages: Sequence[Passage]) -> str | None:
    """Why the context cannot answer: the question asks for a value (a default, a limit, a
    version) and no unit states one about its subject. None when some unit does, or when the
    question does not ask for such a value."""
    if slot.attribute not in ASKS_VALUE or not passages or bearing_units(slot, passages):
        return None
    return f"no passage states {slot.describe()}"
