"""Whether a question's term occurs in evidence text (answer/relevance.py): the test behind
"codes that appear in no candidate refuse outright"."""

from __future__ import annotations

import pytest

from citeline.answer.relevance import evidence_words, term_present


@pytest.mark.parametrize(
    ("term", "text", "present"),
    [
        # a release series: any release of it mentions it
        ("3.x", "mynetworks_style (default: postfix ≥ 3.0: host, postfix < 3.0: subnet)", True),
        ("3.x", "since postfix 3.10 the default is host", True),
        ("2.4.x", "added in 2.4.12", True),
        ("3.x", "available with postfix 13.1 and later", False),
        ("3.x", "postfix 2.11 and later", False),
        ("3.x", "version 3 of the protocol", False),
        ("v5.x", "since v5.2", True),
        # codes stay exact; plain words meet their inflections
        ("sync_batch", "set sync_batch to 10", True),
        ("sync_batch", "set sync_batches to 10", True),  # a substring: identifiers match as text
        ("3.5.0", "released in 3.5.1", False),
        ("configured", "the configuration file", True),
        ("relay", "mail is delivered locally", False),
    ],
)
def test_term_present(term: str, text: str, present: bool) -> None:
    lowered = text.lower()
    assert term_present(term, evidence_words(lowered), lowered) is present
