"""Stage 3 of the training-data builder (build_data.py), second round: two kinds of reader groups
that the first model lacked (measured on golden dev, see the model card):

- **option questions** ("Which rsync option turns all symlinks into normal files?") for option
  lines of man pages and builtin references ("--copy-links Turn all symlinks into ..."): the
  description is turned into the question, the option line is the positive, its sibling options
  are the hard negatives. The first reader scored "-M: Show master.cf file contents" at 0.06 for
  "which postconf option shows master.cf".
- **altered questions**: a kept question with one specific term (a number, year, identifier or
  rare word that its answer contains) replaced by another of the same manual that the answer does
  not contain, paired with the original answer and its windows as negatives. On-topic questions
  about something the documents do not hold are what an answerer must refuse (13 of 16 golden-dev
  unanswerables name a term absent from the index); the first reader had seen too few of them.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from training import claims as C
from training.corruptions import corrupt
from training.questions import _GENERIC
from training.reader_pairs import Corpus, _group, _key_terms, reader_pairs, unit_of
from training.templates import _leading_subject
from training.units import Unit, rng_for

# ------------------------------------------------------------------------------- option questions

# verbs that start an option's description, in their base form
_VERBS = frozenset(
    "add allow append apply ask assume avoid cause change check clear close compare compress copy "
    "create delete detach disable display enable exclude execute exit expand export force format "
    "generate give ignore include inhibit keep kill limit list load lock log make mark move omit "
    "output overwrite pass prefix prevent preserve print prompt read rebuild receive redirect reduce "
    "refuse reload remove rename replace report request reset restart restore resume return reverse "
    "run save search select send set show skip sort specify start stop strip suppress switch tell "
    "treat try turn unset update use validate verify wait write".split()
)
# an option token, an optional second spelling, then up to two argument words ("=FILE", "<id>",
# "[n]", "nchars", "FILE")
_OPTION_LINE = re.compile(
    r"^(?P<opt>--?[A-Za-z][\w-]*)(?:=\S+)?(?:,\s*--?[A-Za-z][\w-]*(?:=\S+)?)?"
    r"(?P<args>(?:\s+(?:<[^>]{1,20}>|\[[^\]]{1,20}\]|[A-Z][A-Z_]{1,15}|[a-z]{1,10}(?=\s+[A-Z])))*)"
    r":?\s+(?P<desc>.+)$"
)
_THIS_OPTION = re.compile(r"^(?:This|The)\s+(?:option|flag|switch)\s+", re.IGNORECASE)
_CUT = re.compile(
    r"\s*(?:[,;:(]|\s-\s|\.\s|\.$|\b(?:if|unless|when|except|and\s+-|or\s+-|but|even|so|while)\b)"
)
# words a truncated description must not end with
_DANGLING = frozenset(
    "a an the as to of in on at by for from with and or that which than only be is are its their "
    "into onto under over rather".split()
)
_PROGRAM = re.compile(r"^([a-z][\w+-]{1,20})(?:\s*\([18]\w*\)|\.[18])(?:\s|$)")


def third_person(verb: str) -> str:
    """show -> shows, pass -> passes, try -> tries."""
    if verb.endswith(("s", "sh", "ch", "x", "z")):
        return verb + "es"
    if verb.endswith("y") and verb[-2:-1] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


def _verb_base(word: str) -> str | None:
    w = word.lower()
    if w in _VERBS:
        return w
    for base in (w[:-1], w[:-2], w[:-3] + "y" if w.endswith("ies") else ""):
        if base in _VERBS and third_person(base) == w:
            return base
    return None


def program_of(unit: Unit) -> str:
    """The command a man page documents ("rsync(1)" -> "rsync"), else ""."""
    m = _PROGRAM.match(unit.title or "")
    return m.group(1) if m else ""


def option_question(unit: Unit, rng: random.Random) -> tuple[str, str] | None:
    """("Which option turns all symlinks into normal files?", option) for an option line whose
    description starts with a verb; None otherwise."""
    if unit.kind == "window":
        return None
    m = _OPTION_LINE.match(unit.text)
    if m is not None:
        option, desc, noun_choices = m.group("opt"), m.group("desc"), ("option", "option", "flag")
    else:  # "queue_time: The amount ...", "$MaxOpenFiles sets ..."
        option = _leading_subject(unit)
        if option is None:
            return None
        desc = unit.text[len(option) :].lstrip(" :-—–")
        noun_choices = ("setting", "parameter", "option")
    desc = _THIS_OPTION.sub("", desc)
    first, _, rest = desc.partition(" ")
    base = _verb_base(first)
    if base is None or not rest:
        return None
    rest = _CUT.split(rest, maxsplit=1)[0].strip()
    body = rest.split()[:12]
    while body and (body[-1].lower() in _DANGLING or body[-1].startswith("-")):
        body.pop()
    if len(body) < 2:
        return None
    rest = " ".join(body)
    prog = program_of(unit)
    noun = rng.choice(noun_choices)
    which = f"Which {prog} {noun}" if prog and rng.random() < 0.5 else f"Which {noun}"
    forms = [f"{which} {third_person(base)} {rest}?"]
    if first[:1].isupper() and first.lower() == base:  # imperative: "Turn all symlinks ..."
        forms.append(f"How do I {base} {rest}{' with ' + prog if prog else ''}?")
    return rng.choice(forms), option


def option_groups(
    corpus: Corpus, seed: int, limit: int, taken: set[str], stats: Counter[str]
) -> Iterator[dict[str, Any]]:
    """Reader groups of option questions: the option line is the positive, the other options of
    its section (which do not start with the same option) the hard negatives. ``limit`` 0: none."""
    if limit <= 0:
        return
    found: list[tuple[Unit, str, str]] = []
    for u in corpus.units:
        if u.id in taken or C.norm(u.text) in corpus.repeated:
            continue
        oq = option_question(u, rng_for(seed, "option", u.id))
        if oq is not None:
            found.append((u, *oq))
    rng_for(seed, "option-order").shuffle(found)
    for unit, q, option in found[:limit]:

        def ok(u: Unit, option: str = option) -> bool:
            return not u.text.startswith(option)

        pairs, _ = reader_pairs(q, unit, corpus, rng_for(seed, "option-pairs", unit.id), (), ok)
        if not any(label == 0 for _, label, _ in pairs):
            continue
        stats["question:template_option"] += 1
        yield _group(f"o:{unit.id}", q, pairs, corpus.split[unit.doc], unit, "reader", "template_option")


# ------------------------------------------------------------------------------ altered questions

_TERM_KINDS = ("number", "date", "name")


def _rare_words(units: Iterable[Unit]) -> list[str]:
    """Words of a document specific enough that a question naming them asks about them."""
    out = {
        w for u in units for w in C.content_words(u.text) if w.isalpha() and len(w) >= 8 and w not in _GENERIC
    }
    return sorted(out)


def alter_question(
    q: str,
    answer: Unit,
    same_doc: Sequence[Unit],
    vocab: Mapping[str, Sequence[str]],
    rng: random.Random,
) -> tuple[str, str] | None:
    """(the question with one of its specific terms replaced by one the answer does not contain,
    how), or None. The term replaced is one the question shares with its answer, so the altered
    question still looks on topic."""
    text = answer.b
    for kind in rng.sample(_TERM_KINDS, len(_TERM_KINDS)):
        out = corrupt(kind, q, text, rng, vocab)
        if out is not None:
            return out, kind
    terms = sorted(t for t in _key_terms(q, answer) if t.isalpha() and re.search(rf"\b{t}\b", q, re.I))
    if not terms:
        return None
    lowered = text.lower()
    pool = [w for w in _rare_words(same_doc) if w not in lowered and w not in q.lower()]
    if not pool:
        return None
    term = rng.choice(terms)
    new = rng.choice(pool)
    out = re.sub(rf"\b{re.escape(term)}\b", new, q, count=1, flags=re.IGNORECASE)
    return (out, "word") if out != q else None


def altered_groups(
    groups: Sequence[dict[str, Any]],
    corpus: Corpus,
    vocab: dict[str, dict[str, list[str]]],
    seed: int,
    share: float,
    stats: Counter[str],
) -> Iterator[dict[str, Any]]:
    """For ``share`` of the answerable reader groups of the manuals: the altered question against
    the group's positives (label 0, kind ``altered_question``)."""
    by_b: dict[str, Unit] = {}
    for u in [*corpus.units, *corpus.windows]:
        by_b.setdefault(u.b, u)
    for g in groups:
        rows = g["rows"]
        group = rows[0]["group"]
        uid = unit_of(g)
        answer = corpus.by_id.get(uid)
        if answer is None or group.startswith("u:"):
            continue
        rng = rng_for(seed, "altered", group)
        if rng.random() >= share:
            continue
        same_doc = [u for u in corpus.by_doc.get(answer.doc, []) if u.section != answer.section][:200]
        altered = alter_question(rows[0]["a"], answer, same_doc, vocab.get(answer.manual, {}), rng)
        if altered is None:
            stats["altered:none"] += 1
            continue
        q, how = altered
        stats[f"altered:{how}"] += 1
        positives = [by_b[r["b"]] for r in rows if r["label"] == 1 and r["b"] in by_b]
        pairs = [(u, 0, "altered_question") for u in positives]
        qsource = rows[0].get("qsource", "llm")
        yield _group(f"x:{uid}", q, pairs, g["split"], answer, "reader", qsource)
