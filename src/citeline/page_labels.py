"""Printed page labels of a PDF (its /PageLabels: "ix", "9", "A-3"), beside the file's page numbers.

A citation's ``page`` is the page's place in the file (13); the label is what is printed on it (9).
A document keeps its labels in its metadata, ``page_labels``, as runs: ``[[page, label], ...]``,
one entry where a run starts, every later page of a run numbered one more than the page before it
("1" on page 13 gives "2" on page 14, "A-9" gives "A-10"). A 2,000-page book numbered from its
13th page stores 13 entries, not 2,000. No entry is stored when every label is the page number.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

METADATA_KEY = "page_labels"

_NUMBERED = re.compile(r"^(.*?)(\d+)$", re.DOTALL)


def _next(label: str, steps: int) -> str | None:
    """The label ``steps`` pages after ``label`` in its run, or None when it ends no number."""
    m = _NUMBERED.match(label)
    if m is None:
        return None
    return f"{m.group(1)}{int(m.group(2)) + steps}"


def encode(labels: Sequence[str]) -> list[list[int | str]]:
    """The runs of ``labels`` (one a page, the first for page 1); [] when they add nothing."""
    if all(not label or label == str(page) for page, label in enumerate(labels, start=1)):
        return []
    runs: list[list[int | str]] = []
    for page, label in enumerate(labels, start=1):
        if runs:
            start, first = runs[-1]
            if label == first == "" or (label and _next(str(first), page - int(start)) == label):
                continue
        runs.append([page, label])
    return runs


def page_label(metadata: Mapping[str, Any], page: int | None) -> str | None:
    """The printed label of ``page`` (1-based), or None when the document has none for it."""
    runs = metadata.get(METADATA_KEY)
    if page is None or not runs:
        return None
    found = None
    for start, first in runs:
        if int(start) > page:
            break
        found = (int(start), str(first))
    if found is None or not found[1]:
        return None
    start, first = found
    return first if start == page else _next(first, page - start)
