"""Sentence spans of a text (blingfire): the chunker's units and the answer's sentences alike."""

from __future__ import annotations

import functools
import inspect
from typing import Any


def _import_blingfire() -> Any:
    """blingfire finds its own folder with ``inspect.getframeinfo``, whose source lookup walks the
    path of every module loaded so far (an lstat per path component): ~15 ms of CPU once a command
    has loaded a few hundred modules (a one-shot `citeline ask`). Asked for no source lines
    (context=0), it returns the same file name at once."""
    original = inspect.getframeinfo
    setattr(inspect, "getframeinfo", functools.partial(original, context=0))  # noqa: B010
    try:
        import blingfire
    finally:
        setattr(inspect, "getframeinfo", original)  # noqa: B010
    return blingfire


blingfire = _import_blingfire()


def sentence_spans(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Sentence spans (absolute offsets) within text[start:end], trimmed, covering all non-space text."""
    segment = text[start:end]
    if not segment.strip():
        return []
    _, offsets = blingfire.text_to_sentences_and_offsets(segment)
    spans = [(start + a, start + b) for a, b in offsets if b > a]
    return spans or [(start, end)]
