"""Answer spans without an LLM (issue 34, item 5): template questions whose exact answer string is
in the unit, on the training manuals of manuals.toml, for the span head (``training/span_reader.py``).

    PYTHONPATH=src:. python -m training.answer_spans --units ~/.cache/citeline/train/data/units.jsonl \
        --out ~/.cache/citeline/train/spans/spans.jsonl

``training/templates.py`` asks "What is the default value of X?" of a unit that states a default, but
keeps no answer string, so a span head cannot learn where the value is. Here every question comes
with the words that answer it, cut from the unit, and is kept only when those words are in the unit:

- ``default``: "the default is 5 seconds", "defaults to on", "Default: 0", "(default: "none")"
  -> "What is the default value of X?" (X: the option its section or its first words name),
  answer "5 seconds";
- ``limit``: "The maximum length of a line is 1024 characters" -> "What is the maximum length of
  a line?", answer "1024 characters";
- ``which``: a unit that starts with the name it describes ("--inplace This option ...",
  "queue_time: The amount ...", "KeepAlive enables ...") -> "Which option <the description's first
  words>?", answer the name (the description's own words are in the question, the name is not);
- ``since``: "available since version 2.4.1" -> "Since which version is X available?";
- ``row``: a table row of "Header: value; Header: value" cells -> "What is the <header> of <first
  cell>?", answer the cell.

Each question's negatives are the same document's units without the answer string (its section's
first: same topic, no value, the SQuAD 2.0 answer-removed negative) and the question restated as a
statement under the unit's heading (the echo). Documents of the test split (split_of, pinned
manuals) are left out; the golden manuals and the reserved packages are not in manuals.toml.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from training import templates as T
from training.common import load_manuals
from training.context_pairs import echo
from training.units import Unit, load_units, model_input, prefix_of, rng_for, split_of, stable_hash

_UNIT = (
    r"(?:%|[KMGT]i?B\b|bytes?\b|[kKmMgG]\b|seconds?\b|secs?\b|minutes?\b|mins?\b|hours?\b|days?\b|ms\b|"
    r"s\b|milliseconds?\b|microseconds?\b|kilobytes?\b|megabytes?\b|lines?\b|characters?\b|"
    r"connections?\b|times\b|entries\b|columns?\b|rows?\b|messages?\b|requests?\b|processes\b|"
    r"threads?\b|files?\b|levels?\b|pixels?\b|points?\b|blocks?\b|pages?\b|retries\b)"
)
NUMBER = rf"-?\d[\d,]*(?:\.\d+)?(?:\s?{_UNIT})?"
VALUE = (
    rf"\"[^\"\n]{{1,40}}\"|'[^'\n]{{1,40}}'|“[^”\n]{{1,40}}”|`[^`\n]{{1,40}}`|{NUMBER}(?![\w.-]*\w)"
    r"|[A-Za-z_$/][\w./:+$-]*\w"
)
_WORD_VALUES = {
    "on", "off", "yes", "no", "true", "false", "none", "enabled", "disabled", "empty", "unset", "unlimited",
    "auto", "all", "never", "always", "null", "infinite", "infinity", "zero",
}  # fmt: skip
DEFAULT_VALUE = re.compile(
    rf"\b(?:[Tt]he default(?: value)?(?: setting)?(?: for this(?: option| directive| parameter)?)?"
    rf"(?: is| of \S+ is|:|\s*=)|[Dd]efaults? (?:value )?(?:is |to |are )|[Dd]efault:|[Dd]efault value:)"
    rf"\s*(?:set to |equal to )?({VALUE})"
)
LIMIT = re.compile(
    rf"\b[Tt]he (maximum|minimum|max\.?|min\.?)\s+((?:[a-z]+\s){{0,4}}?[a-z]+)\s+(?:is|are|allowed is|"
    rf"value is)\s+(?:currently |set to |about |approximately )?({NUMBER})\b"
)
SINCE = re.compile(r"\b(?:[Ss]ince|[Aa]s of|[Nn]ew in|[Aa]dded in|[Ii]ntroduced in|[Aa]vailable in)\s+"
                   r"(?:[A-Za-z]+\s)?(?:[Vv]ersion\s+)?(\d+\.\d+(?:\.\d+)?)\b")  # fmt: skip
_DESC = re.compile(
    r"^(?:This (?:option|directive|parameter|setting|variable|command|flag) |It )?"
    r"((?:[a-z]+s|is|are|can|may|will|must) \S.*)$"
)
_VERBISH = re.compile(r"^(?:[a-z]{3,}s|is|are|can|may|will|must)$")
_STOP_DESC = {"this", "is", "was", "has", "does", "as", "its", "us", "thus", "always"}
_TRAIL_KIND = (
    ("directive", re.compile(r"\bdirective", re.I)),
    ("parameter", re.compile(r"\bparameter|\bsetting|\bconfigur", re.I)),
    ("variable", re.compile(r"\bvariable", re.I)),
    ("command", re.compile(r"\bcommand", re.I)),
)


def _clean_value(value: str) -> str | None:
    v = value.strip().rstrip(".,;:)")
    if not v or len(v) > 40:
        return None
    if v[0] in "\"'“`":
        return v if len(v) >= 3 else None
    if re.match(r"-?\d", v):
        return v
    if v.casefold() in _WORD_VALUES:
        return v
    # an identifier-shaped value (a path, a name with _ . / or digits, an upper-case constant)
    if re.search(r"[_./$:]|\d", v) or (v.isupper() and len(v) >= 2):
        return v
    return None


def _named(unit: Unit) -> str:
    for word, pattern in _TRAIL_KIND:
        if any(pattern.search(t) for t in unit.trail):
            return word
    return "option"


def default_question(unit: Unit, rng: Any) -> tuple[str, str, str] | None:
    m = DEFAULT_VALUE.search(unit.text)
    if m is None or T._NOT_A_DEFAULT_OF.search(unit.text):
        return None
    value = _clean_value(m.group(1))
    x = T.subject_of(unit)
    if value is None or x is None or value.casefold() in x.casefold() or x.casefold() in value.casefold():
        return None
    return rng.choice(T.DEFAULT_TEMPLATES).format(x=x), value, "default"


def limit_question(unit: Unit, rng: Any) -> tuple[str, str, str] | None:
    m = LIMIT.search(unit.text)
    if m is None:
        return None
    bound = {"max": "maximum", "min": "minimum"}.get(m.group(1).rstrip(".").lower(), m.group(1).lower())
    noun = m.group(2)
    x = T.subject_of(unit)
    where = f" for {x}" if x and x not in noun else ""
    return f"What is the {bound} {noun}{where}?", m.group(3).strip(), "limit"


_OPTION_TERM = re.compile(
    r"^((?:--?[A-Za-z][\w-]*)(?:[= ]?[A-Z<\[][\w<>\[\].=-]*)?"
    r"(?:,\s*--?[A-Za-z][\w-]*(?:[= ]?[A-Z<\[][\w<>\[\].=-]*)?)*)(?::\s+|;\s+|\s+(?=[A-Z]))"
)
_IMPERATIVE = frozenset(
    "be show print use do make set display list record read write allow enable disable add remove delete "
    "create specify output send ignore keep force skip treat run limit include exclude suppress turn "
    "change select stop start check copy move update preserve give report return search sort apply append "
    "override assume tell try save load open close wait exit reset compress transfer generate define mark "
    "clear rename prevent avoid omit request receive follow delay bind accept reject log".split()
)


def _thing(name: str, unit: Unit) -> str:
    if name.startswith("-"):
        return "option"
    if name.startswith("mod_"):
        return "module"
    if "_" in name and name.upper() == name:
        return "constant"
    return _named(unit)


def _clause(words: list[str]) -> str:
    return re.split(r"(?<=[a-z0-9)])[.;:](?:\s|$)|\s\(", " ".join(words[:16]))[0].rstrip(",")


def which_question(unit: Unit, rng: Any) -> tuple[str, str, str] | None:
    """ "Which option <description>?" of a unit that starts with the name it describes; "Which option do
    I use to <description>?" when the description is an imperative ("Record a file ...")."""
    m = _OPTION_TERM.match(unit.text)
    if m is not None:
        term = m.group(1)
        options = re.findall(r"--?[A-Za-z][\w-]*", term)
        name = max(options, key=len)
    else:
        m = T._LEADING.match(unit.text)
        if m is None or T._leading_subject(unit) is None:
            return None
        name = m.group(1)
    rest = unit.text[m.end() :].strip()
    words = rest.split()
    if len(words) < 4:
        return None
    thing = _thing(name, unit)
    if words[0].lower() in _IMPERATIVE and words[0][0].isupper():
        clause = _clause([words[0].lower(), *words[1:]])
        question = f"Which {thing} do I use to {clause}?"
    else:
        d = _DESC.match(rest)
        if d is None:
            return None
        words = d.group(1).split()
        if not _VERBISH.match(words[0]) or words[0] in _STOP_DESC:
            return None
        clause = _clause(words)
        question = f"Which {thing} {clause}?"
    if name in clause or len(clause.split()) < 3:
        return None
    return question, name, "which"


def since_question(unit: Unit, rng: Any) -> tuple[str, str, str] | None:
    m = SINCE.search(unit.text)
    x = T._trail_subject(unit) or T._leading_subject(unit)
    if m is None or x is None or m.group(1) in x:
        return None
    return f"Since which version is {x} available?", m.group(1), "since"


def _key_of(unit: Unit) -> str | None:
    """The row's subject from its section's name ("Tag¶", "KeepAlive Directive"): one word."""
    if not unit.trail:
        return None
    name = T._TRAIL_NOISE.sub("", unit.trail[-1]).strip(" :\uf0c1")
    return name if len(name.split()) == 1 and len(name) >= 3 else None


#: cells nobody asks for by their header ("What is the mandatory of X?"), or whose value is prose
_NOT_ASKED = frozenset(
    "description notes note comment comments name mandatory use status obsolete legacy directive".split()
) | {"obsolete legacy directive"}


def row_question(unit: Unit, rng: Any) -> tuple[str, str, str] | None:
    """ "What is the <header> of <key>?" of a table row of "Header: value; ..." cells; the key is the
    first cell without a header ("dnssec_request_domains; Use: routers; Default: *"), else a "name"
    cell, else the section's one-word name ("Tag¶ > type: string; default: none")."""
    if unit.kind != "row":
        return None
    cells = []
    for part in unit.text.rstrip(".").split("; "):
        h, sep, v = part.partition(": ")
        cells.append((h.strip(), v.strip()) if sep else ("", h.strip()))
    bare = [v for h, v in cells if not h]
    named = [v for h, v in cells if h.casefold() in ("name", "option", "directive", "parameter", "variable")]
    key = (bare[0] if len(bare) == 1 and cells[0][0] == "" else None) or (named[0] if named else None)
    key = key or _key_of(unit)
    if not key or len(key.split()) > 5 or not re.search(r"[A-Za-z]{2}", key):
        return None
    options = [
        (h, v)
        for h, v in cells
        if h and v and v != key and len(v.split()) <= 8 and len(h.split()) <= 4 and len(v) <= 60
        and h.casefold() not in _NOT_ASKED
    ]  # fmt: skip
    if not options:
        return None
    header, value = rng.choice(options)
    return f"What is the {header.lower()} of {key}?", value, "row"


MAKERS = (default_question, limit_question, since_question, row_question, which_question)


def found_in(answer: str, text: str) -> bool:
    a = re.escape(" ".join(answer.split()).casefold())
    return re.search(rf"(?<![\w-]){a}(?![\w-])", " ".join(text.split()).casefold()) is not None


def span_questions(units: list[Unit], seed: int) -> Iterator[tuple[Unit, str, str, str]]:
    for u in units:
        if u.kind == "window" or not 4 <= len(u.text.split()) <= 80:
            continue
        for make in MAKERS:
            got = make(u, rng_for(seed, "span", make.__name__, u.id))
            if got is not None and found_in(got[1], u.text):
                yield u, *got
                break


def rows_for(
    unit: Unit,
    question: str,
    answer: str,
    kind: str,
    by_doc: dict[str, list[Unit]],
    seed: int,
    negatives: int,
) -> list[dict[str, Any]]:
    rng = rng_for(seed, "span-neg", unit.id)
    pool = [
        u
        for u in by_doc[unit.doc]
        if u.kind != "window"
        and u.id != unit.id
        and not found_in(answer, u.text)
        and len(u.text.split()) >= 4
    ]
    same = [u for u in pool if u.section == unit.section]
    rng.shuffle(same)
    other = [u for u in pool if u.section != unit.section]
    rng.shuffle(other)
    chosen = (same[: (negatives + 1) // 2] + other)[:negatives] if other else same[:negatives]
    qid = f"t:{unit.id}"
    base = {"set": unit.manual, "qid": qid, "task": "reader", "a": question, "answers": [answer],
            "v1": 0.0, "answerable": True, "qsource": f"span_{kind}"}  # fmt: skip
    out = [{**base, "b": unit.b, "label": 1, "kind": "answer", "rank": 0}]
    out += [{**base, "b": u.b, "label": 0, "kind": "context", "rank": i + 1} for i, u in enumerate(chosen)]
    out.append(
        {**base, "b": model_input(prefix_of(unit.title, unit.trail), echo(question)), "label": 0,
         "kind": "echo", "rank": -1}
    )  # fmt: skip
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--units", type=Path, required=True, help="build_data.py's units.jsonl")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--per-doc", type=int, default=40, help="questions per document at most, per kind")
    p.add_argument("--negatives", type=int, default=4)
    p.add_argument(
        "--max-rows", type=int, default=700, help="row questions at most (Apache's directive tables dominate)"
    )
    p.add_argument("--seed", type=int, default=13)
    args = p.parse_args()
    pinned = {m.package: m.split for m in load_manuals()}
    units = [
        u for u in load_units(args.units) if split_of(u.doc, args.seed, pinned.get(u.manual, "")) != "test"
    ]
    by_doc: dict[str, list[Unit]] = defaultdict(list)
    for u in units:
        by_doc[u.doc].append(u)
    taken: Counter[tuple[str, str]] = Counter()
    seen: set[tuple[str, str]] = set()
    stats: Counter[str] = Counter()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_suffix(".tmp")
    with tmp.open("w", encoding="utf-8") as f:
        # a seeded order, so the caps do not favour the manuals listed first
        shuffled = sorted(units, key=lambda u: stable_hash(f"{args.seed}:{u.id}"))
        for unit, question, answer, kind in span_questions(shuffled, args.seed):
            if taken[(unit.doc, kind)] >= args.per_doc or (question, answer) in seen:
                continue
            if kind == "row" and stats["row"] >= args.max_rows:
                continue
            taken[(unit.doc, kind)] += 1
            seen.add((question, answer))
            stats[f"{unit.manual}:{kind}"] += 1
            stats[kind] += 1
            for row in rows_for(unit, question, answer, kind, by_doc, args.seed, args.negatives):
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
    tmp.rename(args.out)
    print(json.dumps(dict(sorted(stats.items())), indent=1), file=sys.stderr)


if __name__ == "__main__":
    main()
