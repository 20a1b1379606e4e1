"""Answer-shaped reader pairs (training/context_pairs.py): labels by the gold string, made negatives."""

from __future__ import annotations

import random

import pytest
from training.context_pairs import echo, states, swapped


@pytest.mark.parametrize(
    ("text", "answers", "expected"),
    [
        ("Up to 1000 files per directory", ["1000"], True),
        ("Up to 10000 files per directory", ["1000"], False),  # a number inside another is not it
        ("The default is 10.", ["10"], True),
        ("The default is 1.0 seconds.", ["1"], False),  # a version-like number is one word
        ("Use  --print-inputs  to list them", ["--print-inputs"], True),
        ("use --print-inputs-only", ["--print-inputs"], False),
        ("THE DEFAULT IS FOREVER", ["forever"], True),
        ("Nothing here", [], False),
    ],
)
def test_a_unit_answers_when_it_quotes_a_gold_string_as_a_word(
    text: str, answers: list[str], expected: bool
) -> None:
    assert states(text, answers) is expected


@pytest.mark.parametrize(
    ("question", "statement"),
    [
        ("What is the default value of smtpd_timeout?", "The default value of smtpd_timeout."),
        (
            "How many files per directory must a file system support?",
            "Files per directory must a file system support.",
        ),
        ("Which option prints the inputs?", "Option prints the inputs."),
    ],
)
def test_the_echo_restates_the_question_without_a_value(question: str, statement: str) -> None:
    assert echo(question) == statement


def test_a_value_swap_replaces_the_answer_with_another_value_of_its_shape() -> None:
    rng = random.Random(1)
    out = swapped("Limits: The default is 10 sessions.", ["10"], ["10", "300s", "25"], rng)
    assert out in ("Limits: The default is 300s sessions.", "Limits: The default is 25 sessions.")
    assert swapped("The default is forever.", ["forever"], ["10", "25"], rng) is None  # no word to swap in
    assert swapped("Nothing to swap.", ["10"], ["25"], rng) is None
