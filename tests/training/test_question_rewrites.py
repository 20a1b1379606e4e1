"""Reworded questions (training/question_rewrites.py): an answered question asked again in a
user's words, with the same units and labels."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from training.common import Logger, ReservedPackageError
from training.question_rewrites import (
    TEST_SHARE,
    answered,
    messages,
    plan,
    rewrite_groups,
    rewrite_problem,
    stage_rewrites,
)

UNIT = "Mail queue > Limits: A command that runs longer than command_time_limit seconds (default: 1000s) is terminated."
QUESTION = "What is the default value of command_time_limit?"


@pytest.mark.parametrize(
    ("rewrite", "expected"),
    [
        ("How long may a mail filter command run in the mail queue before it is stopped?", None),
        ("What is the default value of command_time_limit?", "same_wording"),
        ("What is the default value of the command_time_limit option?", "same_wording"),
        # more of the unit's own words than the original had
        ("How many seconds may a mail queue command run before command_time_limit ends it?", "more_copied"),
        ("Is a mail queue command stopped after 1000 seconds?", "names_number"),
        ("How long may a viewer command run in the mail queue?", "example_copy"),
        ("How long may a filter run", "no_question_mark"),
        ("How long may a rocket fly before it lands?", "off_topic"),
        ("", "empty"),
    ],
)
def test_rewrite_problem(rewrite: str, expected: str | None) -> None:
    assert rewrite_problem(rewrite, QUESTION, UNIT) == expected


def test_the_prompt_gives_the_answer_unit_and_the_question_last() -> None:
    got = messages(UNIT, QUESTION)
    assert got[0]["role"] == "system"
    assert got[-1] == {"role": "user", "content": f"Answer: {UNIT}\nQuestion: {QUESTION}"}
    # each example's reply is JSON with one question
    replies = [m["content"] for m in got if m["role"] == "assistant"]
    assert replies and all(json.loads(r)["question"].endswith("?") for r in replies)


def _row(
    group: str, kind: str, label: int, split: str = "train", a: str = QUESTION, b: str = UNIT
) -> dict[str, Any]:
    return {
        "a": a,
        "b": b,
        "label": label,
        "group": group,
        "kind": kind,
        "qsource": "template_default",
        "source": "m/a.html",
        "split": split,
    }


def test_answered_takes_the_first_positive_of_groups_with_an_answer_unit() -> None:
    rows = [
        _row("t:1", "same_section", 0, b="other"),
        _row("t:1", "pos", 1),
        _row("t:1", "pos", 1, b="second positive"),
        _row("u:2", "unanswerable", 0),  # no answer unit: nothing to reword
        _row("k:3", "pos", 1, split="test", a="When?", b="In 2019."),
    ]
    assert answered(rows) == {"t:1": ("train", QUESTION, UNIT), "k:3": ("test", "When?", "In 2019.")}


def test_the_plan_is_seeded_and_takes_its_share_of_test_groups() -> None:
    groups = {f"r:{i}": ("train" if i % 3 else "test", "q?", "b") for i in range(300)}
    got = plan(groups, 13, 100)
    assert len(got) == len(set(got)) == 100
    assert sum(groups[g][0] == "test" for g in got) == round(100 * TEST_SHARE)
    assert got == plan(groups, 13, 100) and got != plan(groups, 14, 100)


def test_rewrite_groups_copy_the_group_with_the_new_question() -> None:
    good = "How long may a mail filter command run in the mail queue before it is stopped?"
    groups: list[dict[str, Any]] = [
        {"split": "train", "rows": [_row("t:1", "pos", 1), _row("t:1", "same_section", 0, b="other")]},
        {"split": "train", "rows": [_row("t:2", "pos", 1)]},
        {"split": "train", "rows": [_row("t:3", "pos", 1)]},
    ]
    records = [
        {"group": "t:1", "question": QUESTION, "rewrite": good},
        {"group": "t:2", "question": QUESTION, "rewrite": QUESTION},  # not reworded
        {"group": "t:3", "question": "An older question?", "rewrite": good},  # stale record
    ]
    stats: Counter[str] = Counter()
    got = list(rewrite_groups(groups, records, stats))
    assert len(got) == 1
    rows = got[0]["rows"]
    assert [(r["a"], r["group"], r["label"], r["b"]) for r in rows] == [
        (good, "w:t:1", 1, UNIT),
        (good, "w:t:1", 0, "other"),
    ]
    assert {r["qsource"] for r in rows} == {"rewrite_template_default"}
    assert stats == {"rewrites:kept": 1, "rewrites:same_wording": 1, "rewrites:stale": 1}
    assert groups[0]["rows"][0]["a"] == QUESTION  # the original group is left as it was


def test_the_rewrites_stage_refuses_a_reserved_manual_before_loading_a_model(tmp_path: Path) -> None:
    row = {**_row("t:1", "pos", 1), "source": "postfix-doc/usr/share/doc/postfix/html/x.html"}
    (tmp_path / "reader_train.jsonl").write_text(json.dumps(row) + "\n")
    with pytest.raises(ReservedPackageError):
        stage_rewrites(tmp_path, 10, "0.5b", 1, 13, 0, Logger(tmp_path / "log"))
    assert not (tmp_path / "rewrites.jsonl").exists()
