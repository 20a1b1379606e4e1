"""training.llm_answerability: P(YES) from the first token's alternatives."""

from __future__ import annotations

import math

import pytest
from training.llm_answerability import p_yes


def alt(token: str, p: float) -> dict[str, object]:
    return {"token": token, "logprob": math.log(p)}


@pytest.mark.parametrize(
    ("alternatives", "expected"),
    [
        ([alt("YES", 0.6), alt("NO", 0.2)], 0.75),  # renormalised over YES and NO
        ([alt(" yes", 0.3), alt("Yes", 0.3), alt("NO", 0.2), alt("Maybe", 0.2)], 0.75),  # spellings pooled
        ([alt("NO", 0.9)], 0.0),
        ([alt("The", 0.9)], 0.5),  # neither: no opinion
    ],
)
def test_p_yes(alternatives: list[dict[str, object]], expected: float) -> None:
    assert p_yes(alternatives) == pytest.approx(expected)
