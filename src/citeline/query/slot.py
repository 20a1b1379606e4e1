"""The asked slot: what a question asks about what.

An answer is a value of the kind the question asks for, bound to the subject the question
names: "What is the default of smtpd_recipient_limit?" asks for the *default* (attribute) of
``smtpd_recipient_limit`` (subject), a *value* (kind). A sentence that describes the setting
("Determines the maximum number of ...") is on topic but does not answer; the one that gives
the value ("The default is typically 100 connections") does, even without repeating the name.

Rules suffice for the attribute: questions ask for a default, a limit or a version in few
ways. The subject is the question's identifiers (setting, option, function, error code, file);
a question without one names its subject in words, and binding is then left to retrieval.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

Attribute = Literal[
    "default",
    "maximum",
    "minimum",
    "quantity",
    "version",
    "which",
    "meaning",
    "procedure",
    "reason",
    "yesno",
    "recommended",
    "who",
    "when",
    "where",
    "other",
]
Kind = Literal[
    "value",
    "number",
    "unit",
    "duration",
    "version",
    "identifier",
    "definition",
    "procedure",
    "name",
    "date",
    "place",
    "any",
]

#: attributes whose answer is a value a unit either states or does not: when no unit of the
#: context states one, the documents do not hold the answer, however well the topic matches
VALUE_ATTRIBUTES: frozenset[str] = frozenset(
    {"default", "maximum", "minimum", "version", "recommended", "who", "when", "where"}
)

_KIND: dict[str, Kind] = {
    "default": "value",
    "maximum": "number",
    "minimum": "number",
    "quantity": "number",
    "version": "version",
    "which": "identifier",
    "meaning": "definition",
    "procedure": "procedure",
    "reason": "any",
    "yesno": "any",
    "recommended": "value",
    "who": "name",
    "when": "date",
    "where": "place",
    "other": "any",
}

_I = re.IGNORECASE
# "How do I / can we / should one ...": asks how to do it
_HOW_DO_I = r"^\W*how (?:do|can|should|could|would) (?:i|we|you|one)\b"
# In order: the first rule that matches names the attribute. A version asked about comes
# before a default ("Since which release is X the default?" asks for the release), a default
# before a limit ("How many ... by default?" is answered where the default is stated).
_RULES: tuple[tuple[Attribute, re.Pattern[str]], ...] = (
    ("reason", re.compile(r"^\W*why\b|\bwhat is the reason\b|\bfor what reason\b", _I)),
    (
        "version",
        re.compile(
            r"\b(?:since|as of|from|starting (?:with|in)|in|with)\s+(?:which|what)\s+(?:\w+\s+)?"
            r"(?:version|release)s?\b|"
            r"\b(?:which|what)\s+(?:\w+\s+)?(?:version|release)s?\b[^?]*\b(?:add|introduc|first|appear|"
            r"support|brought|remov|deprecat|need|requir|chang)|"
            r"\bwhen was\b[^?]*\b(?:added|introduced|deprecated|removed|first)\b|"
            r"\bfirst (?:appear|introduc|ship|add)",
            _I,
        ),
    ),
    # a value advised for a case ("What X should I use for 30,000 users?", "What value is
    # recommended?"): answered only where the documents advise one, not by the default
    (
        "recommended",
        re.compile(
            r"\b(?:is|are|was|were) (?:\w+ )?recommended\b|\brecommended (?:for|value|setting|size)\b|"
            r"\bshould (?:i|we|you|one) (?:use|set|pick|choose|allow|give|configure|start with)\b|"
            r"\btypically use\b|\bsuggest(?:s|ed)?\b|\b(?:best|ideal|optimal|good) (?:value|setting|size)\b",
            _I,
        ),
    ),
    (
        "default",
        re.compile(
            r"(?<!non-)\bdefaults?\b|\bout of the box\b|\bif (?:i|you|we) (?:don't|do not|didn't|never) "
            r"(?:set|give|name|specify|configure|change|pass|use)|\bunless (?:i|you) (?:set|configure|change|pass|"
            r"give|use)|\bunless told otherwise\b|"
            r"\bwithout (?:--?[A-Za-z][\w-]*|passing|giving|specifying|naming|setting|configuring|choosing)\b|"
            r"\bif (?:it is |it's )?(?:not set|unset|omitted|left (?:empty|unset))\b|"
            r"\b(?:is|are) (?:not (?:set|configured|specified|given|passed)|unset|omitted|left (?:empty|unset|out))\b|"
            r"\b(?:if|when) (?:none|nothing|no \w+) (?:is|are) (?:given|set|specified|configured|passed)\b|"
            r"\bunless (?:specified|set|given|configured)\b|\bwithout (?:any )?"
            r"(?:configuration|setting it)\b",
            _I,
        ),
    ),
    # who did it, when, where: a name, a date or a place, bound to what was done (its verb)
    (
        "who",
        re.compile(
            r"^\W*who(?:m|se)?\b|\bwhich (?:company|companies|person|people|team|player|country|countries|"
            r"firm|organi[sz]ation|artist|author|band|university|club|nation)\b",
            _I,
        ),
    ),
    # "When was it released?" asks for a date; "When do two tables share a connection?" for a
    # condition, unless it asks when something opens, starts or ends
    (
        "when",
        re.compile(
            r"^\W*when (?:was|were|did|will|is|are)\b(?!.*\b(?:used|needed|required|allowed|possible)\W*$)|"
            r"^\W*when (?:does|do|will)\b.*\b(?:open|close|start|begin|end|finish|expire|happen|occur|take place|"
            r"release|premiere|launch|air|come out|end of life|eol|end-of-life)\W*$|"
            r"\bwhat (?:date|day|year|month|time)\b|\bon (?:which|what) (?:date|day)\b|"
            r"\bwhat (?:is|was|will be) the (?:exact )?date\b|"
            r"\b(?:release|premiere|launch|publication|expiry|expiration) date\b",
            _I,
        ),
    ),
    ("where", re.compile(r"^\W*where\b|\blocation\b|\bin which (?:city|country|place|state|venue)\b", _I)),
    ("meaning", re.compile(r"\bwhat kind of\b|\bwhat happens\b", _I)),
    # "How can I see which files it would put in a bundle?" asks how (an option), not which file
    (
        "procedure",
        re.compile(rf"{_HOW_DO_I}.*\b(?:which|what)\b", _I),
    ),
    (
        "which",
        re.compile(
            r"\b(?:which|what)\s+(?:(?!(?:does|do|did|is|are|was|were)\b)\S+\s+){0,2}?(?:options?|settings?|parameters?|commands?|flags?|"
            r"variables?|functions?|files?|directives?|keys?|keywords?|tools?|programs?|daemons?|"
            r"methods?|class(?:es)?|attributes?|fields?|arguments?|propert(?:y|ies)|modules?|tables?|"
            r"librar(?:y|ies)|packages?|headers?|signals?|groups?|accounts?|services?|macros?|"
            r"features?|endpoints?|env(?:ironment)? variables?|switch(?:es)?|subcommands?|"
            r"utilit(?:y|ies)|action|argument|syntax|protocols?|drivers?|criteri(?:a|on)|formats?|modes?|"
            r"ciphers?|algorithms?|(?:search )?terms?|patterns?|codes?)\b",
            _I,
        ),
    ),
    (
        "maximum",
        re.compile(
            r"\bmax(?:imum|imal)?\b|\bupper (?:limit|bound)\b|\blimits?\b|\bat most\b|\bno more than\b|"
            r"\b(?:longest|largest|biggest|highest|most)\b",
            _I,
        ),
    ),
    (
        "minimum",
        re.compile(
            r"\bmin(?:imum|imal)?\b|\blower (?:limit|bound)\b|\bat least\b|\b(?:shortest|smallest|lowest|fewest)\b",
            _I,
        ),
    ),
    # "How do I find out how many times it restarted?" asks how to find it out, not for a number
    ("procedure", re.compile(_HOW_DO_I, _I)),
    (
        "quantity",
        re.compile(
            r"\bwhat (?:is|are|was) the (?:\w+ ){0,3}?(?:number|size|port|timeout|interval|length|duration|delay|period|"
            r"amount|count)\b|"
            r"\bhow (?:long|many|much|often|big|large|small|fast|far|old|wide)\b|"
            r"\b(?:what|which) (?:\w+ )?(?:size|port|number|timeout|interval|percentage|amount|"
            r"time unit|unit|exit status|exit code|status code|length|duration|delay|period)\b",
            _I,
        ),
    ),
    (
        "meaning",
        re.compile(
            r"^\W*what (?:does|do|did)\b.*\b(?:do|mean|means|stand for|return|returns|control|controls)\W*$|"
            r"^\W*what (?:is|are) (?:an? |the )?\S+(?: \S+)?\W*$|\bpurpose of\b|\bwhat happens\b|"
            r"\bwhat (?:is|are) .* (?:used|good) for\b|\bmeaning of\b|\bwhat kind of\b|"
            r"\bwhat (?:does|do) .* (?:mean|do)\b",
            _I,
        ),
    ),
    (
        "procedure",
        re.compile(
            r"^\W*(?:\w+\W+){0,12}?how (?:do|can|should|would|could|must|to|does one)\b|\bhow to\b|"
            r"\bwhat (?:must|should|do|can) (?:i|we|you) (?:run|do|type|install|use|set|call)\b|\bsteps?\b",
            _I,
        ),
    ),
    (
        "yesno",
        re.compile(r"^\W*(?:can|does|do|is|are|will|should|may|must|could|would|has|have|did)\b", _I),
    ),
)

# Identifier shapes a subject is named by: snake_case or dotted names (smtpd_recipient_limit,
# sync.batch_size), options (-n, --dry-run), manual pages (postconf(5)), codes with digits
# (40P01, LDG-4012, E0425) and names in backticks.
_SUBJECT = re.compile(
    r"`(?P<tick>[^`\s][^`]{0,60}?)`|"
    r"(?<![\w-])(?P<flag>--?[A-Za-z][\w-]*)|"
    r"(?<![\w.-])(?P<page>[A-Za-z][\w.+-]*\(\d[a-z]?\))|"
    r"(?<![\w.-])(?P<name>[A-Za-z_][\w-]*(?:[._][\w-]+)+|[A-Za-z]+[a-z][A-Z]\w*)(?![\w-])|"
    r"(?<![\w.-])(?P<code>(?=[A-Za-z-]*\d)(?=[\w-]*[A-Za-z])[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*)(?![\w.-])"
)
# A version named in passing qualifies the question ("in Node 18", "since 3.7"); it is not its
# subject (query/analysis.py reads it, relevance.py decides whether it must be present)
_VERSION_LIKE = re.compile(r"^v?\d+(?:\.\d+)*[a-z]?$", _I)
# An amount written as an adjective ("2048-bit keys") describes the subject, and a unit of size ("1 TiB")
# measures it; neither names it
_MEASURE_LIKE = re.compile(r"^\d[\d.]*-[A-Za-z]+$|^[KkMGTPE]i?B(?:/s)?$")
# A file name's extension or an email address is not a subject on its own
# "U.S", "e.g", "i.e": single letters with dots are an abbreviation, not a dotted name
_ABBREVIATION = re.compile(r"^(?:[A-Za-z]\.)+[A-Za-z]?$")
_NOT_SUBJECT = re.compile(r"^(?:e\.g|i\.e|etc|vs)$|@", _I)


@dataclass(frozen=True)
class Slot:
    """What a question asks: the ``attribute`` of ``subject``, an answer of ``kind``."""

    attribute: Attribute
    kind: Kind
    #: the identifiers that name the subject, as the question writes them (may be empty)
    subject: tuple[str, ...] = ()
    #: for who/when/where questions, the stems of what was done ("win" for "Who won ...?"): a
    #: unit answers only when it says that, not just names someone or a date
    predicate: tuple[str, ...] = ()
    #: for "which" questions, the sort of name asked for when it has a shape of its own
    #: ("signal": SIGHUP, "environment variable": DOCKER_HOST, "option": --dry-run, "file": a path)
    sort: str = ""
    #: a question that names no identifier names its subject by proper names ("the resolver's
    #: Infinity score", "a Milter"): a value is bound to one of them, else to nothing
    names: tuple[str, ...] = ()
    #: the question's other content words ("principals", "certificate" in "What is the maximum
    #: number of principals one certificate can list?"): with no subject or name, a value is bound
    #: to what its context says about them
    topic: tuple[str, ...] = ()
    #: for who/when/where questions, the years they name ("Who won Wimbledon in 2019?"): the
    #: answer is the one of that year, not a name or date a passage gives for another year
    years: tuple[str, ...] = ()
    #: for an amount, what it is counted per ("terabyte" in "How long does a check take per
    #: terabyte?"): a value is bound to it too, not to the whole run or to another measure
    per: tuple[str, ...] = ()

    @property
    def wants_value(self) -> bool:
        return self.attribute in VALUE_ATTRIBUTES

    def describe(self) -> str:
        """The slot in words, for a refusal's reason: "the default of smtpd_recipient_limit"."""
        what = {
            "default": "the default",
            "maximum": "the limit",
            "minimum": "the minimum",
            "quantity": "the amount",
            "version": "the version",
            "which": "which one",
            "meaning": "what it means",
            "procedure": "how to do it",
            "reason": "why",
            "yesno": "whether it holds",
            "recommended": "a recommended value",
            "who": "who",
            "when": "when",
            "where": "where",
            "other": "the answer",
        }[self.attribute]
        return f"{what} of {', '.join(self.subject)}" if self.subject else f"{what} asked for"

    # Hand-written: whether ``names`` is written depends on another field (no subject).
    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "attribute": self.attribute,
            "kind": self.kind,
            "subject": list(self.subject),
        }
        if self.predicate:
            out["predicate"] = list(self.predicate)
        if self.sort:
            out["sort"] = self.sort
        if self.names and not self.subject:
            out["names"] = list(self.names)
        if self.years:
            out["years"] = list(self.years)
        if self.per:
            out["per"] = list(self.per)
        return out


def attribute_of(question: str) -> Attribute:
    for attribute, pattern in _RULES:
        if pattern.search(question):
            return attribute
    return "other"


def subject_of(question: str) -> tuple[str, ...]:
    """The identifiers a question names, in order (versions and e-mail addresses left out)."""
    found: list[str] = []
    for m in _SUBJECT.finditer(question):
        word = next(g for g in m.groups() if g is not None).strip(".,;:")
        if (
            len(word) < 2
            or _VERSION_LIKE.match(word)
            or _MEASURE_LIKE.match(word)
            or _NOT_SUBJECT.search(word)
            or _ABBREVIATION.match(word)
        ):
            continue
        found.append(word)
    return tuple(dict.fromkeys(found))


# "Which time unit ...", "in what unit": a unit is asked for, not an amount
_UNIT_ASKED = re.compile(r"\b(?:what|which)\s+(?:\w+\s+)?units?\b", _I)
# "How long does borg check take per terabyte?": the time something takes, not a length. Not "wait",
# "keep" or "stay": their answers are often a bare number under an option that names the unit
# ("-t, --time int  Seconds to wait ... (default 10)"), or a count ("for at least one stable
# release"); tried 2026-12-05: golden dev +1, golden test -2 (docs/evaluation.md)
_TAKES_TIME = re.compile(
    r"\bhow long (?:does|do|did|will|would|should|can|could|may|might)\b.*\btakes?\b", _I
)


def asked_slot(question: str) -> Slot:
    """The slot of ``question`` (its asking part, for a question that first tells a story)."""
    attribute = attribute_of(question)
    kind = "unit" if _UNIT_ASKED.search(question) else _KIND[attribute]
    if attribute == "quantity" and _TAKES_TIME.search(question):
        kind = "duration"
    event = attribute in ("who", "when", "where")
    predicate = predicate_of(question) if event else ()
    sort = sort_of(question) if attribute == "which" else ""
    years = tuple(dict.fromkeys(_YEAR.findall(question))) if event else ()
    per = (
        tuple(dict.fromkeys((m["per"] or m["time"]).lower() for m in _PER.finditer(question)))
        if attribute in _AMOUNTS
        else ()
    )
    return Slot(attribute, kind, subject_of(question), predicate, sort, years=years, per=per)


# An amount asked per something: "per terabyte", "for each recipient", "200,000 clients a day"
_AMOUNTS = frozenset({"quantity", "maximum", "minimum", "default", "recommended"})
_TIME_UNIT = r"second|minute|hour|day|week|month|year"
_PER = re.compile(
    rf"\b(?:(?:per|each)\s+(?:\d[\d,]*\s+)?(?P<per>{_TIME_UNIT}|[kmgt]i?b|kilobyte|megabyte|gigabyte|"
    r"terabyte|byte|file|message|recipient|connection|client|user|request|line|directory|process|session|host)"
    rf"|an?\s+(?P<time>{_TIME_UNIT}))s?\b",
    _I,
)


# A year a question names: 1900-2039, standing alone (not "v2.2019", "Cyberpunk 2077", "2019-10")
_YEAR = re.compile(r"(?<![\w.-])(?:19\d\d|20[0-3]\d)(?![\w.-]\w)")


# "which signal", "what environment variable", "which flag": the sorts of name with a shape
_SORT = re.compile(
    r"\b(?:which|what)\s+(?:(?!(?:does|do|did|is|are|was|were)\b)\S+\s+){0,2}?"
    r"(?P<sort>env(?:ironment)? variables?|signals?|options?|flags?|switch(?:es)?|files?|paths?|directories|"
    r"directory|functions?|ports?)\b",
    _I,
)


def sort_of(question: str) -> str:
    """The sort of name a "which" question asks for, normalised ("environment variable",
    "signal", "option", "file", "function", "port"), or "" when it has no shape of its own."""
    m = _SORT.search(question)
    if m is None:
        return ""
    word = m.group("sort").lower()
    for sort, forms in (
        ("environment variable", ("env",)),
        ("signal", ("signal",)),
        ("option", ("option", "flag", "switch")),
        ("file", ("file", "path", "director")),
        ("function", ("function",)),
        ("port", ("port",)),
    ):
        if word.startswith(forms):
            return sort
    return ""


# The verbs a who/when/where question is asked with that say nothing of what was done
_AUXILIARY = frozenset(
    "is are was were be been being do does did has have had will would shall should can could may might "
    "must get got the a an of in on at to for by with from".split()
)
_IRREGULAR = {
    "won": "win",
    "wins": "win",
    "bought": "buy",
    "sold": "sell",
    "took": "take",
    "became": "become",
    "made": "make",
    "held": "hold",
    "began": "begin",
    "begun": "begin",
    "ran": "run",
    "led": "lead",
    "left": "leave",
    "paid": "pay",
    "built": "build",
    "gave": "give",
    "given": "give",
    "found": "find",
    "wrote": "write",
    "written": "write",
    "sang": "sing",
    "sung": "sing",
    "took over": "take over",
    "born": "bear",
    "chose": "choose",
    "chosen": "choose",
    "beat": "beat",
    "beaten": "beat",
}
_VERB_AFTER = re.compile(
    r"^\W*(?:who(?:m|se)?|when|where|which \w+)\s+(?:(?P<aux>is|are|was|were|will|did|does|do|has|have|had)\s+)?"
    r"(?P<article>(?:the|a|an)\s+)?(?P<rest>.*)$",
    _I,
)


def predicate_of(question: str) -> tuple[str, ...]:
    """The stem of the verb a who/when/where question asks about ("Who won ...?" -> "win",
    "When was X released?" -> "relea", "Who acquired Instagram?" -> "acqui"): the first word after
    the question word that ends like a past tense or is a known irregular verb, else the first
    lower-case word after the subject for "When was X released?"."""
    m = _VERB_AFTER.match(question)
    if m is None:
        return ()
    words = re.findall(r"[A-Za-z]+", m.group("rest"))
    for i, word in enumerate(words):
        lowered = word.lower()
        if lowered in _IRREGULAR:
            return (_IRREGULAR[lowered], lowered)
        # after an article the words are a noun phrase ("Who is the lead actress"): only a
        # past participle there is a verb ("Who was the first person awarded ...")
        copula = (m.group("aux") or "").lower() in ("is", "are", "was", "were")
        base = lowered in _BASE_VERBS and not (copula and m.group("article"))
        # a verb in "-es" comes first ("Who makes ..."); later it is a plural in the subject's
        # name ("When was xenoblade chronicles 2 released?")
        inflected = lowered.endswith("ed") or (lowered.endswith("es") and i == 0)
        if word[0].islower() and lowered not in _AUXILIARY and (inflected or base):
            return (_stem(lowered),)
    return ()


# Verbs such questions use in their base form ("When does it open?", "Who will host ...?")
_BASE_VERBS = frozenset(
    "open close start end win host release launch premiere direct acquire buy sell play lead found "
    "invent discover write sing star marry die happen begin occur take hold own run announce".split()
)


def _stem(word: str) -> str:
    """A prefix that the verb's forms and its noun share: "released"/"release" -> "relea",
    "acquired"/"acquisition" -> "acqui", "opens" -> "open"."""
    for suffix in ("ied", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    return word[:5]
