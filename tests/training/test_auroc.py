"""training.common.auroc: the product's AUROC (tests/eval/test_metrics.py), NaN for one class."""

from __future__ import annotations

import math

import pytest
from training.common import auroc


def test_auroc_is_the_products_with_nan_for_one_class() -> None:
    assert auroc([0.9, 0.3, 0.6, 0.1], [1, 1, 0, 0]) == pytest.approx(0.75)
    assert math.isnan(auroc([0.1, 0.2], [1, 1]))
    assert math.isnan(auroc([], []))
