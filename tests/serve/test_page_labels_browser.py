"""The web page's source panel shows a PDF page's printed label beside its place in the file (issue
35, "Parsers"): a real server, Debian's Chromium through Playwright, a PDF numbered i, ii, 1, 2..."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import citeline
from citeline.access import create_key
from ingest.test_pdf_labels import handbook

from .live import serving
from .test_browser import Session, api_answer

QUESTION = "How often is the impeller of pump 2 checked?"


@pytest.fixture(scope="module")
def labelled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """(server URL, a reader's key) over an index of the labelled handbook."""
    base = tmp_path_factory.mktemp("labels")
    (base / "handbook.pdf").write_bytes(handbook())
    kb = citeline.open(base / "index")
    try:
        assert not kb.add([base / "handbook.pdf"], root=base).failed
        key, _ = create_key(kb.store, "dana", (), "reader")
        with serving(kb) as url:
            yield url, key
    finally:
        kb.close()


def test_the_source_panel_shows_the_printed_page(browser: Any, labelled: tuple[str, str]) -> None:
    url, key = labelled
    answer = api_answer(url, key, QUESTION)
    cite = next(c for c in answer["citations"] if "impeller" in c["quote"])
    assert (cite["page"], cite["page_label"]) == (3, "1")  # the API gives the label too
    s = Session(browser, url, key)
    s.ask(QUESTION)
    s.open_citation(cite["n"])
    assert s.page.text_content("#source-page") == "3 (printed page 1)"
    assert not s.problems, s.problems
    s.close()
