"""Stage 3 of the training-data builder (build_data.py): template questions for the reader.

"What is the default value of X?" for a unit that states the default of the option it is about,
"What does X do?" for a unit that starts by naming X; ``template_groups`` turns them into reader
groups with the same negatives as the LLM's questions.
"""

from __future__ import annotations

import math
import random
import re
from collections import Counter, defaultdict
from collections.abc import Iterator
from typing import Any

from training import claims as C
from training.reader_pairs import Corpus, _group, reader_pairs
from training.units import Unit, rng_for

_DEFAULT = re.compile(
    r"\b(by default|defaults? (value )?(is|are|to|of)|the default\b|is the default|default:|default value)",
    re.IGNORECASE,
)
_TRAIL_NOISE = re.compile(
    r"(¶|\bDirective\b|\bOption\b|\bParameter\b|^\s*(Chapter\s+)?[0-9]+(\.[0-9]+)*\.?\s*)"
)
_SUBJECT_SHAPES = ("snake", "camel", "long_option", "variable", "dotted", "upper", "mod", "short_option")
DEFAULT_TEMPLATES = (
    "What is the default value of {x}?",
    "What does {x} default to?",
    "What is {x} set to by default?",
    "If I do not set {x}, what value is used?",
    "Which value does {x} take when it is not configured?",
)
DEFINITION_TEMPLATES = (
    "What does {x} do?",
    "What is {x} used for?",
    "What is the purpose of {x}?",
    "What happens when I use {x}?",
)


def _trail_subject(unit: Unit) -> str | None:
    """The section's name when it is one identifier ("KeepAlive Directive", "$MaxOpenFiles")."""
    if not unit.trail:
        return None
    name = _TRAIL_NOISE.sub("", unit.trail[-1]).strip(" :")
    if len(name.split()) != 1 or len(name) < 3:
        return None
    ids = [t for s, t in C.identifiers(name) if s in _SUBJECT_SHAPES]
    return ids[0] if ids and len(ids[0]) >= len(name) - 1 else None


_LEADING = re.compile(
    r"^(--?[A-Za-z][\w-]*|\$?[A-Za-z_][\w.]*)"
    r"(:\s+|\s+[-—–]\s+|\s+(?=[A-Z])|\s+(?=(means|is|specifies|sets|controls|enables|disables|causes|makes|"
    r"tells|selects|determines|defines|forces|allows|prevents|requests|changes|turns|limits)\b))"
)
_NOT_A_DEFAULT_OF = re.compile(
    r"\b(sets?|overrides?|changes?|replaces?|uses?|using) (the|its|a) default", re.IGNORECASE
)


def _leading_subject(unit: Unit) -> str | None:
    """The identifier a definition-style unit starts with ("--inplace This option ...",
    "queue_time: The amount ...", "$auth2: the authorization id"); never a product name."""
    m = _LEADING.match(unit.text)
    if m is None:
        return None
    token = m.group(1)
    shapes = [s for s, t in C.identifiers(token) if t == token]
    if not shapes or shapes[0] in ("camel", "file", "hyphenated", "path"):
        return None
    return token


def subject_of(unit: Unit) -> str | None:
    """The option, directive or parameter a unit is about: its section's name when that is one
    identifier, else the identifier the unit starts with, else the unit's only identifier."""
    found = list(dict.fromkeys(t for s, t in C.identifiers(unit.text) if s in _SUBJECT_SHAPES))
    return (
        _trail_subject(unit)
        or _leading_subject(unit)
        or (found[0] if len(found) == 1 and len(found[0]) >= 3 else None)
    )


def template_question(unit: Unit, rng: random.Random) -> tuple[str, str] | None:
    """("What is the default value of X?", "template_default") for a unit that states a default of
    the option its section is about (or that it names), or ("What does X do?",
    "template_definition") for a unit that starts by naming X (a man-page option, "queue_time:
    ..."); None otherwise."""
    n = len(unit.text.split())
    if unit.kind == "window" or n < 4 or n > 70:
        return None
    m = _DEFAULT.search(unit.text)
    if m:
        if _NOT_A_DEFAULT_OF.search(unit.text):
            return None
        x = _trail_subject(unit) or _leading_subject(unit)
        if x is None:
            # the unit's only identifier, named shortly before "default" ("If hosts_max_try is
            # small (the default is 5)", "the value of color.ui is used (auto by default)")
            found = list(dict.fromkeys(t for s, t in C.identifiers(unit.text) if s in _SUBJECT_SHAPES))
            if len(found) == 1 and len(found[0]) >= 3:
                before = unit.text[: m.start()]
                pos = before.rfind(found[0])
                if pos >= 0 and len(before[pos:].split()) <= 6:
                    x = found[0]
        if x is not None:
            return rng.choice(DEFAULT_TEMPLATES).format(x=x), "template_default"
        return None
    x = _leading_subject(unit)
    if x is not None and n >= 6:
        return rng.choice(DEFINITION_TEMPLATES).format(x=x), "template_definition"
    return None


def template_groups(
    corpus: Corpus, seed: int, limit: int, taken: set[str], stats: Counter[str]
) -> Iterator[dict[str, Any]]:
    """Reader groups of template questions: seeded, at most 20 per document, spread over manuals."""
    per_manual: dict[str, list[tuple[Unit, str, str]]] = defaultdict(list)
    for doc in sorted(corpus.by_doc):
        rng = rng_for(seed, "template-doc", doc)
        found = []
        for u in corpus.by_doc[doc]:
            if u.id in taken or C.norm(u.text) in corpus.repeated:
                continue
            tq = template_question(u, rng_for(seed, "template", u.id))
            if tq is not None:
                found.append((u, *tq))
        rng.shuffle(found)
        if found:
            per_manual[found[0][0].manual].extend(found[:20])
    for manual in per_manual:
        rng_for(seed, "template-manual", manual).shuffle(per_manual[manual])
    total = sum(len(v) for v in per_manual.values())
    share = {m: len(v) / max(total, 1) for m, v in per_manual.items()}
    chosen: list[tuple[Unit, str, str]] = []
    for manual, items in sorted(per_manual.items()):
        # square-root weighting: big manuals do not crowd out the small ones
        quota = int(limit * math.sqrt(share[manual]) / sum(math.sqrt(v) for v in share.values())) + 1
        chosen += items[:quota]
    for unit, q, kind in chosen[: limit or None]:
        rng = rng_for(seed, "template-pairs", unit.id)
        if kind == "template_default":
            # the description of the option (no default in it) is the hard negative
            def ok(u: Unit) -> bool:
                return not _DEFAULT.search(u.text)
        else:
            x = q.split(" ")[2] if q.startswith("What does") else ""

            def ok(u: Unit, x: str = x) -> bool:
                return not x or x not in u.text

        pairs, _ = reader_pairs(q, unit, corpus, rng, (), ok)
        if not any(label == 0 for _, label, _ in pairs):
            continue
        stats[f"question:{kind}"] += 1
        yield _group(f"t:{unit.id}", q, pairs, corpus.split[unit.doc], unit, "reader", kind)
