"""Does a unit bear the answer (answer/bearing.py), and what it is about (units.binding_contexts)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from citeline.answer.bearing import (
    bears,
    bound_to_subject,
    deeper_context,
    missing_value,
    states_literal,
    states_value,
    typed,
)
from citeline.answer.units import binding_contexts, entry_terms, passage_units
from citeline.query.slot import asked_slot

from ._passages import make_passages


@pytest.mark.parametrize(
    ("question", "text", "expected"),
    [
        # the value sentence of an entry, not its description
        ("What is the default of max_connections?", "The default is typically 100 connections.", True),
        (
            "What is the default of max_connections?",
            "Determines the maximum number of concurrent connections to the database server.",
            False,
        ),
        ("What is the default of smtpd_recipient_limit?", "smtpd_recipient_limit (default: 1000)", True),
        ("What does backlog default to?", "If backlog is omitted, a value of 511 is used.", True),
        # limits need a number and a limit word
        ("What is the maximum length of a name?", "Names can be up to 63 characters long.", True),
        ("What is the maximum length of a name?", "Names are case sensitive.", False),
        ("What is the maximum length of a name?", "The maximum length is configurable.", False),
        ("What is the minimum value of work_mem?", "The minimum value is 64 kilobytes.", True),
        # versions: a release number and a word that dates it
        ("Since which version is the -x option available?", "Added in version 3.2.", True),
        ("Since which version is the -x option available?", "The -x option excludes files.", False),
        # amounts, units, identifiers
        ("How long does the cache keep an entry?", "Entries expire after 3 days.", True),
        ("How long does the cache keep an entry?", "Entries expire when they are old.", False),
        ("Which time unit is assumed without a suffix?", "The default time unit is d (days).", True),
        ("Which option makes it speak LMTP?", "Use -L to speak LMTP instead of SMTP.", True),
        ("Which option makes it speak LMTP?", "It can speak another protocol.", False),
        # who and when: a name or a date, in a unit that says what was done
        ("Who won the 2019 Wimbledon ladies' title?", "Simona Halep won the ladies' singles title.", True),
        ("Who won the 2019 Wimbledon ladies' title?", "Serena Williams will play Johanna Konta.", False),
        ("When was Splatoon 2 released?", "It was released on July 21, 2017.", True),
        (
            "When was Splatoon 2 released?",
            "A new Splatoon 2 bundle is on the way, Nintendo announced.",
            False,
        ),
        ("When does the city library open?", "The city library opens at 9 am.", True),
        # the year the question names is no date; a month or a day is no one's name
        (
            "What is the date of the 2020 NBA Draft?",
            "NBA Draft 2020, free agency dates come into focus.",
            False,
        ),
        ("What is the date of the 2020 NBA Draft?", "The 2020 NBA Draft is on November 18, 2020.", True),
        (
            "Who was the CEO of Nintendo in 2021?",
            "Nintendo announced it in their fiscal year-end March 2021 report.",
            False,
        ),
        ("Who was the CEO of Nintendo in 2021?", "In 2021 the CEO of Nintendo was Shuntaro Furukawa.", True),
        # a "which" question for a sort of name with a shape wants that shape
        ("Which signal makes dockerd re-read daemon.json?", "We use the `SIGHUP` signal to reload.", True),
        ("Which signal makes dockerd re-read daemon.json?", "The file is /etc/docker/daemon.json.", False),
        (
            "Which environment variable names the Notary server?",
            "DOCKER_CONTENT_TRUST_SERVER: its URL.",
            True,
        ),
        ("Which environment variable names the Notary server?", "Set `--notary` to the URL.", False),
        ("What is the smallest value lcow.sandboxsize accepts?", "Cannot be less than 20.", True),
        # advice: a value the documents recommend, not any value
        ("What cache size is recommended for a 10 TB repository?", "A good starting point is 2G.", True),
        (
            "What cache size is recommended for a 10 TB repository?",
            "It sets the number of cached chunks.",
            False,
        ),
        ("What cache size is recommended for a 10 TB repository?", "The default is 1 GB.", False),
        # how to do it: a command, an option, a setting as it is typed
        ("How do I make the whiskers span 95% of the points?", "set style boxplot fraction 0.95", True),
        (
            "How do I make the whiskers span 95% of the points?",
            "By default the whiskers extend 1.5 times.",
            False,
        ),
        ("How do I keep one parameter fixed?", "varname = value # FIXED", True),
        # an abbreviation is no dotted name
        (
            "How do I make the whiskers span 95% of the points?",
            "By default the whiskers extend 1.5 times the range (i.e. the height of the box proper).",
            False,
        ),
        ("Which setting sets the batch size?", "E.g. a larger batch is faster.", False),
        ("Which setting sets the batch size?", "Set sync.batch_size to 64.", True),
        ("How do I print one flat list?", "You can disable this via --group-by=none", True),
        # a command after the verb that runs it, not a noun phrase after a verb
        ("How do I plot floats?", "To use the style, first use the command set rgbmax 1.0.", True),
        ("How do I plot floats?", "Some data files use an alternative convention.", False),
        ("How do I plot floats?", "Then run the file through the filter.", False),
        ("What must I run before plotting floats?", "First use the command set rgbmax 1.0.", True),
        ("What must I run before plotting floats?", "Some RGB components are floating point values.", False),
        # other questions are not decided by a value
        ("Does the howto prefer pcre tables?", "They are faster.", True),
    ],
)
def test_states_value(question: str, text: str, expected: bool) -> None:
    assert states_value(asked_slot(question), text) is expected


@pytest.mark.parametrize(
    ("question", "context", "expected"),
    [
        ("What is the default of max_connections?", "Settings > max_connections (integer)", True),
        ("What is the default of max_connections?", "Settings > superuser_reserved_connections", False),
        ("What does postconf(5) say?", "postconf", True),  # the page's name without its section
        ("What does -n do?", "--no-color: no colours", False),  # an option is not inside another
        ("Which option makes it speak LMTP?", "anything", True),  # no subject named: nothing to bind
    ],
)
def test_bound_to_subject(question: str, context: str, expected: bool) -> None:
    assert bound_to_subject(asked_slot(question), context) is expected


@pytest.mark.parametrize(
    ("text", "context", "expected"),
    [
        ("Ashleigh Barty won the women's singles title in 2021.", "Wimbledon", False),
        ("Simona Halep won the women's singles title in 2019.", "Wimbledon", True),
        ("Simona Halep won the women's singles title.", "Wimbledon 2019", True),  # the year in its context
        ("Simona Halep won the women's singles title in 20190.", "Wimbledon", False),
    ],
)
def test_a_name_for_another_year_does_not_answer_a_question_about_one(
    text: str, context: str, expected: bool
) -> None:
    slot = asked_slot("Who won the women's singles Wimbledon in 2019?")
    assert bears(slot, text, context) is expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("A full --verify-data check reads about 1 TB per hour; plan about one hour per terabyte.", True),
        (
            "Assuming a complete check took 7 hours, a daily check with --max-duration=3600 (1 hour) ran.",
            False,
        ),
        ("The --verify-data check of a 2 Terabyte repository took 5 hours.", True),
    ],
)
def test_an_amount_asked_per_something_is_bound_to_it(text: str, expected: bool) -> None:
    slot = asked_slot("How long does borg check --verify-data take per terabyte of repository data?")
    assert bears(slot, text, "borg check --verify-data") is expected


def test_a_value_stated_sentences_after_the_term_is_bound_to_it() -> None:
    """An entry names its setting once; its default comes later without the name."""
    text = (
        "max_connections (integer)\n\n"
        "Determines the maximum number of concurrent connections. "
        "The default is typically 100 connections.\n\n"
        "superuser_reserved_connections (integer)\n\n"
        "The default is 3 connections."
    )
    units = passage_units(text)
    contexts = binding_contexts(units, text, 0, ("Connection Settings",), "Server Configuration")
    slot = asked_slot("What is the default of max_connections?")
    bearing = [u.text for u, c in zip(units, contexts, strict=True) if bears(slot, u.text, c)]
    assert bearing == ["The default is typically 100 connections."]


def test_list_items_are_about_their_lead_in_not_their_siblings() -> None:
    text = "Options:\n- `--depth` limits recursion.\n- The default is 5."
    units = passage_units(text)
    contexts = binding_contexts(units, text, 0, (), "")
    assert "--depth" not in contexts[-1]


def test_an_entry_opening_with_its_own_label_is_not_about_the_line_above_it() -> None:
    """A man page's "-c host_certificate_file" line, then "-d: Debug mode. ... Maximum is 3.": the
    limit is the debug level's, not a certificate's."""
    text = (
        "-c host_certificate_file\n\n"
        "-d: Debug mode. Multiple -d options increase the debugging level. Maximum is 3.\n\n"
        "-e\n\n"
        "Write debug logs to standard error instead of the system log."
    )
    units = passage_units(text)
    contexts = dict(zip((u.text for u in units), binding_contexts(units, text, 0, (), ""), strict=True))
    assert "host_certificate_file" not in contexts["Maximum is 3."]
    slot = asked_slot("What is the maximum number of principals one certificate can list?")
    assert not bears(
        replace(slot, topic=("principals", "certificate")), "Maximum is 3.", contexts["Maximum is 3."]
    )
    # a description under an option line of its own is still that option's
    assert "-e" in contexts["Write debug logs to standard error instead of the system log."]
    # the option with an argument above it can be a heading of the man page rendered to text
    text = "-d: Debug mode. Multiple -d options increase the debugging level. Maximum is 3."
    units = passage_units(text)
    trail = ("Description", "-c host_certificate_file")
    contexts = dict(
        zip((u.text for u in units), binding_contexts(units, text, 0, trail, "sshd"), strict=True)
    )
    assert contexts["Maximum is 3."].startswith("sshd > Description\n")


def test_a_question_for_a_value_no_passage_states_is_refused_with_what_is_missing() -> None:
    passages = make_passages(
        ("smtpd_max_message_rate is the number of messages a client may send per time unit.",)
    )
    reason = missing_value(asked_slot("What is the default of smtpd_max_message_rate?"), passages)
    assert reason == "no passage states the default of smtpd_max_message_rate"
    stated = make_passages(("smtpd_max_message_rate (default: 0) limits messages per client.",))
    assert missing_value(asked_slot("What is the default of smtpd_max_message_rate?"), stated) is None
    # a question that does not ask for a value is never refused for want of one
    assert missing_value(asked_slot("What is smtpd_max_message_rate for?"), passages) is None


def test_a_question_without_identifiers_binds_a_value_by_its_proper_names() -> None:
    """DOCX option references list "Option: ...::Infinity", "Default: 1000000" as paragraphs: the
    default is the Infinity option's, not the one above or below it."""
    from citeline.query.analysis import analyze

    slot = analyze("What is the resolver's Infinity score set to unless I change it?").slot
    assert slot.names == ("infinity",)
    assert bears(slot, "Default: 1000000", "Option: Aptitude::ProblemResolver::Infinity")
    assert not bears(slot, "Default: 4", "Option: Aptitude::ProblemResolver::ImportantScore")


@pytest.mark.parametrize(
    ("question", "text", "expected"),
    [
        # digits inside a name are no amount: "X11", "sshd(8)", "sha256", "IPv6"
        ("What is the first display number for X11 sessions?", "This prevents interfering with X11.", False),
        ("What is the first display number for X11 sessions?", "It is for sshd(8)'s forwarding.", False),
        ("What is the first display number for X11 sessions?", "The default is 10.", True),
        ("How many bits does the hash have?", "It uses sha256 over IPv6 addresses.", False),
        ("How much data is sent before rekeying?", "The default is between 1G and 4G.", True),
        # a version is no amount
        (
            "How many keys can ssh-agent hold?",
            "Destination constraints were added in OpenSSH release 8.9.",
            False,
        ),
        ("How many keys can ssh-agent hold?", "Since version 2.1 it holds 16 keys.", True),
    ],
)
def test_digits_of_a_name_are_not_a_value(question: str, text: str, expected: bool) -> None:
    assert states_value(asked_slot(question), text) is expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Default settings: set history size 500 numbers trim.", True),
        ("Default: /var/lock/aptitude", True),
        ("The default is no.", True),
        ('The default is "yes".', True),
        ("By default the history command prints a line number in front of each command.", False),
        ("By default, it suppresses numbers for all future commands.", False),
    ],
)
def test_a_literal_value(text: str, expected: bool) -> None:
    assert states_literal(text) is expected


@pytest.mark.parametrize(
    ("question", "attribute"),
    [
        ("If I give set label a position without naming a coordinate system, which is used?", "default"),
        ("Which UDP port is used when --data-path-port is left unset?", "default"),
        ("How long is the timeout if discovery.ttl is not configured?", "default"),
        ("What does set label do?", "meaning"),
    ],
)
def test_asking_what_happens_when_nothing_is_set_asks_for_the_default(question: str, attribute: str) -> None:
    assert asked_slot(question).attribute == attribute


def test_a_line_of_its_own_is_about_the_entry_it_opens() -> None:
    """A DOCX reference: "Default: X" is a paragraph of its own; the description after it names
    what the file is for (the option's line is in the chunk before)."""
    text = (
        "Default: /var/lock/aptitude\n\n"
        "Description: A file that will be fcntl-locked so that one process modifies the cache.\n\n"
        "Option: Aptitude::Localize-Log\n\n"
        "Default: false"
    )
    units = passage_units(text)
    contexts = binding_contexts(units, text, 0, ("Configuration file",), "Reference")
    slot = asked_slot("Which file does aptitude fcntl-lock so that one process modifies the cache?")
    bearing = [u.text for u, c in zip(units, contexts, strict=True) if bears(slot, u.text, c)]
    assert bearing == ["Default: /var/lock/aptitude"]


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("fcntl-lock", "a file that will be fcntl-locked", True),
        ("redirect", "connections are redirected", True),
        ("-n", "--no-color", False),
        ("tag", "tags and stages", False),  # short names are not inflected
    ],
)
def test_a_name_is_mentioned_by_its_inflections(name: str, text: str, expected: bool) -> None:
    from citeline.answer.bearing import _mentions

    assert _mentions(name, text) is expected


@pytest.mark.parametrize(
    ("question", "context", "expected"),
    [
        # no subject named: a value's context must be about the question's other words
        (
            "What is the maximum number of principals one certificate can list?",
            "-d Debug mode. Causes ssh-keygen to print debugging messages. Multiple -d options increase verbosity.",
            False,
        ),
        (
            "What is the maximum number of principals one certificate can list?",
            "-n principals: Specify one or more principals to be included in a certificate.",
            True,
        ),
        (
            "How many lines of command history does gnuplot keep in its history file by default?",
            "history > When leaving gnuplot the value of history size limits the lines saved to the history file.",
            True,
        ),
    ],
)
def test_a_value_without_a_named_subject_is_bound_to_the_questions_topic(
    question: str, context: str, expected: bool
) -> None:
    from citeline.query.analysis import analyze

    assert bound_to_subject(analyze(question).slot, context) is expected


@pytest.mark.parametrize(
    ("question", "text", "expected"),
    [
        # a file named with its version states no amount; "one" as a pronoun is none either
        (
            "How many views can I have open at the same time?",
            "Run tar zxf aptitude-0.8.13.tar.gz first.",
            False,
        ),
        ("How many keys can ssh-agent hold?", "ssh-add queries the keys that are held in one.", False),
        ("How many keys can ssh-agent hold?", "Each one is tried in turn.", False),
        ("How many keys can ssh-agent hold?", "It holds at most one key per socket.", True),
        # a range states both ends ("one through twelve variables")
        (
            "How many arguments can a function have at most?",
            "Functions of one through twelve variables.",
            True,
        ),
        ("What is the lowest port it accepts?", "Any port from 1024 to 65535 is accepted.", True),
        ("What is the lowest port it accepts?", "Released on 2023-01-05.", False),
        # a path is a place
        ("Where does ssh-copy-id install my key?", "It appends them to ~/.ssh/authorized_keys.", True),
        ("Where does ssh-copy-id install my key?", "It appends them to the remote user's list.", False),
        # a name is no function word opening a clause after a label
        (
            "Where does aptitude load the vocabulary from?",
            "Description: The location of the vocabulary.",
            False,
        ),
        ("Where does the city library stand?", "Description: It stands in Leeds.", True),
    ],
)
def test_amounts_ranges_and_places(question: str, text: str, expected: bool) -> None:
    assert states_value(asked_slot(question), text) is expected


def test_a_path_is_named_by_its_file_name() -> None:
    from citeline.query.analysis import analyze

    slot = analyze("How many fields does each record of /etc/ssh/moduli have?").slot
    assert bears(slot, "Records have seven space-separated fields.", "moduli - DH moduli")
    assert not bears(slot, "Records have seven space-separated fields.", "known_hosts - host keys")


def test_a_question_for_an_amount_no_passage_states_is_refused() -> None:
    passages = make_passages(("Multiple identities may be stored in ssh-agent concurrently.",))
    reason = missing_value(asked_slot("How many keys can ssh-agent hold at the same time?"), passages)
    assert reason is not None and reason.startswith("no passage states")
    stated = make_passages(("ssh-agent holds up to 100 keys at the same time.",))
    assert missing_value(asked_slot("How many keys can ssh-agent hold at the same time?"), stated) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("A complete check took 7 hours.", True),
        ("The default timeout is 300s.", True),
        ("It can take several minutes on large clusters.", True),
        ("Keys are kept forever unless a lifetime is set.", True),
        # a number is not a time span, nor are digits in a name
        ("Force remove one or more nodes from the swarm.", False),
        ("Requires OpenSSH 9.0 with sha256 and X11.", False),
    ],
)
def test_a_time_span_answers_how_long_something_takes(text: str, expected: bool) -> None:
    assert states_value(asked_slot("How long does borg check take per terabyte?"), text) is expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # a cause, a purpose, a risk or a flaw
        ("Note that this option is written with a capital 'P', because -p is already reserved.", True),
        ("We do this to avoid silently ignoring changes introduced in configuration reloads.", True),
        ("Excluding them reduces the risk of leaking credentials in a proxy variable.", True),
        ("Caveat: the implementation of optimization in libgd is known to be buggy.", True),
        ("The lock is held so that two writers never interleave.", True),
        ("PCRE is preferred primarily because the implementation is often faster.", True),
        ("Since the file is world-readable, it must not hold secrets.", True),
        # a consequence restates the question; "since" before a version dates; a verb is no purpose
        ("Therefore use of this option is not recommended.", False),
        ("The option is available since version 2.8.", False),
        ("The HTTP_PROXY value is preserved in the docker history.", False),
    ],
)
def test_a_reason_is_a_cause_a_purpose_or_a_flaw(text: str, expected: bool) -> None:
    assert states_value(asked_slot("Why is the optimize option not recommended?"), text) is expected


def test_a_value_in_the_entry_of_another_name_is_not_the_subjects() -> None:
    """ssh_config(5): CanonicalizeFallbackLocal's entry names CanonicalDomains in passing, and its
    "The default, yes, ..." is CanonicalizeFallbackLocal's default, not CanonicalDomains'."""
    text = (
        "Specifies whether to fail with an error when hostname canonicalization fails. "
        "A value of no will cause ssh(1) to fail if the host is not in any of the domains "
        "specified by CanonicalDomains. The default, yes, will attempt to look up the hostname."
    )
    units = passage_units(text)
    trail = ("Description", "CanonicalizeFallbackLocal")
    contexts = binding_contexts(units, text, 0, trail, "ssh_config")
    entries = entry_terms(units, text, 0, trail)
    slot = asked_slot("What is the default list of CanonicalDomains?")
    default = units[-1].text
    assert bears(slot, default, contexts[-1])  # the context alone names the subject
    assert not bears(slot, default, contexts[-1], entries[-1])
    # the same entry's own setting, and a unit that names the subject itself, still bear
    assert bears(
        asked_slot("What is the default of CanonicalizeFallbackLocal?"), default, contexts[-1], entries[-1]
    )
    assert bears(slot, "CanonicalDomains defaults to none.", contexts[-1], entries[-1])
    # an entry whose term is no name (a section heading) decides nothing
    assert bears(slot, default, contexts[-1], "Description")


def test_entry_terms_follow_labels_and_term_lines() -> None:
    text = (
        "-c host_certificate_file\n\n"
        "-d: Debug mode. Maximum is 3.\n\n"
        "-e\n\n"
        "Write debug logs to standard error."
    )
    units = passage_units(text)
    entries = dict(
        zip((u.text for u in units), entry_terms(units, text, 0, ("Description", "-b bits")), strict=True)
    )
    assert entries["Maximum is 3."] == "-d"
    assert entries["Write debug logs to standard error."] == "-e"
    assert entries["-c host_certificate_file"] == "-b bits"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("If no value is given, 10 is used.", True),
        ("If the option is not set, the limit is 10.", True),
        # "set to no" is a value, not an absence
        ("If this option is set to no, no keys are added to the agent.", False),
    ],
)
def test_a_default_is_what_applies_when_nothing_is_set(text: str, expected: bool) -> None:
    assert states_value(asked_slot("What is the default of AddKeysToAgent?"), text) is expected


def test_a_question_naming_two_settings_may_ask_for_a_third_ones_default() -> None:
    slot = asked_slot("What is the lowest user ID that virtual(8) accepts from virtual_uid_maps by default?")
    assert bears(
        slot, "virtual_minimum_uid (default: 100)", "virtual_uid_maps", "virtual_minimum_uid (default: 100)"
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("$ docker inspect -f '{{ .RestartCount }}' web", True),
        ("varname = value # FIXED", True),
        ("set style boxplot fraction 0.95", True),
        # a setting to write as it is given, not one a condition or a note names
        ('In order to change this behavior, set "smtpd_tls_auth_only = yes".', True),
        ("To connect over TCP you have to specify hosts = 127.0.0.1", True),
        ('If you specify "resolve_dequoted_address = no", then the resolver will not know.', False),
        ('Note 1: "smtpd_enforce_tls = yes" implies "smtpd_tls_auth_only = yes".', False),
        ("You can set the limit to 10 if you need more.", False),
    ],
)
def test_a_line_as_it_is_typed(text: str, expected: bool) -> None:
    assert typed(text) is expected


@pytest.mark.parametrize(
    ("question", "context", "beyond", "deepened"),
    [
        # a value no context chunk states: the first candidates beyond the context that state one
        (
            "What is the default of max_jobs?",
            "max_jobs sets how many jobs run at once.",
            "max_jobs: the default is 4.",
            True,
        ),
        # a date or a place is looked for as deep before the question is refused for want of it
        (
            "When was the Zephyr 3 released?",
            "The Zephyr 3 router supports Wi-Fi 6E.",
            "The Zephyr 3 was released on 4 May 2021.",
            True,
        ),
        (
            "Where does the Zephyr 3 keep its logs?",
            "Each reset is logged.",
            "The Zephyr 3 writes them to /var/log/zephyr.",
            True,
        ),
        # a context that states one is not widened; nor is one for a question that asks for no value
        (
            "When was the Zephyr 3 released?",
            "The Zephyr 3 was released in 2021.",
            "The Zephyr 3 was released on 4 May 2021.",
            False,
        ),
        ("What does the Zephyr 3 do?", "The Zephyr 3 routes.", "The Zephyr 3 was released in 2021.", False),
    ],
)
def test_a_context_without_the_asked_value_is_widened_by_candidates_that_state_it(
    question: str, context: str, beyond: str, deepened: bool
) -> None:
    near, far = (p.hit for p in make_passages((context, beyond)))
    widened = deeper_context(asked_slot(question), [near], [near, far])
    assert [h.chunk.id for h in widened] == (["c1", "c2"] if deepened else ["c1"])
