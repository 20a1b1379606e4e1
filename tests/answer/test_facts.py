"""Facts a sentence states must be in the passage it cites, after normalisation (table-driven)."""

from __future__ import annotations

import pytest

from citeline.answer.facts import missing_facts, neutral_numbers

PASSAGE_SIZE = "The maximum size is 4 MB per message."
PASSAGE_TIME = "The timeout defaults to 5 minutes."


@pytest.mark.parametrize(
    ("sentence", "passage", "missing"),
    [
        ("The limit is 4MB.", PASSAGE_SIZE, []),
        ("The limit is four megabytes.", PASSAGE_SIZE, []),
        ("The limit is 4096 KiB.", PASSAGE_SIZE, []),
        ("The limit is 8 MB.", PASSAGE_SIZE, ["8 MB"]),
        ("The timeout is 5min.", PASSAGE_TIME, []),
        ("The timeout is 300 seconds.", PASSAGE_TIME, []),
        ("The timeout is five minutes.", PASSAGE_TIME, []),
        ("The timeout is 5 seconds.", PASSAGE_TIME, ["5 seconds"]),
        ("The timeout is 5.", PASSAGE_TIME, []),
        ("The queue holds 400 jobs.", "The alpha queue holds at most 900 jobs.", ["400"]),
        ("The default is 1,000 recipients.", "The default is 1000.", []),
        ("It was designed by John Smith.", "The alpha queue holds at most 900 jobs.", ["john", "smith"]),
        ("Error LDG-4012 means the batch is too big.", "Error LDG-4012: Batch exceeds maximum payload.", []),
        ("Set smtpd_recipient_limit to 1000.", "smtpd_recipient_limit (default: 1000): most recipients.", []),
        (
            "Set smtpd_client_limit to 1000.",
            "smtpd_recipient_limit (default: 1000): most recipients.",
            ["smtpd_client_limit"],
        ),
        ("The release shipped on March 3.", "Released 3 March 2024.", []),
        ("The release shipped on March 4.", "Released 3 March 2024.", ["4", "3-4"]),
        ("In 2021 revenue grew.", "In 2023 revenue grew.", ["2021"]),
        ("Retries happen twice.", "The client retries 2 times.", []),
        ("About 25% of messages bounce.", "A quarter (25 percent) of messages bounce.", []),
        ("The server accepts an unlimited number of recipients.", "The default limit is 1000.", ["no limit"]),
        ("There is no limit on recipients.", "By default there is no upper limit on recipients.", []),
        ("Retries are unbounded.", "Retries continue without any limit.", []),
        # a release is stated exactly; its series is said by any release of it
        (
            "Available since Postfix 3.5.23.",
            "Available in Postfix 3.9, 3.6.14, 3.5.24 and later.",
            ["3.5.23"],
        ),
        ("Available since Postfix 3.5.24.", "Available in Postfix 3.9, 3.6.14, 3.5.24 and later.", []),
        ("Available since Postfix 3.5.", "Available in Postfix 3.9, 3.6.14, 3.5.24 and later.", []),
        ("Available since Postfix 3.9.", "Available in Postfix 3.9, 3.6.14, 3.5.24 and later.", []),
        ("Listen on 10.0.0.2.", "The server listens on 10.0.0.1 by default.", ["10.0.0.2"]),
        ("It takes 2.5 s.", "It takes 2.5 seconds.", []),
    ],
)
def test_missing_facts(sentence: str, passage: str, missing: list[str]) -> None:
    assert missing_facts(sentence, passage) == missing


@pytest.mark.parametrize(
    ("claim", "premise", "expected"),
    [
        ("The default is 500.", "Default: 500", ("The default is 17.", "Default: 17")),
        ("The default is 5000.", "Default: 500", ("The default is 17.", "Default: 23")),
        ("It holds 1,000 jobs.", "It holds 1000 jobs.", ("It holds 17 jobs.", "It holds 17 jobs.")),
        # years, decimals, codes and identifiers keep their digits
        ("Released in 2024.", "Released in 2024.", ("Released in 2024.", "Released in 2024.")),
        ("Error LDG-4012 at 4.5 MB.", "LDG-4012: 4.5 MB", ("Error LDG-4012 at 4.5 MB.", "LDG-4012: 4.5 MB")),
        ("Use utf8 and ipv6.", "utf8, ipv6", ("Use utf8 and ipv6.", "utf8, ipv6")),
        ("Wait 45s.", "45 s", ("Wait 17s.", "17 s")),
        # a number spelled out on one side and in digits on the other is one number
        (
            "It takes at most 2 reads.",
            "at most two reads",
            ("It takes at most 17 reads.", "at most 17 reads"),
        ),
        ("It takes two reads.", "It takes 3 reads.", ("It takes two reads.", "It takes 17 reads.")),
        ("Two of them.", "Two of them.", ("Two of them.", "Two of them.")),
    ],
)
def test_neutral_numbers(claim: str, premise: str, expected: tuple[str, str]) -> None:
    assert neutral_numbers(claim, premise) == expected
