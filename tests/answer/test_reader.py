"""Our trained reader and claim checker, as shipped in the package (answer/data/cross-encoder).

These check behaviour a user relies on, on small hand-written cases: the unit that answers wins,
a description plus the sentence giving the value win together, changed facts are not entailed,
and the refusal guard decides on the reader's score. Held-out AUROC is in the model card.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

import citeline
from citeline.answer.checker import TrainedChecker
from citeline.answer.facts import missing_facts
from citeline.answer.reader import (
    PACKAGED,
    Prefilter,
    Reader,
    candidates,
    composed,
    embedded_texts,
    packaged_model,
)
from citeline.answer.units import heading_context
from citeline.answer.verify import Cited
from citeline.kb import KnowledgeBase
from citeline.query.analysis import analyze
from citeline.types import REFUSAL
from conftest import ADMIN

from ._passages import ROUTER_FACTS, make_passages

if not (PACKAGED / "model.onnx").is_file():  # pragma: no cover - the model ships with the package
    pytest.fail(f"the trained model is missing from {PACKAGED} (make train)", pytrace=False)

SETTINGS_PAGE = (
    "The smtpd_recipient_limit parameter limits the number of recipients that the SMTP server "
    "accepts per message delivery request. The default limit is 1000 recipients. "
    "Set it lower on servers that receive mail from untrusted clients."
)


def test_the_answering_unit_scores_above_its_neighbours() -> None:
    model = packaged_model()
    units = [
        "The default limit is 1000 recipients.",
        "Set it lower on servers that receive mail from untrusted clients.",
        "The queue manager schedules deliveries in parallel.",
    ]
    scores = model.reader_scores(
        "How many recipients does the SMTP server accept per message by default?", units
    )
    assert scores[0] == max(scores) and scores[0] > scores[2]


def test_a_window_joins_the_description_and_the_value() -> None:
    found = candidates(make_passages((SETTINGS_PAGE,)))
    assert any(c.unit.kind == "window" and "1000" in c.unit.text for c in found)
    reading = Reader(packaged_model()).read(
        "What is the default value of smtpd_recipient_limit?", make_passages((SETTINGS_PAGE,))
    )
    assert "1000" in reading.scored[0].candidate.unit.text


@pytest.mark.parametrize(
    ("claim", "entailed", "model_alone"),
    [
        ("The default recipient limit is 1000.", True, True),
        ("The default recipient limit is 5000.", False, True),
        ("The default limit was set by Wietse Venema in 1998.", False, True),
        # the model alone misses this one (it reads "limits the number" as agreeing); the facts gate
        # that runs beside it in the answerer does not (model card: limits)
        ("The SMTP server accepts an unlimited number of recipients.", False, False),
    ],
)
def test_the_checks_catch_changed_facts(claim: str, entailed: bool, model_alone: bool) -> None:
    support = TrainedChecker(packaged_model()).check(claim, [Cited(1, SETTINGS_PAGE, 0)])
    if model_alone:
        assert support.supported is entailed, (claim, support.score)
    # what the answerer applies to every sentence: the checker and the stated facts
    assert (support.supported and not missing_facts(claim, SETTINGS_PAGE)) is entailed, (claim, support.score)


@pytest.mark.parametrize(
    "sentence", ["The batch size is 500.", "Set batch_size to 500.", "Keep 1000 messages."]
)
def test_a_sentence_entails_itself_whatever_its_numbers(sentence: str) -> None:
    # round numbers were the corruptions' favourites in training; they must not look false
    assert TrainedChecker(packaged_model()).check(sentence, [Cited(1, sentence, 0)]).supported


@pytest.fixture()
def reader_kb(tmp_path: Path, docs_dir: Path) -> Iterator[KnowledgeBase]:
    kb = citeline.open(tmp_path / "index", reader="citeline", verifier="checker")
    kb.add([docs_dir])
    yield kb
    kb.close()


def test_the_pipeline_answers_with_the_reader_and_refuses_below_its_threshold(
    reader_kb: KnowledgeBase,
) -> None:
    answer = reader_kb.ask("How many jobs can the alpha queue hold?", ADMIN)
    assert not answer.refused, answer.refusal_reason
    assert "900" in answer.answer and answer.reader_score is not None
    assert answer.reader_score >= reader_kb.settings.reader_threshold
    trace = reader_kb.trace(answer.trace_id or "")
    assert trace is not None and trace.reader is not None and trace.verifier == "checker"
    off_topic = reader_kb.ask("What is the capital of Australia?", ADMIN)
    assert off_topic.refused and off_topic.answer == REFUSAL


def test_a_verbatim_quote_is_supported_whatever_it_holds() -> None:
    markup = '<img src=x onerror="alert(1)"><script>x()</script>'
    passage = f"Quokkas greet visitors at dawn; the survey logged {markup} near the jetty.\nMore text."
    claim = f"Quokkas greet visitors at dawn; the survey logged {markup} near the jetty."
    support = TrainedChecker(packaged_model()).check(claim, [Cited(1, passage, 0, "Field Notes > Behaviour")])
    assert support.supported and support.score == 1.0


@pytest.mark.parametrize(
    ("trail", "title", "expected"),
    [
        (("Description",), "postconf(1)", "postconf(1) > Description"),
        ((), "rsync.1", "rsync.1"),
        (("Options", "Retries"), "Manual", "Options > Retries"),  # two headings: as trained
        (("A", "B", "C"), "T", "B > C"),
        (("postconf(1)",), "postconf(1)", "postconf(1)"),  # the title is already there
        (("Description",), "", "Description"),
        ((" ", "Usage"), "tool(1)", "tool(1) > Usage"),
    ],
)
def test_heading_context_leads_with_the_title_when_few_headings_are_left(
    trail: tuple[str, ...], title: str, expected: str
) -> None:
    assert heading_context(trail, title) == expected


def test_the_reader_finds_an_option_line_by_its_program_name() -> None:
    """A question names the program; the option line's one heading does not (golden dev miss)."""
    model = packaged_model()
    option = "-M: Show master.cf file contents instead of main.cf file contents."
    other = "-d: Print main.cf default parameter settings instead of actual settings."
    q = "Which postconf option shows master.cf file contents?"
    units = [f"{heading_context(('Description',), 'postconf(1)')}: {u}" for u in (option, other)]
    scores = model.reader_scores(q, units)
    assert scores[0] > 0.5 > scores[1]


DEFINITION = (
    "smtpd_recipient_limit (default: 1000)\n\nThe maximal number of recipients that the SMTP server "
    "accepts per message delivery request. Lower it on busy servers."
)
DEFINED = ("main.cf parameters", "smtpd_recipient_limit (default: 1000)")


def test_a_definitions_term_is_read_with_its_first_sentence_and_leads_every_pick() -> None:
    found = candidates(make_passages((DEFINITION,), heading=DEFINED))
    term = next(c for c in found if c.unit.text == DEFINED[1])
    assert term.parts == (term.unit,)
    joined = [c for c in found if c.unit.kind == "window" and c.unit.start == term.unit.start]
    assert [c.unit.text for c in joined] == [
        "smtpd_recipient_limit (default: 1000): The maximal number of recipients that the SMTP server "
        "accepts per message delivery request."
    ]
    others = [c for c in found if c.unit.start > term.unit.start]
    assert others and all(c.parts[0] == term.unit and len(c.parts) >= 2 for c in others)
    # the same text under a heading that is not its first line: no term, but the setting's name on
    # a line of its own still leads the sentences of its description (units.option_line); no
    # window crosses the paragraph break
    plain = candidates(make_passages((DEFINITION,), heading=("main.cf parameters",)))
    described = [c for c in plain if c.unit.kind == "sentence" and c.unit.start > term.unit.start]
    assert described and all(c.parts[0].text == DEFINED[1] for c in described)
    assert not any(c.unit.kind == "window" and c.unit.start == term.unit.start for c in plain)


class RecordingEmbedder:
    """The real MiniLM, noting what it is asked to embed."""

    def __init__(self) -> None:
        from citeline.embedding import make_embedder

        self.inner = make_embedder("minilm-int8")
        self.dim = self.inner.dim
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.texts += texts
        return self.inner.embed(texts)


def test_the_prefilter_embeds_no_window_but_composes_its_sentences() -> None:
    """A window of two sentences is ranked by its two sentences' vectors (which the extractive
    generator embeds anyway), not embedded again as one more text."""
    found = candidates(make_passages(ROUTER_FACTS))
    windows = [c for c in found if c.unit.kind == "window"]
    assert windows
    embedder = RecordingEmbedder()
    query = analyze("How do I reset the Zephyr 3 router?")
    ranked = Prefilter(embedder)(query, found)  # type: ignore[arg-type]
    assert sorted(map(id, ranked)) == sorted(map(id, found))
    singles = {c.model_text for c in found if c.unit.kind != "window"}
    assert set(embedder.texts) == singles | {query.text}
    assert not {w.model_text for w in windows} & set(embedder.texts)
    first, second = (embedder.inner.embed([t])[0] for t in embedded_texts(windows[0]))
    both = composed(np.stack([first, second]))
    assert abs(float(np.linalg.norm(both)) - 1.0) < 1e-5
    assert abs(float(both @ first) - float(both @ second)) < 1e-5  # halfway between its sentences
