"""Golden rows' evidence items: each malformed item is refused with a message naming the row and item."""

from __future__ import annotations

from typing import Any

import pytest

from citeline.eval.answers import GoldenFormatError, validate_row

ROW = {"id": "q1", "question": "What is the default?", "answerable": True}


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ("a.html", "row 'q1': evidence[0] must be an object."),
        ({"chunk_id": "c1"}, "row 'q1': evidence[0] names a chunk; chunk ids are not accepted"),
        ({"quote": "x"}, "row 'q1': evidence[0] needs a 'source' (document path)."),
        ({"source": "a.html", "page": 0}, "row 'q1': evidence[0].page must be a positive integer or null."),
        (
            {"source": "a.html", "page": True},
            "row 'q1': evidence[0].page must be a positive integer or null.",
        ),
        ({"source": "a.html", "quote": "  "}, "row 'q1': evidence[0].quote must be non-empty text or null."),
    ],
)
def test_a_malformed_evidence_item_is_refused_by_row_and_index(item: Any, message: str) -> None:
    with pytest.raises(GoldenFormatError) as raised:
        validate_row({**ROW, "evidence": [item]})
    assert str(raised.value).startswith(message)


def test_good_evidence_items_keep_source_page_and_quote_only() -> None:
    row = validate_row(
        {**ROW, "evidence": [{"source": "a.html", "quote": "q", "note": "x"}, {"source": "b.pdf", "page": 3}]}
    )
    assert row["evidence"] == [
        {"source": "a.html", "page": None, "quote": "q"},
        {"source": "b.pdf", "page": 3, "quote": None},
    ]
