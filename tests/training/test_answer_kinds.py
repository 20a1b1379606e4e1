"""Answer-kind questions (training/answer_kinds.py): a question that wants a value of one kind,
and negatives on its topic that hold no value of that kind."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

import pytest
from training.answer_kinds import (
    kind_groups,
    kind_negatives,
    kind_problem,
    lacks,
    messages,
    plan,
    stage_kinds,
    value_of,
)
from training.common import Logger, ReservedPackageError
from training.llm import parse_question
from training.reader_pairs import Corpus
from training.units import Unit


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The interval is, by default, 10 days.", ("quantity", "10 days")),
        ("It cannot be set greater than 24 hours.", ("quantity", "24 hours")),
        ("This is the default (since version 2.2.18).", ("version", "2.2.18")),
        ("Updates ended in March 2019.", ("date", "March 2019")),
        ("The rename was enhanced in 3.25.0 (2018-09-15).", ("date", "2018-09-15")),
        ("The module was originally written by Philip Hazel for Exim.", ("person", "Philip Hazel")),
        # a year needs a month, an ISO date or a word that makes it a time
        ("It listens on port 2000 by default.", None),
        ("Addresses outside the 2000::/3 block are external.", None),
        ("JPEG 2000 frames are stored as they are.", None),
        ("The option takes a file name.", None),
    ],
)
def test_value_of(text: str, expected: tuple[str, str] | None) -> None:
    assert value_of(text) == expected


@pytest.mark.parametrize(
    ("kind", "text", "expected"),
    [
        ("quantity", "The option limits open sessions per client.", True),
        ("quantity", "The option limits open sessions to 10.", False),
        ("date", "The option was added long ago.", True),
        ("date", "The option was added in 2004.", False),
        ("date", "The option was added in June.", False),
        ("version", "Available in 2.4 and later.", False),
        ("version", "Available in all builds.", True),
        ("person", "The module was written by the project's team.", True),
        ("person", "The module was written by Philip Hazel.", False),
    ],
)
def test_lacks_means_no_value_of_the_kind_at_all(kind: str, text: str, expected: bool) -> None:
    assert lacks(kind, text) is expected


@pytest.mark.parametrize(
    ("question", "kind", "value", "expected"),
    [
        ("How long does the cache keep an entry by default?", "quantity", "10 days", None),
        ("Does the cache keep entries for 10 days?", "quantity", "10 days", "names_value"),
        ("What does the cache keep?", "quantity", "10 days", "asks_another_kind"),
        ("When did updates for the first model end?", "date", "March 2019", None),
        ("Which release made this the default?", "version", "2.2.18", None),
        ("Did version 2.2.18 make this the default?", "version", "2.2.18", "names_value"),
        ("Who originally wrote the module?", "person", "Philip Hazel", None),
        ("What does the module do?", "person", "Philip Hazel", "asks_another_kind"),
    ],
)
def test_kind_problem(question: str, kind: str, value: str, expected: str | None) -> None:
    assert kind_problem(question, kind, value) == expected


def test_the_prompt_marks_the_value_and_the_reply_parses() -> None:
    msgs = messages("Cache > Expiry", "Entries expire after 10 days.", "10 days")
    assert msgs[0]["role"] == "system"
    assert msgs[-1]["content"] == "Section: Cache > Expiry\nEntries expire after [[10 days]]."
    # every example asks for its marked value without naming it
    for user, assistant in zip(msgs[1:-1:2], msgs[2:-1:2], strict=True):
        value = user["content"].split("[[", 1)[1].split("]]", 1)[0]
        assert value not in json.loads(assistant["content"])["question"]
    assert parse_question('{"question": " How long  do entries last? "}') == "How long do entries last?"
    assert parse_question("no json here") == ""


def _unit(i: int, text: str, section: str = "s0") -> Unit:
    return Unit(
        f"u{i}", "m/a.html", "m", "Manual", ("Cache", section), section, "sentence", text, 0, len(text)
    )


ANSWER = _unit(0, "Entries of the cache expire after 10 days unless the expiry option says otherwise.")
NO_NUMBER = _unit(1, "The cache expiry option decides when entries of the cache are removed.")
OTHER_NUMBER = _unit(2, "The cache keeps at most 500 entries before the oldest entries expire.")
OFF_TOPIC = _unit(3, "The log file is rotated every night by the cron job of the package.", "s1")
UNITS = [ANSWER, NO_NUMBER, OTHER_NUMBER, OFF_TOPIC]
QUESTION = "How long do entries of the cache last before they expire?"


def test_kind_negatives_hold_no_value_of_the_kind() -> None:
    corpus = Corpus(UNITS, {"m/a.html": "train"}, topical=2)
    got = kind_negatives(QUESTION, ANSWER, "quantity", [ANSWER], corpus, random.Random(1), k=5)
    # OTHER_NUMBER is on topic too, but a number there might be the answer to another reading
    assert [(u.id, label, kind) for u, label, kind in got] == [("u1", 0, "kind_quantity")]


def test_kind_groups_keep_good_questions_with_their_kind_negatives() -> None:
    corpus = Corpus(UNITS, {"m/a.html": "train"}, topical=2)
    records = [
        {"unit": "u0", "kind": "quantity", "value": "10 days", "question": QUESTION},
        {"unit": "u2", "kind": "quantity", "value": "500 entries", "question": "What does the cache keep?"},
    ]
    stats: Counter[str] = Counter()
    groups = list(kind_groups(records, corpus, 13, stats))
    assert len(groups) == 1
    rows = groups[0]["rows"]
    assert {r["qsource"] for r in rows} == {"kind_quantity"}
    assert [r["b"].endswith(ANSWER.text) for r in rows if r["label"] == 1] == [True]
    assert Counter(r["kind"] for r in rows)["kind_quantity"] == 1
    assert stats["kinds:asks_another_kind"] == 1 and stats["kinds:kept_quantity"] == 1


def test_the_plan_spreads_over_kinds_and_is_seeded() -> None:
    units = [
        _unit(i, f"Entries of cache number {i} expire after {i + 2} days by default.") for i in range(20)
    ]
    units += [
        _unit(100 + i, f"This behaviour is the default since version 1.{i}.0 of the cache.")
        for i in range(20)
    ]
    got = plan(units, 13, 10)
    assert Counter(k for _, k, _ in got) == {"quantity": 4, "version": 2}
    assert got == plan(units, 13, 10)


def test_the_kinds_stage_refuses_a_reserved_manual_before_loading_a_model(tmp_path: Path) -> None:
    reserved = Unit(
        "p/x.html", "p/x.html", "postfix-doc", "Postfix", ("Limits",), "s0", "sentence", "x", 0, 1
    )
    with pytest.raises(ReservedPackageError):
        stage_kinds(tmp_path, [reserved], 10, "0.5b", 1, 13, 0, Logger(tmp_path / "log"))
    assert not (tmp_path / "kinds.jsonl").exists()
