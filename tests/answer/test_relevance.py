"""Whether a question's term occurs in evidence text (answer/relevance.py): the test behind
"codes that appear in no candidate refuse outright", and behind the softer penalty for names and
for words no English word list knows that no candidate uses."""

from __future__ import annotations

import pytest

from citeline.answer.relevance import MISSING_PENALTY, assess, evidence_words, spelled_in, term_present
from citeline.query.analysis import analyze

from ._passages import make_passages


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
        ("gpval_errno", "reset gpval errno with reset errors", True),  # a PDF lost the underscore
        ("configured", "the configuration file", True),
        ("relay", "mail is delivered locally", False),
        # a hyphenated compound as prose writes it: apart, joined, or a measure by number and unit
        ("ascii-art", "an ascii art representation of the host key", True),
        ("read-only", "mount the repository readonly", True),
        ("2048-bit", "# ssh-keygen -m generate -o bits=2048 moduli-2048.candidates", True),
        ("2048-bit", "a 2048 bit modulus", True),
        ("2048-bit", "-o bits=20480", False),
        ("2048-bit", "at least 2048 entries", False),
        ("ascii-art", "plain ascii text; art work", False),
        ("ldg-4012", "error ldg 4012", False),  # a code stays exact
        # a unit of measure written against its number
        ("tib", "a total size of 1TiB.", True),
        ("tib", "mem_usage = 0.31GiB", False),
        ("tib", "tlb", False),
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
        # an abbreviation names nothing, so no passage can miss it
        ("Which parameter sets the address extension, i.e. the delimiter?", ()),
        ("Can a filter, e.g. a Milter, change headers?", ("milter",)),
    ],
)
def test_a_number_with_thousands_separators_is_one_name(question: str, names: tuple[str, ...]) -> None:
    assert analyze(question).names == names


@pytest.mark.parametrize(
    ("question", "unknown"),
    [
        ("How do I get a certificate for my server with certbot?", ("certbot",)),
        ("What is the default of qmail's concurrencyremote control file?", ("concurrencyremote",)),
        ("Before installing a customised bounce template, how can I preview it?", ()),  # British
        ("Which newsletter senders use a long queue lifetime?", ()),  # English, however rare here
        ("I want to load-test an LMTP server", ()),  # hyphenated words are English words
        ("What is the default of smtpd_recipient_limit?", ()),  # a code, not an unknown word
        ("Who won the Tour de France after Pogačar?", ()),  # a name already
    ],
)
def test_words_no_english_word_list_knows(question: str, unknown: tuple[str, ...]) -> None:
    assert analyze(question).unknown == unknown


def test_an_unknown_word_no_candidate_uses_lowers_the_relevance_like_a_missing_name() -> None:
    text = "To get a TLS certificate, run the ACME client of your choice and point smtpd_tls_cert_file at it."
    hits = [p.hit for p in make_passages([text])]
    # the dense side is not there (keyword only): the score is the coverage, then the penalty
    with_tool = assess(analyze("How do I get a certificate with certbot?"), hits, keyword_only=True)
    plain = assess(analyze("How do I get a certificate with a client?"), hits, keyword_only=True)
    assert with_tool.missing_terms == ("certbot",) and not plain.missing_terms
    assert with_tool.score == pytest.approx(with_tool.coverage * (1 - MISSING_PENALTY))
    assert with_tool.score < 0.2 * plain.score
    # used by the documents, an unknown word is an ordinary term: no penalty
    used = assess(
        analyze("How do I get a certificate with acmeclient?"),
        [p.hit for p in make_passages([text.replace("the ACME client", "acmeclient")])],
        keyword_only=True,
    )
    assert not used.missing_terms and used.score > 0.5


def test_an_unknown_word_does_not_dilute_the_penalty_of_a_missing_name() -> None:
    hits = [p.hit for p in make_passages(["ldgctl drain waits for in-flight batches before it stops."])]
    question = "Does ldgctl drain wait for Kafka batches?"
    relevance = assess(analyze(question), hits, keyword_only=True)
    assert analyze(question).unknown == ("ldgctl",)
    assert relevance.missing_terms == ("kafka",)
    assert relevance.score == pytest.approx(relevance.coverage * (1 - MISSING_PENALTY))


@pytest.mark.parametrize(
    ("word", "text", "spelled"),
    [
        ("certbot", "run certbot renew", True),
        ("microenviroment", "the tumour microenvironment", True),  # a typo
        ("chenodeosycholic", "chenodeoxycholic acid", True),
        ("panicprone", "a panic-prone state", True),  # a compound written apart
        ("certbot", "use your acme client", False),
        ("certbot", "a concert bottle", False),  # pieces of two words are not a compound
        ("concurrencyremote", "the concurrency limit of remote deliveries", False),
        ("mailertable", "the mailer table", True),
        ("copeptin", "the peptin assay", False),
    ],
)
def test_an_unknown_word_is_spelled_in_the_text(word: str, text: str, spelled: bool) -> None:
    assert spelled_in(word, evidence_words(text), text) is spelled


@pytest.mark.parametrize(
    ("question", "names"),
    [
        ("How do I see notifications in the same mail-client thread?", ()),  # English compounds
        ("Which time-to-live does the built-in cache use?", ()),
        ("How do I run opendkim-genkey?", ("opendkim-genkey",)),  # a tool: not English
        ("Which opendkim-genkey time-to-live applies?", ("opendkim-genkey",)),
        ("I moved in last year.Where do I register the move?", ()),  # a full stop without its space
    ],
)
def test_a_hyphenated_word_of_english_words_or_a_missing_space_is_not_a_name(
    question: str, names: tuple[str, ...]
) -> None:
    assert analyze(question).names == names
