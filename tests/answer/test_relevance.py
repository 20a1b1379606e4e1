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
        # a versioned name, however the text writes the pair
        ("mysql 5.7", "requires mysql 5.7 or later", True),
        ("mysql 5.7", "requires mysql™ 5.7.2", True),
        ("chronicles 2", "xenoblade chronicles™ 2 expansion pass", True),
        ("no 1", "the year-end world no.1 for the second year", True),
        ("postfix 3", "since postfix version 3 the default is host", True),
        ("mysql 5.7", "requires mysql 5.6 and 7.0", False),
        ("postfix 3", "postfix 35 added this", False),
        ("chronicles 2", "xenoblade chronicles: definitive edition, released 2", False),
        # a year is an edition: the name and the year anywhere in the text
        ("open 2021", "to win the men's singles title at the 2021 us open", True),
        ("election 2017", "the 2017 french presidential election", True),
        ("election 2017", "the 2022 french presidential election", False),
        ("server 2022", "windows server 2019 supports it", False),
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
