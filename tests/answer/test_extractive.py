"""The offline extractive generator: answer types and the years a question names."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import pytest

from citeline.answer.extractive import READER_LEAD, READER_WEIGHT, ExtractiveGenerator, confidence
from citeline.answer.reader import Reader, Reading, candidates
from citeline.answer.reader import Scored as ReaderScored
from citeline.embedding import make_embedder
from citeline.query.analysis import analyze, mentions_years
from citeline.types import Passage

from ._passages import make_passages

REVENUE = (
    "Tesla reported total revenue of $23.3 billion for Q1 2023, up 24% from a year earlier.",
    "Tesla builds its Model Y in Austin and in Berlin.",
)


@pytest.fixture(scope="module")
def generator() -> ExtractiveGenerator:
    return ExtractiveGenerator(make_embedder("minilm-int8"), min_score=0.35)


def test_years_come_from_the_question_and_must_all_be_mentioned() -> None:
    assert analyze("What was Tesla's revenue in Q1 2021?").years == {"2021"}
    assert analyze("Did the 1999 rules survive into 2004?").years == {"1999", "2004"}
    assert analyze("What does error 4012 mean? Port 2525 is open.").years == set()
    assert mentions_years({"2021"}, "In Q1 2021 revenue was $10.4 billion.")
    assert not mentions_years({"2021", "2022"}, "In Q1 2021 revenue was $10.4 billion.")
    assert mentions_years(set(), "anything")


def test_an_answer_about_another_year_is_a_refusal(generator: ExtractiveGenerator) -> None:
    draft = generator.generate("What was Tesla's revenue in Q1 2021?", make_passages(REVENUE))
    assert draft.refused and not draft.sentences
    same_year = generator.generate("What was Tesla's revenue in Q1 2023?", make_passages(REVENUE))
    assert not same_year.refused
    assert same_year.sentences[0].text == REVENUE[0]


def test_years_told_in_a_story_do_not_have_to_be_in_the_answer(generator: ExtractiveGenerator) -> None:
    story = "I bought my Zephyr 3 router in 2019 and it keeps dropping the line. How do I reset it?"
    passages = make_passages(
        ("To reset the Zephyr 3 to factory settings, hold the recessed reset button for 15 seconds.",)
    )
    draft = generator.generate(story, passages)
    assert not draft.refused
    assert "reset button" in draft.sentences[0].text


def test_a_sentence_that_cannot_be_the_expected_kind_of_answer_is_not_chosen(
    generator: ExtractiveGenerator,
) -> None:
    passages = make_passages(
        (
            "The reset button of the Zephyr 3 is recessed behind the power socket.",
            "Hold the reset button for 15 seconds until the status light blinks amber.",
        )
    )
    draft = generator.generate("How long do I hold the Zephyr 3 reset button?", passages)
    assert [s.text for s in draft.sentences] == [
        "Hold the reset button for 15 seconds until the status light blinks amber."
    ]


def test_a_definitions_term_leads_the_sentence_picked_from_it(generator: ExtractiveGenerator) -> None:
    """A definition list entry's description does not name what it describes or its default: the
    term is quoted first, once, however many of its sentences are picked."""
    text = (
        "smtpd_recipient_limit (default: 1000)\n\nThe maximal number of recipients that the SMTP "
        "server accepts per message delivery request. Set it lower on servers for untrusted clients."
    )
    passages = make_passages((text,), heading=("main.cf parameters", "smtpd_recipient_limit (default: 1000)"))
    draft = generator.generate(
        "How many recipients does the SMTP server accept per delivery request?", passages
    )
    texts = [s.text for s in draft.sentences]
    assert texts[0] == "smtpd_recipient_limit (default: 1000)"
    assert texts.count(texts[0]) == 1 and len(texts) >= 2
    assert all(s.citations == (1,) for s in draft.sentences)


class _FixedReader:
    """Scores every candidate unit of the passages by a table: the selection logic under test is
    the generator's, not the model's (tests/answer/test_reader.py runs the model)."""

    def __init__(self, scores: dict[str, float]) -> None:
        self.scores = scores

    def read(self, question: object, passages: Sequence[Passage]) -> Reading:
        found = [c for c in candidates(passages) if c.unit.text in self.scores]
        ranked = sorted(found, key=lambda c: -self.scores[c.unit.text])
        return Reading(
            tuple(ReaderScored(c, self.scores[c.unit.text], self.scores[c.unit.text]) for c in ranked)
        )


LEAD_PASSAGES = (
    "The smtp service is described below. See the manual for the smtp service settings.",
    "Delete the current line from the input, and inspect the next input line.",
)


@pytest.mark.parametrize(
    ("reader_best", "expected_first"),
    [
        (0.95, LEAD_PASSAGES[1]),  # sure: the reader's unit leads the overlap picks
        (READER_LEAD, LEAD_PASSAGES[1]),  # the lead is inclusive
        (READER_LEAD - 0.01, "The smtp service is described below."),  # not sure: overlap alone
    ],
)
def test_the_readers_best_unit_leads_the_answer_only_when_it_is_sure(
    reader_best: float, expected_first: str
) -> None:
    reader = _FixedReader({LEAD_PASSAGES[1]: reader_best, "The smtp service is described below.": 0.1})
    both = ExtractiveGenerator(make_embedder("minilm-int8"), reader=cast("Reader", reader), picks="both")
    draft = both.generate("What does the smtp service do?", make_passages(LEAD_PASSAGES))
    assert draft.sentences[0].text == expected_first
    assert len(draft.sentences) <= both.max_sentences
    assert [s.text for s in draft.sentences].count(LEAD_PASSAGES[1]) <= 1


def test_a_lead_the_overlap_picks_already_quote_is_not_repeated() -> None:
    question = "What does the smtp service do?"
    overlap = ExtractiveGenerator(make_embedder("minilm-int8"))
    picked = overlap.generate(question, make_passages(LEAD_PASSAGES)).sentences[0].text
    reader = cast("Reader", _FixedReader({picked: 0.99}))
    both = ExtractiveGenerator(make_embedder("minilm-int8"), reader=reader, picks="both")
    texts = [s.text for s in both.generate(question, make_passages(LEAD_PASSAGES)).sentences]
    assert texts[0] == picked and texts.count(picked) == 1


def test_when_no_unit_has_the_expected_kind_the_units_of_any_kind_answer(
    generator: ExtractiveGenerator,
) -> None:
    # "How long" expects a duration; the passage gives a length in characters and no duration
    passages = make_passages(
        ("The PROTO attribute is an SMTP or non-SMTP protocol name of up to 64 characters.",)
    )
    draft = generator.generate("How long may the PROTO attribute of an XFORWARD command be?", passages)
    assert not draft.refused
    assert "64 characters" in draft.sentences[0].text


def test_an_options_name_leads_the_sentence_picked_from_its_paragraph(generator: ExtractiveGenerator) -> None:
    """A man page's option paragraph ("-i: Incremental mode. Read entries ...") names the option in
    its first sentence only: a later sentence is quoted after it, or the answer never says which
    option does it."""
    text = (
        "-f: Do not fold the lookup key to lower case.\n\n-i: Incremental mode. Read entries from "
        "standard input and do not truncate an existing database."
    )
    passages = make_passages((text,), heading=("postmap(1)", "Options"))
    draft = generator.generate("Which option reads entries from standard input without truncating?", passages)
    texts = [s.text for s in draft.sentences]
    assert "Read entries from standard input and do not truncate an existing database." in texts
    assert (
        texts.index("-i: Incremental mode.")
        == texts.index("Read entries from standard input and do not truncate an existing database.") - 1
    )


def test_a_pointer_elsewhere_is_never_quoted(generator: ExtractiveGenerator) -> None:
    """The pointer "See IGNORE for a silent alternative." names what was asked and matches it closely, but says
    only where the answer is: the answer quotes the definition it points to."""
    passages = make_passages(
        (
            "WARN optional text...: Log a warning with the optional text. See IGNORE for a silent alternative.",
            "IGNORE: Delete the current line from the input, and inspect the next input line.",
        ),
        heading=("header_checks(5)", "Actions"),
    )
    draft = generator.generate("What does the IGNORE action do in header_checks?", passages)
    texts = [s.text for s in draft.sentences]
    assert texts and "See IGNORE for a silent alternative." not in texts
    assert any("Delete the current line" in t for t in texts)


def test_a_story_question_is_also_read_by_its_asking_part() -> None:
    """In "We have kept sheep and cattle ... Can my son get a student loan?" the whole question is
    mostly story, and a sentence about keeping sheep and cattle matched it best. The asking part is
    read too, and the student loan sentence answers."""
    generator = ExtractiveGenerator(make_embedder("minilm-int8"), min_score=0.0, max_sentences=1)
    loan = "A student loan is available to anyone under 25 who starts a full-time course."
    passages = make_passages(
        ("Keeping sheep and cattle on a farm needs a holding number from the council.", loan),
        heading=("Guidance",),
    )
    for question in (
        "We have kept sheep and cattle on our farm for twenty years, and I have four children. "
        "Can my son get a student loan?",
        "I farm sheep and cattle. My son is 19. Can he get a student loan?",
    ):
        draft = generator.generate(question, passages)
        assert [s.text for s in draft.sentences] == [loan], question


def test_the_floor_of_a_story_question_is_on_the_whole_questions_similarity() -> None:
    """Reading the asking part changes which unit wins, not the floor: the confidence the floor is
    checked against is the whole question's score, as the floor was chosen on it."""
    generator = ExtractiveGenerator(make_embedder("minilm-int8"), min_score=0.0)
    passages = make_passages(("A student loan is available to anyone under 25.",), heading=("Guidance",))
    story = "I farm sheep and cattle. My son is 19. Can he get a student loan?"
    scored = generator.score_units(story, passages)
    assert scored[0].floor is not None and scored[0].floor < scored[0].score
    assert generator.generate(story, passages).confidence == pytest.approx(scored[0].floor)
    assert generator.score_units("Can he get a student loan?", passages)[0].floor is None


UNIT_PASSAGE = (
    "Specify a time value with an optional one-letter suffix that specifies the time unit. "
    "The default time unit is d (days)."
)
DESCRIBES, GIVES = (
    "Specify a time value with an optional one-letter suffix that specifies the time unit.",
    "The default time unit is d (days).",
)
BOTH = f"{DESCRIBES} {GIVES}"


@pytest.mark.parametrize(
    ("reader_scores", "gains"),
    [
        ({}, {DESCRIBES: 0.0, GIVES: 0.0}),  # read by nobody: the overlap order stands
        ({GIVES: 0.8}, {DESCRIBES: 0.0, GIVES: 0.8}),
        ({BOTH: 0.6}, {DESCRIBES: 0.6, GIVES: 0.6}),  # a window quotes both of its sentences
        ({DESCRIBES: 0.2, BOTH: 0.6, GIVES: 0.9}, {DESCRIBES: 0.6, GIVES: 0.9}),  # the best that quotes it
    ],
)
def test_blend_adds_the_readers_best_score_of_what_quotes_a_unit(
    reader_scores: dict[str, float], gains: dict[str, float]
) -> None:
    reader = cast("Reader", _FixedReader(reader_scores))
    blend = ExtractiveGenerator(make_embedder("minilm-int8"), reader=reader, picks="blend")
    passages = make_passages((UNIT_PASSAGE,))
    question = "Which time unit is assumed without a suffix?"
    scored = blend.score_units(question, passages)
    blended = {s.unit.text: s for s in blend.blend(question, passages, scored)}
    assert scored and set(blended) == {s.unit.text for s in scored}
    for s in scored:
        assert blended[s.unit.text].score == pytest.approx(s.score + READER_WEIGHT * gains[s.unit.text])
    # the floor is checked on the unblended scores, as it was chosen on them: refusals do not move
    assert confidence(list(blended.values())) == pytest.approx(confidence(scored))


def test_blend_ranks_by_the_readers_score_among_units_that_state_the_asked_value() -> None:
    """Asked for what is assumed (no value kind to decide by), the reader's score reorders the
    units the similarity put first; asked which unit, the unit that names one leads even when
    the reader prefers the other (golden dev pf-004)."""
    passages = make_passages((UNIT_PASSAGE,))
    reader = cast("Reader", _FixedReader({GIVES: 0.9, DESCRIBES: 0.1}))
    blend = ExtractiveGenerator(make_embedder("minilm-int8"), max_sentences=2, reader=reader, picks="blend")
    scored = blend.score_units("What is assumed when a time value has no suffix?", passages)
    blended = blend.blend("What is assumed when a time value has no suffix?", passages, scored)
    assert [s.unit.text for s in blended] == [DESCRIBES, GIVES]  # 0.2 x 0.8 does not close the gap
    assert blended[1].score - scored[1].score == pytest.approx(READER_WEIGHT * 0.9)
    contrary = cast("Reader", _FixedReader({GIVES: 0.1, DESCRIBES: 0.9}))
    blend = ExtractiveGenerator(make_embedder("minilm-int8"), max_sentences=1, reader=contrary, picks="blend")
    answer = blend.generate("Which time unit is assumed without a suffix?", passages)
    assert [s.text for s in answer.sentences] == [GIVES]


def test_a_unit_that_states_the_asked_kind_of_value_leads_without_the_reader() -> None:
    """Asked which unit: the sentence that names one ("d (days)") leads the one that repeats the
    question's words ("... specifies the time unit"), by the asked slot alone."""
    question = "Which time unit is assumed without a suffix?"
    plain = ExtractiveGenerator(make_embedder("minilm-int8"), max_sentences=1)
    answer = plain.generate(question, make_passages((UNIT_PASSAGE,)))
    assert [s.text for s in answer.sentences] == [GIVES]


def test_a_value_stated_after_its_lead_in_is_quoted_with_it() -> None:
    """ "This proportion is 500." states the default its sentence before names: asked for the
    default, the answer quotes both, although the value's sentence alone resembles no question."""
    text = (
        "By default, all containers get the same proportion of block IO bandwidth (blkio). This "
        "proportion is 500. To modify this proportion, change the container's blkio weight relative "
        "to the weighting of all other running containers using the --blkio-weight flag."
    )
    plain = ExtractiveGenerator(make_embedder("minilm-int8"))
    draft = plain.generate(
        "What block IO weight do containers get when none is given?", make_passages((text,))
    )
    assert [s.text for s in draft.sentences][:2] == [
        "By default, all containers get the same proportion of block IO bandwidth (blkio).",
        "This proportion is 500.",
    ]


def test_a_value_line_answers_with_its_entrys_similarity(generator: ExtractiveGenerator) -> None:
    """A DOCX reference gives each entry as paragraphs: the value line ("Default: -200") resembles no
    question; the description after it does. The value leads, and the floor does not refuse it."""
    entry = (
        "Option: Aptitude::ProblemResolver::UnfixedSoftScore\n\n"
        "Default: -200\n\n"
        "Description: How much to reward leaving a Recommends relationship unresolved.\n\n"
        "Option: Aptitude::ProblemResolver::Infinity\n\n"
        "Default: 1000000"
    )
    question = (
        "How many points does the resolver give by default for leaving a Recommends relationship unresolved?"
    )
    draft = generator.generate(question, make_passages((entry,)))
    assert not draft.refused
    assert draft.sentences[0].text == "Default: -200"


def test_a_code_names_a_value_line_through_its_entry(generator: ExtractiveGenerator) -> None:
    """ "X11" is a code of the question; "The default is 10." does not repeat it, its entry does."""
    entry = (
        "X11DisplayOffset\n\n"
        "Specifies the first display number available for sshd(8)'s X11 forwarding. This prevents "
        "sshd from interfering with real X11 servers. The default is 10."
    )
    other = "DISPLAY: The DISPLAY variable indicates the location of the X11 server, an integer >= 1."
    draft = generator.generate(
        "What is the first display number sshd hands out for forwarded X11 sessions?",
        make_passages((other, entry)),
    )
    texts = [s.text for s in draft.sentences]
    # quoted after its entry's term line, before any sentence of the other passage
    assert texts[:2] == ["X11DisplayOffset", "The default is 10."]


def test_asked_why_the_sentence_that_gives_a_reason_leads() -> None:
    """scp(1): the sentences that repeat the question's words (the option, the port) are more
    similar to it than the one that says why; asked why, the reason leads the answer."""
    text = (
        "-P port: Specifies the port to connect to on the remote host. When copying between two remote "
        "hosts, a port cannot be specified on the target with this option. Note that this option is "
        "written with a capital 'P', because -p is already reserved for preserving the times and mode "
        "bits of the file."
    )
    plain = ExtractiveGenerator(make_embedder("minilm-int8"), max_sentences=1)
    draft = plain.generate("Why is scp's port option an uppercase -P?", make_passages((text,)))
    assert "because -p is already reserved" in draft.sentences[0].text


@pytest.mark.parametrize(
    ("question", "text", "leads"),
    [
        # gnuplot's fit: the sentence about the save fit command resembles the question more than
        # the parameter file line that does it
        (
            "In a fit parameter file, how do I keep one parameter fixed while the others are fitted?",
            "Once fit has finished, the save fit command may be used to store final values in a file "
            "for subsequent use as a parameter file. To keep a parameter fixed, write its line as:\n\n"
            "varname = value # FIXED",
            "# FIXED",
        ),
        # Postfix TLS_README: the sentence that says which setting to write leads those that say
        # when AUTH is offered (golden dev pf-050)
        (
            "How do I make the SMTP server offer AUTH only after STARTTLS, even though TLS is optional?",
            "When TLS layer encryption is optional (smtpd_enforce_tls = no), it may however still be "
            "useful to only offer AUTH when TLS is active. To maintain compatibility with non-TLS "
            "clients, the default is to accept AUTH without encryption. In order to change this "
            'behavior, set "smtpd_tls_auth_only = yes".',
            "smtpd_tls_auth_only = yes",
        ),
    ],
)
def test_asked_how_the_line_to_type_leads_prose_naming_a_command(
    question: str, text: str, leads: str
) -> None:
    plain = ExtractiveGenerator(make_embedder("minilm-int8"), max_sentences=1)
    draft = plain.generate(question, make_passages((text,)))
    assert leads in draft.sentences[0].text


def test_asked_where_the_unit_that_states_a_place_leads() -> None:
    """ssh-copy-id(1): the sentence about remote hosts resembles the question more than the one
    that names the file the keys go to (golden dev ossh-096)."""
    text = (
        "If you have already installed keys from one system on a lot of remote hosts, it can be "
        "difficult to keep track of which systems you have installed the new key on. By default it "
        "adds the keys by appending them to the remote user's ~/.ssh/authorized_keys (creating the "
        "file, and directory, if necessary)."
    )
    plain = ExtractiveGenerator(make_embedder("minilm-int8"), max_sentences=1)
    draft = plain.generate(
        "Where on the remote host does ssh-copy-id install my key?", make_passages((text,))
    )
    assert "~/.ssh/authorized_keys" in draft.sentences[0].text
