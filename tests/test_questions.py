"""End to end over the bundled samples: refusals are exact, answers cite the gold source."""

from __future__ import annotations

import json

from citeline.kb import KnowledgeBase
from citeline.types import REFUSAL
from conftest import ADMIN, QUESTIONS


def _questions() -> list[dict[str, object]]:
    return [json.loads(line) for line in QUESTIONS.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_question_set_shape() -> None:
    qs = _questions()
    assert sum(bool(q["answerable"]) for q in qs) >= 20
    assert sum(not q["answerable"] for q in qs) >= 10


def test_unanswerable_refused_and_answerable_cite_gold(samples_kb: KnowledgeBase) -> None:
    answered_with_gold, answerable, wrongly_answered = 0, 0, []
    for q in _questions():
        answer = samples_kb.ask(str(q["question"]), ADMIN)
        if not q["answerable"]:
            if not answer.refused:
                wrongly_answered.append((q["id"], answer.answer))
            else:
                assert answer.answer == REFUSAL and not answer.citations
            continue
        answerable += 1
        sources = {c.source.replace("\\", "/") for c in answer.citations}
        if not answer.refused and any(s.endswith(str(q["source"]).removeprefix("samples/")) for s in sources):
            answered_with_gold += 1
        for c in answer.citations:  # every citation resolves to the exact text it quotes
            text = samples_kb.store.document_text(c.document_id)
            assert text[c.start : c.end] == c.quote
    assert not wrongly_answered, wrongly_answered
    assert answered_with_gold / answerable >= 0.8, (answered_with_gold, answerable)
