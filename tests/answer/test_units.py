"""Quotable units and what each is quoted after (answer/units.py)."""

from __future__ import annotations

import pytest

from citeline.answer.units import is_fragment, leads, never_an_answer, passage_units, readable


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
        # an option's name on a line of its own leads its description's sentences
        (
            "--no-new-installs\n\nPrevent it from installing new packages. It is the old way.\n\nNote that this",
            ("Options",),
            [
                [],
                ["--no-new-installs"],
                ["--no-new-installs", "Prevent it from installing new packages."],
                [],
            ],
        ),
        # a unit that continues the line above it is quoted after that line, across a blank line
        (
            "set terminal svg size <x>,<y> {fixed|dynamic}\n\nwhere <x> and <y> are the size of the plot.",
            ("svg",),
            [[], ["set terminal svg size <x>,<y> {fixed|dynamic}"]],
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
        # a lead-in left without what it introduces
        ("The command accepts the following options:", False),  # a sentence; may name the answer
        ("From a command prompt they can be removed by", True),
        ("smtpd_recipient_limit (default: 1000)", False),
        # a caption's label alone is a number that answers nothing
        ("Figure 2.7.", True),
        ("Table 3", True),
        ("Figure 2.7 shows the package list.", False),
    ],
)
def test_never_an_answer(text: str, never: bool) -> None:
    assert never_an_answer(text) is never


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # a sentence cut inside a URL: its rest is not a unit of its own
        (
            "The main archive is at https://cran.r-project.org/.\nand is mirrored daily to many sites.",
            ["The main archive is at https://cran.r-project.org/. and is mirrored daily to many sites."],
        ),
        ("Versions 2.1 or\nlater are needed.", ["Versions 2.1 or later are needed."]),
        # a sentence may open with a lower-case name: not a fragment
        ("Run it.\npostconf -n shows the settings.", ["Run it.", "postconf -n shows the settings."]),
        ("See e.g. the file /etc/postfix/main.cf for details. Then run it.", None),
        ("Since version 3.7.2 this is on (see Sect. 4.2 of the manual). The default is 10.", None),
    ],
)
def test_segmentation_never_cuts_a_sentence_wrong(text: str, expected: list[str] | None) -> None:
    units = [u.text for u in passage_units(text)]
    if expected is not None:
        assert units == expected
    assert not any(is_fragment(u) for u in units)
    assert len(units) == (len(expected) if expected else 2)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "From a command prompt they can be removed by\n\nR CMD REMOVE -l /path/to/library pkg1",
            ["From a command prompt they can be removed by\nR CMD REMOVE -l /path/to/library pkg1"],
        ),
        (
            "The command accepts the following options:\n- -a: all\n- -b: brief",
            ["The command accepts the following options:\n-a: all\n-b: brief"],
        ),
        (
            "To rebuild the database, run:\n\n```\nnewaliases\n```",
            ["To rebuild the database, run:\n```\nnewaliases\n```"],
        ),
        # a long list stays items, each read under its lead-in (which is no answer alone)
        (
            "Options before CMD:\n- --interval=D (default: 30s)\n- --timeout=D (default: 30s)\n"
            "- --start-period=D (default: 0s)\n- --start-interval=D (default: 5s)\n- --retries=N (default: 3)",
            [
                "Options before CMD:",
                "--interval=D (default: 30s)",
                "--timeout=D (default: 30s)",
                "--start-period=D (default: 0s)",
                "--start-interval=D (default: 5s)",
                "--retries=N (default: 3)",
            ],
        ),
        # a complete sentence is not a lead-in; a paragraph of prose is not what it introduces
        ("The queue is scanned.\n\nnewaliases", ["The queue is scanned.", "newaliases"]),
        (
            "Note:\n\nThis is a long note. It has sentences.",
            ["Note:", "This is a long note.", "It has sentences."],
        ),
    ],
)
def test_a_lead_in_is_one_unit_with_what_it_introduces(text: str, expected: list[str]) -> None:
    units = passage_units(text)
    assert [u.text for u in units] == expected
    for u in units:  # spans stay exact
        assert u.text.split("\n")[0][:10] in text[u.start : u.end]


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("and is mirrored daily to many sites around the world.", True),
        ("or later.", True),
        ("which is the default.", True),
        ("(and the others)", True),
        ("postconf -n shows the settings.", False),
        ("smtpd_timeout is the time limit.", False),
        ("The default is 10.", False),
        ("-n: show settings", False),
    ],
)
def test_is_fragment(text: str, fragment: bool) -> None:
    assert is_fragment(text) is fragment


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Deprecated In Release: [v1.13.0](https://github.com/docker/docker/releases/tag/v1.13.0)",
            "Deprecated In Release: v1.13.0",
        ),
        ("See ![the diagram](img/arch.png) and **this**.", "See the diagram and this."),
        # not a link: brackets without a target, a target with spaces
        ("set [no]mouse (see below)", "set [no]mouse (see below)"),
        ("[x] (y z)", "[x] (y z)"),
    ],
)
def test_readable_text_shows_a_links_text_not_its_target(text: str, expected: str) -> None:
    assert readable(text) == expected
