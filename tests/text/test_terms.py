"""The keyword search's terms (text/terms.py): what every store ORs."""

from __future__ import annotations

import pytest

from citeline.text.terms import keyword_phrases, query_terms


@pytest.mark.parametrize(
    ("question", "phrases"),
    [
        ("How do I make sshd re-read sshd_config?", ["make", "sshd", "re-read", "reread", "sshd_config"]),
        (
            "Can I send e-mail from a read-only mount?",
            ["send", "e-mail", "email", "read-only", "readonly", "mount"],
        ),
        # codes and names with digits stay as they are
        ("What does LDG-4012 mean for x11-forwarding?", ["ldg-4012", "mean", "x11-forwarding"]),
        ("Run ssh-keygen", ["run", "ssh-keygen", "sshkeygen"]),
    ],
)
def test_a_hyphenated_word_is_also_searched_as_one_word(question: str, phrases: list[str]) -> None:
    assert keyword_phrases(question) == phrases


@pytest.mark.parametrize(
    ("question", "terms"),
    [
        ("Which parameter, i.e. which setting, e.g. for mail?", ["parameter", "setting", "mail"]),
        ("What is the default of smtpd_recipient_limit?", ["default", "smtpd_recipient_limit"]),
    ],
)
def test_abbreviations_are_no_terms(question: str, terms: list[str]) -> None:
    assert query_terms(question) == terms
