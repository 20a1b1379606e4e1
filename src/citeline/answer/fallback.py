"""With an LLM generator, the extractive generator before the model and after it.

Before: the model is not called where no unit of the context reaches the extractive generator's
floor, where an extractive answer would refuse too (``below_floor``).

After: a small local model often finds nothing in passages that do hold the answer ("why" questions,
a value under another name), or says it in words the claim checks cannot tie to a passage, so
its answer is refused. When the reader says the context answers the question, the extractive
answer on the same passages (checked the same way) is better than a false refusal. Refusals
decided before the model is called (relevance, reader, the asked value missing, the floor) stand.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from citeline.answer.extractive import ExtractiveGenerator, confidence
from citeline.answer.reader import Reading
from citeline.query.analysis import Query
from citeline.trace import Trace
from citeline.types import Answer, Passage


def below_floor(floor: ExtractiveGenerator | None, query: Query, passages: Sequence[Passage]) -> str | None:
    """Why an LLM is not called: no unit of the context scores ``min_answer_score`` by
    similarity and overlap, the floor under which the extractive generator refuses (on RGB's
    first 50 negative-rejection questions, 3 the 0.5B answered; golden dev: none). Units are
    embedded once for the reader's pre-ranking and the floor (embedding/memo.py)."""
    if floor is None or not passages:
        return None
    best = confidence(floor.score_units(query, passages))
    if best < floor.min_score:
        return f"no sentence answers the question well enough (best {best:.2f})"
    return None


#: the refusals of the model's own answer (Answerer._resolve) that the extractive answer may replace
MODEL_REFUSALS = frozenset(
    {
        "the generator found no answer in the sources",
        "no answer sentence is supported by its cited passage",
    }
)


def falls_back(answer: Answer, reading: Reading | None, min_reader: float) -> bool:
    """The model's answer was refused after it was called, and the reader's best score over the
    context reaches ``min_reader`` (without a reader, the extractive generator's floor decides)."""
    if not answer.refused or answer.refusal_reason not in MODEL_REFUSALS:
        return False
    return reading is None or reading.guard >= min_reader


def fallback_json(model: str, refused: Answer, trace: Trace) -> dict[str, Any]:
    """What the trace keeps of the model's refused answer: who, why and its claim checks."""
    return {
        "from": model,
        "reason": refused.refusal_reason,
        "verification": [c.to_json() for c in trace.verification],
    }
