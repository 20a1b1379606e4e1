"""Quotable units and what each is quoted after (answer/units.py)."""

from __future__ import annotations

import pytest

from citeline.answer.units import leads, never_an_answer, passage_units


@pytest.mark.parametrize(
    ("text", "trail", "expected"),
    [
        # an option's paragraph: its later sentences are quoted after the one that names it
        (
            "-i: Incremental mode. Read entries from standard input. Keep the database.",
            ("Options",),
            [[], ["-i: Incremental mode."], ["-i: Incremental mode."]],
        ),
        (
            "-i queue_id: Schedule delivery. It is immediate.",
            ("Options",),
            [[], ["-i queue_id: Schedule delivery."]],
        ),
        (
            "maximal_backoff_time (4000s): The maximal time. It applies per message.",
            ("Parameters",),
            [[], ["maximal_backoff_time (4000s): The maximal time."]],
        ),
        # only within the paragraph
        ("-m: Enable MIME parsing.\n\nThis is another paragraph.", ("Options",), [[], []]),
        # a plain word and a colon is not an option ("Note: ...", "Warning: ...")
        ("Note: this is a note. A second sentence.", ("Notes",), [[], []]),
        # a sentence that points back is quoted after the sentence before it, in its paragraph only
        (
            "Run newaliases. This command rebuilds the database. Itself unrelated.",
            ("Aliases",),
            [[], ["Run newaliases."], []],
        ),
        (
            "The status is 75 on failure. Otherwise, it is the command's.\n\nThese are separate.",
            ("Diagnostics",),
            [[], ["The status is 75 on failure."], []],
        ),
        # after an option's label, the sentence before comes next (each quoted once)
        (
            "-i: Incremental mode. Read entries. They are kept.",
            ("Options",),
            [[], ["-i: Incremental mode."], ["-i: Incremental mode.", "Read entries."]],
        ),
        # a definition's term leads every other unit, before a label
        (
            "smtpd_timeout (default: 300s)\n\nsmtpd_timeout: The time limit. It is in seconds.",
            ("Parameters", "smtpd_timeout (default: 300s)"),
            [
                [],
                ["smtpd_timeout (default: 300s)"],
                ["smtpd_timeout (default: 300s)", "smtpd_timeout: The time limit."],
            ],
        ),
    ],
)
def test_leads(text: str, trail: tuple[str, ...], expected: list[list[str]]) -> None:
    units = passage_units(text, 40)
    assert [[u.text for u in before] for before in leads(units, text, 40, trail)] == expected


@pytest.mark.parametrize(
    ("text", "never"),
    [
        ("See IGNORE for a silent alternative.", True),
        ("(See also postconf(5).)", True),
        ("see the example below:", True),
        ("I could not find this in the available documents.", True),
        ("What does IGNORE do?", True),
        ("IGNORE: Delete the current line from the input.", False),
        # a pointer long enough to say something itself stays a candidate
        ("See RFC 5321 for why a client must not send more than 100 recipients per message.", False),
        ("Seed the random number generator first.", False),
        ("Overseen by the queue manager.", False),
    ],
)
def test_never_an_answer(text: str, never: bool) -> None:
    assert never_an_answer(text) is never
