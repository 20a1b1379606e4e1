"""training.common.auroc: the Mann-Whitney AUROC every training report and reader_separation use."""

from __future__ import annotations

import math

import pytest
from training.common import auroc


@pytest.mark.parametrize(
    ("scores", "labels", "expected"),
    [
        ([0.9, 0.8, 0.2, 0.1], [1, 1, 0, 0], 1.0),  # every positive above every negative
        ([0.1, 0.2, 0.8, 0.9], [1, 1, 0, 0], 0.0),
        ([0.5, 0.5, 0.5, 0.5], [1, 0, 1, 0], 0.5),  # ties count half
        ([0.9, 0.3, 0.6, 0.1], [1, 1, 0, 0], 0.75),  # 3 of the 4 (pos, neg) pairs in order
        ([0.7, 0.7, 0.2], [1, 0, 0], 0.75),  # one tie, one win
    ],
)
def test_auroc(scores: list[float], labels: list[int], expected: float) -> None:
    assert auroc(scores, labels) == pytest.approx(expected)


def test_auroc_without_both_classes_is_nan() -> None:
    assert math.isnan(auroc([0.1, 0.2], [1, 1]))
    assert math.isnan(auroc([], []))
