"""The reader's span head (issue 34, item 5): where in the unit is the asked value, or nowhere?

A pair classifier over (question, unit) learned topicality: a unit restating the question scored
0.99. The span head, trained on answer strings (training/span_folds.py), points at the tokens that
answer, or at [CLS] (the null answer, as in SQuAD 2.0); a restatement has nothing to point at. It
runs as a branch on the packaged model's hidden states after its shared lower layers (``span.onnx``
beside ``model.onnx``), so the reader's and checker's own logits are unchanged and a unit costs the
branch's upper layers, not a second encoder. Its score, the best span's start + end logit minus
the null answer's, is log-odds the unit states an answer; the reader adds it to its own, weighted.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from citeline.inference.session import CpuSession


def best_minus_null(logits: npt.NDArray[np.float32], max_span: int) -> npt.NDArray[np.float32]:
    """``logits`` (batch, tokens, 2: start, end) -> per row the best span's start + end logit
    (start <= end < start + max_span, [CLS] excluded) minus [CLS]'s start + end."""
    start, end = logits[..., 0], logits[..., 1]
    pair = start[:, :, None] + end[:, None, :]
    n = pair.shape[1]
    i, j = np.indices((n, n))
    band = (j >= i) & (j < i + max_span) & (i > 0)
    best = np.where(band[None], pair, -np.inf).reshape(len(logits), -1).max(axis=1)
    return np.asarray(best - (start[:, 0] + end[:, 0]), dtype=np.float32)


class SpanHead:
    """``span.onnx`` of a cross-encoder folder, as its config.json's ``span`` entry describes it."""

    def __init__(self, folder: Path, spec: dict[str, Any], threads: int | None = None) -> None:
        self.hidden = str(spec["hidden"])  # the output of model.onnx it reads, and its input name
        self.weight = float(spec["weight"])
        self.max_span = int(spec.get("max_span", 30))
        self._path, self._threads = folder / str(spec["file"]), threads
        self._session: CpuSession | None = None  # built on first use: off by default (settings)

    def __call__(
        self, hidden: npt.NDArray[np.float32], mask: npt.NDArray[np.int64], types: npt.NDArray[np.int64]
    ) -> npt.NDArray[np.float32]:
        """Log-odds that each pair's second text states an answer to its first."""
        if self._session is None:
            self._session = CpuSession(self._path, self._threads, optimize_after=0)
        feeds = {self.hidden: hidden, "attention_mask": mask, "token_type_ids": types}
        return best_minus_null(np.asarray(self._session.run(None, feeds)[0], dtype=np.float32), self.max_span)
