"""Template questions with exact answer strings (training/answer_spans.py): the answer is cut from the
unit and the question is kept only when that string is in it."""

from __future__ import annotations

import random

import pytest
from training.answer_spans import (
    default_question,
    found_in,
    limit_question,
    row_question,
    rows_for,
    since_question,
    span_questions,
    which_question,
)
from training.units import Unit


def unit(text: str, trail: tuple[str, ...] = ("Options",), kind: str = "sentence", uid: str = "d#0") -> Unit:
    return Unit(uid, "m/d", "m", "Title", trail, " > ".join(trail), kind, text, 0, len(text))


@pytest.mark.parametrize(
    ("text", "trail", "subject", "answer"),
    [
        ("The default is 300 seconds.", ("KeepAliveTimeout Directive",), "KeepAliveTimeout", "300 seconds"),
        ("queue_time: how long a message waits; the default is 5m.", ("Options",), "queue_time", "5m"),
        ('Defaults to "none".', ("log_level",), "log_level", '"none"'),
        ("--compress-level=NUM sets the level. Default: 6", ("Options",), "--compress-level", "6"),
        ("MaxClients limits the clients; it defaults to off.", ("Options",), "MaxClients", "off"),
    ],
)
def test_a_default_question_carries_the_stated_value(
    text: str, trail: tuple[str, ...], subject: str, answer: str
) -> None:
    got = default_question(unit(text, trail), random.Random(1))
    assert got is not None
    question, value, kind = got
    assert subject in question and value == answer and kind == "default"


@pytest.mark.parametrize(
    "text",
    [
        "The default is the value of the environment.",  # a word, not a value
        "Use this to override the default of 5 seconds.",  # the default of something else
        "The default is 5.",  # no option named anywhere
    ],
)
def test_no_default_question_without_a_value_and_its_option(text: str) -> None:
    assert default_question(unit(text, ("General notes",)), random.Random(1)) is None


def test_a_limit_question_names_the_bound_and_its_noun() -> None:
    got = limit_question(unit("The maximum length of a line is 1024 characters."), random.Random(1))
    assert got == ("What is the maximum length of a line?", "1024 characters", "limit")


@pytest.mark.parametrize(
    ("text", "question", "answer"),
    [
        (
            "--inplace This option changes how rsync transfers a file when its data needs updating.",
            "Which option changes how rsync transfers a file when its data needs updating?",
            "--inplace",
        ),
        (
            "retry_interval: specifies how long to wait before a failed delivery is tried again.",
            "Which option specifies how long to wait before a failed delivery is tried again?",
            "retry_interval",
        ),
    ],
)
def test_a_which_question_asks_for_the_name_the_unit_starts_with(
    text: str, question: str, answer: str
) -> None:
    assert which_question(unit(text), random.Random(1)) == (question, answer, "which")


def test_an_imperative_description_asks_which_option_to_use() -> None:
    text = "--write-batch=FILE: Record a file that can later be applied to another destination."
    assert which_question(unit(text), random.Random(1)) == (
        "Which option do I use to record a file that can later be applied to another destination?",
        "--write-batch",
        "which",
    )


@pytest.mark.parametrize(
    ("text", "trail", "question", "answer"),
    [
        (
            "dnssec_request_domains; Use: routers; Default: *",
            ("Generic options for routers",),
            "What is the {h} of dnssec_request_domains?",
            None,
        ),
        ("type: word; default: template", ("Action Parameters", "How it works¶"), None, None),
        (
            "type: word; default: none",
            ("Action Parameters", "Template¶"),
            "What is the {h} of Template?",
            None,
        ),
    ],
)
def test_a_row_question_takes_its_key_from_a_bare_cell_or_the_section(
    text: str, trail: tuple[str, ...], question: str | None, answer: None
) -> None:
    got = row_question(unit(text, trail, kind="row"), random.Random(1))
    if question is None:
        assert got is None  # no key: no bare cell, and the section's name is not one word
        return
    assert got is not None
    asked = {question.format(h=h): v for h, v in (("use", "routers"), ("default", "*"), ("type", "word"))}
    assert got[0] in asked and got[1] == asked[got[0]]


def test_a_which_question_needs_a_description_that_starts_with_a_verb() -> None:
    assert which_question(unit("--inplace: see above."), random.Random(1)) is None


def test_a_since_question_reads_the_version() -> None:
    text = "This option is available since version 2.4.31."
    got = since_question(unit(text, ("proxy_protocol",)), random.Random(1))
    assert got == ("Since which version is proxy_protocol available?", "2.4.31", "since")


def test_a_row_question_asks_a_cell_by_its_header_and_the_first_cell() -> None:
    row = unit("Name: SQLITE_MAX_LENGTH; Default: 1000000000; Description: the longest string", kind="row")
    assert row_question(row, random.Random(1)) == (
        "What is the default of SQLITE_MAX_LENGTH?",
        "1000000000",
        "row",
    )


@pytest.mark.parametrize(
    ("answer", "text", "expected"),
    [
        ("5", "the default is 5 seconds", True),
        ("5", "the default is 50 seconds", False),
        ("--inplace", "use --inplace-only", False),
        ("300 seconds", "Default is 300  Seconds.", True),
    ],
)
def test_an_answer_is_found_as_whole_words(answer: str, text: str, expected: bool) -> None:
    assert found_in(answer, text) is expected


def test_each_question_has_its_answer_unit_negatives_without_the_answer_and_an_echo() -> None:
    units = [
        unit("It sets the time to wait for a request.", ("KeepAliveTimeout Directive",), uid="d#0"),
        unit("The default is 300 seconds.", ("KeepAliveTimeout Directive",), uid="d#1"),
        unit("A value of 300 seconds is also fine.", ("KeepAliveTimeout Directive",), uid="d#2"),
        unit("KeepAlive enables persistent connections for clients.", ("KeepAlive Directive",), uid="d#3"),
    ]
    found = list(span_questions(units, 13))
    default = [f for f in found if f[3] == "default"]
    assert len(default) == 1 and default[0][0].id == "d#1" and default[0][2] == "300 seconds"
    rows = rows_for(*default[0], {"m/d": units}, 13, negatives=4)
    labels = {r["b"].split(": ", 1)[1]: r["label"] for r in rows if r["kind"] != "echo"}
    assert labels["The default is 300 seconds."] == 1
    assert "A value of 300 seconds is also fine." not in labels  # it holds the answer: not a negative
    assert sum(labels.values()) == 1 and len(labels) == 3
    (echo_row,) = [r for r in rows if r["kind"] == "echo"]
    assert echo_row["label"] == 0 and "300" not in echo_row["b"]
    assert all(r["answers"] == ["300 seconds"] for r in rows)
