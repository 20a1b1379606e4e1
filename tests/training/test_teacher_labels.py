"""The 1.5B judge's prompt, soft labels and quotes (training/teacher_labels.py); no model is loaded."""

from __future__ import annotations

import math

import pytest
from training.teacher_labels import agreement, clean_quote, messages, p_yes


def test_p_yes_reads_the_first_tokens_yes_and_no() -> None:
    top = [
        {"token": "YES", "logprob": math.log(0.6)},
        {"token": " no", "logprob": math.log(0.2)},
        {"token": "Passage", "logprob": math.log(0.2)},
    ]
    assert p_yes(top) == 0.75
    assert p_yes([{"token": "The", "logprob": 0.0}]) == 0.5  # neither: no opinion


@pytest.mark.parametrize(
    ("raw", "unit", "expected"),
    [
        ('"The default is 10:30:100."', "MaxStartups: The default is 10:30:100.", "The default is 10:30:100"),
        ("the DEFAULT is  5", "Timeout: The default is 5 seconds.", "the DEFAULT is 5"),
        ("The default is 7", "Timeout: The default is 5 seconds.", ""),  # not in the unit: no span
        ("", "anything", ""),
    ],
)
def test_a_quote_counts_only_when_it_is_in_the_unit(raw: str, unit: str, expected: str) -> None:
    assert clean_quote(raw, unit) == expected


def test_units_of_one_question_share_the_prompt_prefix() -> None:
    a = messages("What is X?", "Options: X is 5.")
    b = messages("What is X?", "Options: Y is 6.")
    assert a[0] == b[0]
    assert a[1]["content"].split("Passage:")[0] == b[1]["content"].split("Passage:")[0]
    assert "Options: X is 5." in a[1]["content"]


def test_agreement_counts_picks_of_gold_units_and_nones() -> None:
    def rec(answerable: bool, gold: list[int], probs: list[float]) -> dict[str, object]:
        best = max(range(len(probs)), key=lambda i: probs[i])
        choice = best + 1 if probs[best] >= 0.5 else 0
        units = [{"sha1": str(i), "gold": g} for i, g in enumerate(gold)]
        return {"answerable": answerable, "units": units, "choice": choice, "probs": probs, "seconds": 2.0}

    out = agreement(
        [
            rec(True, [0, 1], [0.2, 0.9]),  # the gold unit
            rec(True, [1, 0], [0.3, 0.8]),  # another unit
            rec(False, [0, 0], [0.1, 0.2]),  # none, rightly
            rec(True, [0, 0], [0.7, 0.1]),  # gold not shown
        ]
    )
    assert out["teacher_picks_gold_unit"] == 0.5
    assert out["teacher_says_none_unanswerable"] == 1.0
    assert out["answerable_gold_not_shown"] == 1
    assert out["refusal_auroc"] == 1.0
