"""The 1.5B judge's prompt and reply parsing (training/teacher_labels.py); no model is loaded."""

from __future__ import annotations

import math

import pytest
from training.teacher_labels import MAX_UNITS, agreement, digit_probs, messages, parse_reply


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("3: the default is 3 minutes", (3, "the default is 3 minutes")),
        ('2: "300 seconds"', (2, "300 seconds")),
        ("0", (0, "")),
        ("7: beyond the list", (0, "")),  # only 5 units shown
        ("The answer is in passage 2", (0, "")),
        ("", (0, "")),
    ],
)
def test_a_reply_gives_the_unit_and_its_quote(raw: str, expected: tuple[int, str]) -> None:
    assert parse_reply(raw, 5) == expected


def test_the_first_tokens_digits_are_the_soft_label() -> None:
    top = [
        {"token": "2", "logprob": math.log(0.6)},
        {"token": "0", "logprob": math.log(0.2)},
        {"token": "Passage", "logprob": math.log(0.1)},
        {"token": "9", "logprob": math.log(0.1)},  # beyond the three units shown
    ]
    assert digit_probs(top, 3) == [0.25, 0.0, 0.75, 0.0]
    assert digit_probs([{"token": "The", "logprob": 0.0}], 3) == [0.25] * 4


def test_the_prompt_lists_the_units_after_a_fixed_prefix() -> None:
    a = messages("What is X?", ["one", "two"])
    b = messages("What is Y?", ["three"])
    assert a[:-1] == b[:-1]  # the cached prefix is the same for every question
    assert a[-1]["content"].endswith("Passages:\n1. one\n2. two")
    assert MAX_UNITS == 9  # one digit per choice


def test_agreement_counts_picks_of_gold_units_and_nones() -> None:
    def rec(answerable: bool, gold: list[int], choice: int) -> dict[str, object]:
        probs = [0.0] * (len(gold) + 1)
        probs[choice] = 1.0
        units = [{"sha1": str(i), "gold": g} for i, g in enumerate(gold)]
        return {"answerable": answerable, "units": units, "choice": choice, "probs": probs, "seconds": 2.0}

    out = agreement([rec(True, [0, 1], 2), rec(True, [1, 0], 2), rec(False, [0, 0], 0), rec(True, [0, 0], 1)])
    assert out["teacher_picks_gold_unit"] == 0.5
    assert out["teacher_says_none_unanswerable"] == 1.0
    assert out["answerable_gold_not_shown"] == 1
