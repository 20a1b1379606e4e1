"""What a trace shows a reader who may not read every document in it (trace_access.redact): the
shape, scores and verdicts stay; chunks, sources, quotes and written text from those documents go.
The server's end-to-end check is tests/serve/test_api.py (an admin without the group)."""

from __future__ import annotations

import json

import pytest

from citeline.trace import Candidates, Check, Trace, TracedHit
from citeline.trace_access import redact

OPEN, SECRET = "chunk-open", "chunk-secret"


def trace(generator: str) -> Trace:
    hits = (
        TracedHit(OPEN, "docs/open.md", "Open > Part", 0, 40, 0.9, {"fused": {"score": 0.9, "rank": 1}}, n=1),
        TracedHit(
            SECRET, "restricted/budget.md", "Budget", 5, 60, 0.8, {"fused": {"score": 0.8, "rank": 2}}, n=2
        ),
    )
    return Trace(
        id="t1",
        question="How large is the budget?",
        candidates=Candidates(((OPEN, 3.0), (SECRET, 2.0)), ((SECRET, 0.7),), hits),
        context=hits,
        generator=generator,
        raw_completion="The budget is 4.2 million [2]. Kettles need descaling [1].",
        verification=(
            Check("The budget is 4.2 million.", (2,), True, 0.9, answer_citations=(1,)),
            Check("Kettles need descaling.", (1,), True, 0.8, answer_citations=(2,)),
        ),
        citations=(
            {"n": 1, "chunk_id": SECRET, "quote": "4.2 million"},
            {"n": 2, "chunk_id": OPEN, "quote": "x"},
        ),
        answer="The budget is 4.2 million. [1] Kettles need descaling. [2]",
        timings_ms={"total": 12.0},
    )


@pytest.mark.parametrize(
    ("generator", "open_sentence_kept"), [("extractive", True), ("llamacpp", False)], ids=["quoting", "llm"]
)
def test_what_a_reader_without_the_secret_document_sees(generator: str, open_sentence_kept: bool) -> None:
    seen = redact(trace(generator), {OPEN})
    text = json.dumps(seen.to_json())
    assert "budget.md" not in text and "4.2 million" not in text and SECRET not in text
    assert (
        seen.redacted and seen.timings_ms == {"total": 12.0} and seen.question == "How large is the budget?"
    )
    assert [h.score for h in seen.context] == [0.9, 0.8] and [h.redacted for h in seen.context] == [
        False,
        True,
    ]
    assert seen.context[0].source == "docs/open.md"
    assert [c.supported for c in seen.verification] == [True, True]
    assert seen.verification[0].text == "" and seen.verification[0].redacted
    # an LLM read the secret passage before writing any sentence; the extractive generator quotes its citation
    assert (seen.verification[1].text == "Kettles need descaling.") is open_sentence_kept
    assert seen.raw_completion is None and seen.answer == ""
    assert seen.citations == ({"n": 1, "redacted": True}, {"n": 2, "chunk_id": OPEN, "quote": "x"})


def test_a_reader_of_every_document_sees_the_trace_unchanged() -> None:
    whole = trace("llamacpp")
    assert redact(whole, {OPEN, SECRET}) is whole


def test_the_refused_model_answer_an_extractive_one_replaced_is_redacted_too() -> None:
    refused = {
        "from": "llamacpp",
        "reason": "no answer sentence is supported by its cited passage",
        "verification": [Check("The budget is 4.2 million, roughly.", (1,), False, 0.2).to_json()],
    }
    seen = redact(trace("llamacpp").with_(fallback=refused), {OPEN})
    assert "4.2 million" not in json.dumps(seen.to_json())
    assert seen.fallback is not None and seen.fallback["reason"] == refused["reason"]
    assert (
        seen.fallback["verification"][0]["redacted"]
        and seen.fallback["verification"][0]["supported"] is False
    )
    whole = trace("llamacpp").with_(fallback=refused)
    assert redact(whole, {OPEN, SECRET}) is whole
