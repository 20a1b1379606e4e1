"""Topical hard negatives (training/topical.py): on the question's topic, never holding its answer."""

from __future__ import annotations

import random
from collections import Counter

from training.reader_pairs import Corpus, reader_groups
from training.topical import TopicalIndex, answer_words
from training.units import Unit


def _unit(i: int, text: str, doc: str = "m/a.html", section: str = "s0", manual: str = "m") -> Unit:
    return Unit(f"u{i}", doc, manual, "Manual", ("Limits", section), section, "sentence", text, 0, len(text))


ANSWER = _unit(0, "The MaxSessions directive limits open sessions per client to 10 by default.")
TOPICAL = _unit(1, "MaxSessions counts the sessions that a client keeps open at one time.", section="s1")
STATES_VALUE = _unit(2, "Clients may keep 10 sessions open unless MaxSessions says otherwise.", section="s2")
REPEATS_ANSWER = _unit(
    3, "MaxSessions limits open sessions per client; see the directive index.", section="s3"
)
OFF_TOPIC = _unit(4, "The log file is rotated every night by the cron job of the package.", section="s4")
OTHER_MANUAL = _unit(5, "MaxSessions counts sessions of a client that are open at one time too.", manual="n")
OTHER_SPLIT = _unit(6, "MaxSessions counts how many sessions a client has open at one time.", doc="m/b.html")
UNITS = [ANSWER, TOPICAL, STATES_VALUE, REPEATS_ANSWER, OFF_TOPIC, OTHER_MANUAL, OTHER_SPLIT]
SPLIT = {"m/a.html": "train", "m/b.html": "test"}
QUESTION = "How many sessions may a client keep open with MaxSessions?"


def test_answer_words_are_what_the_answer_adds_to_the_question() -> None:
    decisive, other = answer_words(QUESTION, ANSWER)
    assert decisive == {"10"}
    assert {"limits", "directive"} <= other
    assert not other & {"sessions", "client", "maxsessions"}


def test_a_topical_negative_shares_the_question_and_not_the_answer() -> None:
    index = TopicalIndex(UNITS, SPLIT)
    got = index.negatives(QUESTION, ANSWER, [ANSWER], random.Random(1), k=5)
    # STATES_VALUE names the value (10) and REPEATS_ANSWER most of the answer's own words: either
    # may answer; OFF_TOPIC shares nothing; the other manual and the other split are never drawn
    assert [u.id for u in got] == ["u1"]


def test_the_excluded_units_and_their_windows_are_never_negatives() -> None:
    index = TopicalIndex(UNITS, SPLIT)
    assert index.negatives(QUESTION, ANSWER, [ANSWER, TOPICAL], random.Random(1), k=5) == []
    assert index.negatives(QUESTION, ANSWER, [ANSWER], random.Random(1), k=0) == []


def test_reader_groups_add_topical_negatives_only_when_asked() -> None:
    questions = [{"batch": "q:u0", "units": ["u0"], "questions": [QUESTION]}]
    kinds = {}
    for n in (0, 1):
        rows = [
            r
            for g in reader_groups(questions, Corpus(UNITS, SPLIT, n), 13, 0.0, Counter())
            for r in g["rows"]
        ]
        kinds[n] = Counter(r["kind"] for r in rows)
    assert kinds[0]["topical"] == 0
    assert kinds[1]["topical"] == 1
    assert kinds[1]["pos"] == 1
