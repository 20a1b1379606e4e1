"""Whether a question's term occurs in evidence text (answer/relevance.py): the test behind
"codes that appear in no candidate refuse outright"."""

from __future__ import annotations

import pytest

from citeline.answer.relevance import evidence_words, term_present
from citeline.retrieval.query import analyze


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
        # a whole number is not a piece of another; thousands separators are optional
        ("30", "at most 30 connections", True),
        ("30", "a limit of 30s", True),
        ("30", "at most 300 connections", False),
        ("30", "until 2030", False),
        ("30", "version 3.30", False),
        ("30", "30.5 percent", False),
        ("30000", "for 30,000 users", True),
        ("30000", "for 30000 users", True),
        ("30000", "for 30 000 users", True),
        ("30000", "for 300,000 users", False),
        ("1024", "1,024 bytes", True),
        ("000", "default: 10240000", False),
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
    assert term_present(term, evidence_words(lowered), lowered, whole_numbers=True) is present


def test_numbers_count_as_any_digits_for_coverage() -> None:
    text = "released on december 1, 2017"
    assert term_present("2", evidence_words(text), text)  # as the coverage scores were calibrated
    assert not term_present("2", evidence_words(text), text, whole_numbers=True)


@pytest.mark.parametrize(
    ("question", "names"),
    [
        ("What is recommended for a university with 30,000 users?", ("30000",)),
        ("Is 1,000,000 recipients per day too many for 2 servers?", ("2", "1000000")),
        ("Which limit applies to 30 users?", ("30",)),
    ],
)
def test_a_number_with_thousands_separators_is_one_name(question: str, names: tuple[str, ...]) -> None:
    assert analyze(question).names == names
