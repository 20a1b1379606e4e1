"""The asked slot: attribute, answer kind and subject of a question (query/slot.py)."""

from __future__ import annotations

import pytest

from citeline.query.analysis import analyze, version_qualifiers
from citeline.query.slot import asked_slot


@pytest.mark.parametrize(
    ("question", "attribute", "kind", "subject"),
    [
        ("What is the default of smtpd_recipient_limit?", "default", "value", ["smtpd_recipient_limit"]),
        ("What does max_connections default to?", "default", "value", ["max_connections"]),
        (
            "Which memcache server does a memcache: table connect to if I don't set one?",
            "default",
            "value",
            [],
        ),
        ("How many deliveries can run in parallel by default?", "default", "value", []),
        ("What is the maximum time-to-live that scache(8) allows?", "maximum", "number", ["scache(8)"]),
        ("What is the longest TLS session cache timeout Postfix accepts?", "maximum", "number", []),
        ("What is the lowest user ID virtual(8) accepts?", "minimum", "number", ["virtual(8)"]),
        ("How long may a socketmap reply be?", "quantity", "number", []),
        ("Which TCP port does it use?", "quantity", "number", []),
        (
            "Which time unit does postscreen_greylist_delay use?",
            "quantity",
            "unit",
            ["postscreen_greylist_delay"],
        ),
        ("Since which release can I use sqlite: lookup tables?", "version", "version", []),
        (
            "In which Postfix version did the dnsblog(8) service first appear?",
            "version",
            "version",
            ["dnsblog(8)"],
        ),
        ("When was the --dry-run flag added?", "version", "version", ["--dry-run"]),
        ("Which Postfix tool tells me what TLS a server supports?", "which", "identifier", []),
        ("Which pipe(8) flag adds a Return-Path: header?", "which", "identifier", ["pipe(8)"]),
        ("What setting turns on STARTTLS?", "which", "identifier", []),
        ("Which protocol can the external CA use to send signing requests?", "which", "identifier", []),
        ("With which logging drivers does docker logs work?", "which", "identifier", []),
        ("What does setting soft_bounce = yes do?", "meaning", "definition", ["soft_bounce"]),
        ("What kind of files end up in the corrupt queue?", "meaning", "definition", []),
        ("What does SQLSTATE error code 40P01 mean?", "meaning", "definition", ["40P01"]),
        ("What happens to mail when the server is down?", "meaning", "definition", []),
        ("Why does the howto prefer pcre: tables?", "reason", "any", []),
        ("How do I print only the main.cf settings I set?", "procedure", "procedure", ["main.cf"]),
        ("Can two instances share one queue?", "yesno", "any", []),
        ("Tell me about queues.", "other", "any", []),
        # a value advised for a case, not the default
        (
            "What smtpd_client_connection_rate_limit is recommended for 30,000 users?",
            "recommended",
            "value",
            ["smtpd_client_connection_rate_limit"],
        ),
        (
            "How many tlsproxy(8) processes should I allow for 2,000 sessions?",
            "recommended",
            "value",
            ["tlsproxy(8)"],
        ),
        ("Why is the optimize option not recommended?", "reason", "any", []),
        ("How many points does it give by default for a Recommends relationship?", "default", "value", []),
        # who, when, where: a name, a date or a place (a "when" that asks for a condition is not)
        ("Who acquired Instagram?", "who", "name", []),
        ("Which country won the most medals at the 2018 Winter Olympics?", "who", "name", []),
        ("When was Splatoon 2 released?", "when", "date", []),
        ("When does the city library open?", "when", "date", []),
        ("When does the Postfix 3.7 stable series reach end of life?", "when", "date", []),
        ("When do several ldap: tables share one connection?", "other", "any", []),
        ("When is the -x option needed?", "other", "any", ["-x"]),
        ("Super Bowl 2021 location", "where", "place", []),
        ("Who won the women's singles U.S. Open in 2021?", "who", "name", []),  # "U.S" is no name
        # a version named in passing is not the subject
        ("How do I read a file in Node 18 with fs.readFile?", "procedure", "procedure", ["fs.readFile"]),
        ("What is `sync.batch_size` for?", "meaning", "definition", ["sync.batch_size"]),
        ("What does error LDG-4012 mean?", "meaning", "definition", ["LDG-4012"]),
        # how to find out an amount is a procedure
        ("How do I find out how many times a container has been restarted?", "procedure", "procedure", []),
        # how to see which ones asks how (an option), not which one; a limit asked how is a limit
        ("How can I see which files the tool would bundle?", "procedure", "procedure", []),
        ("How do I set the maximum size of a message?", "maximum", "number", []),
        # "non-default" asks for no default
        ("How do I build it giving all non-default parameters?", "procedure", "procedure", []),
        # an amount written as an adjective describes the subject, it names nothing
        ("How do I generate 2048-bit candidate primes?", "procedure", "procedure", []),
        # ... and so does a unit of size
        (
            "How much memory do the indexes need for a million files totalling 1 TiB?",
            "quantity",
            "number",
            [],
        ),
        ("How much memory does a 2 GiB hash table take in ssh_config?", "quantity", "number", ["ssh_config"]),
    ],
)
def test_asked_slot(question: str, attribute: str, kind: str, subject: list[str]) -> None:
    slot = asked_slot(question)
    assert (slot.attribute, slot.kind, list(slot.subject)) == (attribute, kind, subject)


def test_the_slot_is_read_from_the_asking_part_and_described_for_a_refusal() -> None:
    query = analyze("I run a mail relay. What is the default of smtpd_recipient_limit?")
    assert query.slot.attribute == "default"
    assert query.slot.describe() == "the default of smtpd_recipient_limit"
    assert query.slot.wants_value
    assert query.slot.to_json() == {
        "attribute": "default",
        "kind": "value",
        "subject": ["smtpd_recipient_limit"],
    }
    assert not analyze("Why is the sky blue?").slot.wants_value


@pytest.mark.parametrize(
    ("question", "qualifiers", "codes"),
    [
        ("How do I read a file line by line in Node 18?", ["Node 18"], []),
        ("Since 3.7, what does the -n option do?", ["3.7"], []),
        ("What is the default mynetworks_style on Postfix 3.x?", ["Postfix 3"], ["mynetworks_style"]),
        ("How do I configure LDG-4012 retries in version 3.5.0?", ["3.5.0"], ["ldg-4012"]),
        # about the release itself: the version must be in the documents
        ("Is Postfix 3.7 supported with OpenSSL 4.0?", [], ["postfix 3.7", "openssl 4.0"]),
        ("Which configuration parameters were removed in Postfix 3.10?", [], ["postfix 3.10"]),
        ("What new default does Postfix 4.0 use for smtpd_tls_security_level?", [], None),
        # a year is not a release; an amount written as an adjective is no code ("bits=2048")
        ("What was the revenue in 2021?", [], []),
        ("How do I generate 2048-bit candidate primes for a moduli file?", [], []),
    ],
)
def test_a_version_named_in_passing_is_a_qualifier_not_a_code(
    question: str, qualifiers: list[str], codes: list[str] | None
) -> None:
    query = analyze(question)
    assert list(query.qualifiers) == qualifiers == version_qualifiers(question)
    if codes is not None:
        assert list(query.codes) == codes


@pytest.mark.parametrize(
    ("question", "predicate"),
    [
        ("Who won the women's singles Wimbledon in 2019?", ("win", "won")),
        ("When was Splatoon 2 released?", ("relea",)),
        ("Who acquired Instagram?", ("acqui",)),
        ("When does the city library open?", ("open",)),
        ("Who is the director of the Avatar movie?", ()),  # no verb: any name about Avatar
        ("Who is the lead actress in La La Land?", ()),  # "lead" is no verb after "is the"
        ("Who was the first person awarded the prize?", ("award",)),
        ("Who makes the Pixel phones?", ("mak",)),
        # a plural in the subject's name is no verb
        ("When was xenoblade chronicles 2 released?", ("relea",)),
    ],
)
def test_who_and_when_questions_name_what_was_done(question: str, predicate: tuple[str, ...]) -> None:
    assert asked_slot(question).predicate == predicate


@pytest.mark.parametrize(
    ("question", "attribute", "years"),
    [
        ("Who won the women's singles Wimbledon in 2019?", "who", ("2019",)),
        ("Super Bowl 2021 location", "where", ("2021",)),
        ("When is the premiere of 'Carole King & James Taylor: Just Call Me' in 2022?", "when", ("2022",)),
        ("What is the release date of Elden Ring?", "when", ()),
        ("What is the date of the 2020 NBA Draft?", "when", ("2020",)),
        ("When will Hogwarts Legacy come out?", "when", ()),
        # a year inside a name, a version or a date is no year asked about
        ("Who developed Cyberpunk 2077?", "who", ()),
        ("Who maintains v2.2019 of the schema?", "who", ()),
        # only who/when/where questions bind their answer to a year
        ("What was the revenue in 2021?", "other", ()),
    ],
)
def test_an_event_question_names_the_years_its_answer_belongs_to(
    question: str, attribute: str, years: tuple[str, ...]
) -> None:
    slot = asked_slot(question)
    assert (slot.attribute, slot.years) == (attribute, years)
    assert slot.to_json().get("years", []) == list(years)


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("How long does borg check --verify-data take per terabyte?", "duration"),
        ("How long should fit take to converge on a million points?", "duration"),
        ("How long will the migration take?", "duration"),
        # how long something waits or is: a number with its unit, the default or a length
        ("How long does borg wait to acquire a lock?", "number"),
        ("How long does docker stop wait before killing the container?", "number"),
        ("How long is a certificate valid if I sign it without -V?", "value"),
        ("How long can one line of an authorized_keys file be?", "number"),
        ("How many keys can ssh-agent hold?", "number"),
    ],
)
def test_how_long_something_takes_asks_for_a_time_span(question: str, kind: str) -> None:
    assert asked_slot(question).kind == kind


@pytest.mark.parametrize(
    ("question", "per"),
    [
        ("How long does borg check --verify-data take per terabyte of repository data?", ("terabyte",)),
        ("How many authentication attempts per connection does sshd allow by default?", ("connection",)),
        ("How large does the cache file get for 200,000 different clients a day?", ("day",)),
        ("How many messages per second can Postfix deliver?", ("second",)),
        ("How many recipients can each message have at most?", ("message",)),
        # a story's "every day" is when the asker acts, not what the amount is counted per
        ("I back up 26 data sets every day; what should the TTL be at least?", ()),
        ("How many processes should I allow?", ()),
        ("Which command limits the messages per second?", ()),  # no amount asked
    ],
)
def test_an_amount_asked_per_something_names_it(question: str, per: tuple[str, ...]) -> None:
    slot = asked_slot(question)
    assert slot.per == per
    assert slot.to_json().get("per", []) == list(per)
