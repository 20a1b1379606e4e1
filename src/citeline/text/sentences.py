"""Sentence spans of a text (blingfire): the chunker's units and the answer's sentences alike."""

from __future__ import annotations

import blingfire


def sentence_spans(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Sentence spans (absolute offsets) within text[start:end], trimmed, covering all non-space text."""
    segment = text[start:end]
    if not segment.strip():
        return []
    _, offsets = blingfire.text_to_sentences_and_offsets(segment)
    spans = [(start + a, start + b) for a, b in offsets if b > a]
    return spans or [(start, end)]
