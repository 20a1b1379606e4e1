"""Option questions and altered (unanswerable) questions of the training-data builder."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from training.question_variants import (
    alter_question,
    altered_groups,
    option_question,
    program_of,
    third_person,
)
from training.reader_pairs import Corpus, _group, reader_pairs
from training.units import Unit

from training import claims as C


def _unit(text: str, title: str = "T", kind: str = "sentence") -> Unit:
    return Unit("d#1", "m/d.html", "m", title, ("OPTIONS",), "OPTIONS", kind, text, 0, len(text))


@pytest.mark.parametrize(
    ("verb", "expected"), [("show", "shows"), ("pass", "passes"), ("try", "tries"), ("stay", "stays")]
)
def test_third_person(verb: str, expected: str) -> None:
    assert third_person(verb) == expected


@pytest.mark.parametrize(
    ("text", "option", "must_contain"),
    [
        ("--copy-links Turn all symlinks into normal files and directories.", "--copy-links", "symlinks"),
        ("-M: Show master.cf file contents instead of main.cf file contents.", "-M", "master.cf"),
        ("--owner, -o This option causes rsync to set the owner of each file.", "--owner", "causes"),
        ("-d offset Delete the history entry at position offset.", "-d", "history entry"),
        ("-N starts without the preview.", "-N", "starts without the preview"),
        ("queue_time: Sets the time a message may stay in the queue.", "queue_time", "sets the time"),
    ],
)
def test_option_question_turns_the_description_into_the_question(
    text: str, option: str, must_contain: str
) -> None:
    for seed in range(5):
        out = option_question(_unit(text), random.Random(seed))
        assert out is not None, text
        q, opt = out
        assert opt == option
        assert q.endswith("?") and must_contain in q
        assert option not in q  # the question asks for the option, it does not name it
        assert q.rstrip("?").split()[-1].lower() not in ("the", "of", "to", "a")


@pytest.mark.parametrize(
    "text",
    [
        "The server listens on port 25.",  # no option
        "--verbose",  # no description
        "-q The quiet mode.",  # no verb
        "Windows are not units of their own.",
    ],
)
def test_option_question_needs_an_option_and_a_verb(text: str) -> None:
    assert option_question(_unit(text), random.Random(0)) is None
    assert (
        option_question(_unit("--mkpath Create all missing paths.", kind="window"), random.Random(0)) is None
    )


def test_program_of_man_page_titles() -> None:
    assert program_of(_unit("x", "rsync.1")) == "rsync"
    assert program_of(_unit("x", "postconf(1)")) == "postconf"
    assert program_of(_unit("x", "rsyncd.conf.5")) == ""  # a file format, not a command
    assert program_of(_unit("x", "Introduction")) == ""


def test_altered_question_names_what_the_answer_does_not_contain() -> None:
    answer = _unit("The retry_interval parameter defaults to 30 seconds.")
    vocab = C.name_vocabulary(["queue_run_max smtp_accept_max retry_interval"])
    seen = set()
    for seed in range(20):
        out = alter_question("What is the default of retry_interval?", answer, [], vocab, random.Random(seed))
        assert out is not None
        q, how = out
        assert how == "name" and "retry_interval" not in q
        assert any(n in q for n in ("queue_run_max", "smtp_accept_max"))
        seen.add(q)
    assert len(seen) == 2
    # a rare word of another section replaces a rare word the question shares with its answer
    answer = _unit("Compression reduces bandwidth for responses.")
    other = _unit("Encryption protects connections between servers.")
    out = alter_question("Does compression reduce bandwidth?", answer, [other], {}, random.Random(0))
    assert out is not None
    q, how = out
    new = set(q.lower().rstrip("?").split()) - {"does", "compression", "reduce", "bandwidth"}
    assert how == "word" and len(new) == 1 and new <= {"encryption", "protects", "connections"}
    assert alter_question("What is it?", answer, [other], {}, random.Random(0)) is None


def test_altered_groups_are_all_negative_and_stay_in_their_split() -> None:
    units: list[Unit] = []
    for d in range(6):
        doc = f"m/doc{d}.html"
        for k in range(6):
            text = f"The opt_{d}_{k} parameter sets the widget limit of section {k} to {k + 2} items."
            units.append(
                Unit(
                    f"{doc}#{k}",
                    doc,
                    "m",
                    f"Doc {d}",
                    ("Doc", f"S{k % 2}"),
                    f"S{k % 2}",
                    "sentence",
                    text,
                    0,
                    len(text),
                )
            )
    split = {f"m/doc{d}.html": ("train", "dev", "test")[d % 3] for d in range(6)}
    corpus = Corpus(units, split)
    groups = []
    for u in units[::2]:
        q = f"What limit does {u.text.split()[1]} set?"
        pairs, _ = reader_pairs(q, u, corpus, random.Random(u.id))
        groups.append(_group(f"t:{u.id}", q, pairs, split[u.doc], u, "reader", "template_definition"))
    stats: Counter[str] = Counter()
    assert groups
    vocab = {"m": C.name_vocabulary(u.text for u in units)}
    altered = list(altered_groups(groups, corpus, vocab, 13, 1.0, stats))
    assert altered and stats["altered:name"] > 0
    originals = {g["rows"][0]["group"].split(":", 1)[1]: g for g in groups}
    for g in altered:
        rows = g["rows"]
        assert {r["label"] for r in rows} == {0}
        assert {r["kind"] for r in rows} == {"altered_question"}
        original = originals[rows[0]["group"].split(":", 1)[1]]
        assert g["split"] == original["split"]
        assert rows[0]["a"] != original["rows"][0]["a"]
        # the altered question is paired with exactly the original's positives
        assert {r["b"] for r in rows} == {r["b"] for r in original["rows"] if r["label"] == 1}
