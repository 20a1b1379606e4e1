"""Raw HTML inside Markdown, read as a reader of the rendered page sees it (issue 35, "Parsers"):
comments are not indexed, HTML tables are tables. Real files through the whole pipeline."""

from __future__ import annotations

from pathlib import Path

import pytest

import citeline
from citeline.chunking import Chunker, ChunkingOptions
from citeline.embedding import make_embedder
from citeline.ingest.formats.markdown import MarkdownParser
from citeline.types import ParsedDocument
from conftest import ADMIN

API_PAGE = """\
# Widget API

## widget.spin(speed)
<!-- YAML
added: v2.1.0
changes:
  - version: v3.0.0
    pr-url: https://example.invalid/widget/pull/4711
    description: The speed is checked.
-->

Spins the widget at `speed` turns a minute. <!-- TODO: say what happens at 0 -->
The speed must be positive.
<!-- an editor's note between two paragraphs -->
A spinning widget cannot be painted.

## Limits

<table>
  <tr>
    <th>Model</th>
    <th>Top speed</th>
  </tr>

  <tr>
    <td>Widget S</td>
    <td>1,200 turns a minute</td>
  </tr>
  <tr><td>Widget <b>XL</b></td><td>800 turns a minute</td></tr>
</table>

<!-- <table><tr><td>commented out: never shown</td></tr></table> -->

```html
<!-- a comment inside code is code -->
<table><tr><td>code stays as written</td></tr></table>
```
"""


def parse(source: str, name: str = "api.md") -> ParsedDocument:
    return MarkdownParser().parse(source.encode("utf-8"), Path(name))


def texts(doc: ParsedDocument) -> list[tuple[str, str]]:
    return [(b.kind, doc.text[b.start : b.end]) for b in doc.blocks]


def test_html_comments_are_not_stored_but_comments_in_code_are() -> None:
    doc = parse(API_PAGE)
    outside_code = doc.text.split("```html")[0]
    for hidden in ("<!--", "pr-url", "added: v2.1.0", "TODO", "editor's note", "commented out"):
        assert hidden not in outside_code, hidden
    assert ("paragraph", "Spins the widget at `speed` turns a minute.\nThe speed must be positive.") in texts(
        doc
    )
    assert ("paragraph", "A spinning widget cannot be painted.") in texts(doc)
    code = [t for k, t in texts(doc) if k == "code"]
    assert code == [
        "```html\n<!-- a comment inside code is code -->\n"
        "<table><tr><td>code stays as written</td></tr></table>\n```"
    ]


def test_an_html_table_is_a_table_with_its_header_row() -> None:
    doc = parse(API_PAGE)
    tables = [(b, doc.text[b.start : b.end]) for b in doc.blocks if b.kind == "table"]
    assert [t for _, t in tables] == [
        "| Model | Top speed |\n| --- | --- |\n| Widget S | 1,200 turns a minute |\n| Widget XL | 800 turns a minute |"
    ]
    assert tables[0][0].heading_trail == ("Widget API", "Limits")
    assert "<t" not in doc.text.split("```html")[0]  # no tag of the table is left to split


def test_a_long_html_table_is_cut_between_rows_with_its_header() -> None:
    rows = "\n".join(
        f"<tr><td>part-{i:03d}</td><td>{'steel' if i % 2 else 'brass'} fitting for pipe {i}</td></tr>"
        for i in range(120)
    )
    doc = parse(f"# Parts\n\n<table>\n<tr><th>Part</th><th>What it is</th></tr>\n\n{rows}\n</table>\n")
    embedder = make_embedder("minilm-int8")
    chunker = Chunker(embedder.count_tokens, ChunkingOptions(max_tokens=embedder.max_tokens))
    chunks = chunker.chunk(doc, "d" * 24)
    assert len(chunks) > 3
    for c in chunks:
        assert c.kind == "table" and doc.text[c.start : c.end] == c.text
        assert c.index_text.startswith("Parts\n\n| Part | What it is |\n")  # the header, compact
        assert all(line.startswith("| ") and line.endswith(" |") for line in c.text.split("\n"))


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        # unterminated: the rest of its HTML block is the comment
        ("# T\n\nKept.\n\n<!-- never closed\nhidden\n", [("heading", "# T"), ("paragraph", "Kept.")]),
        ("# T <!-- note -->\n\nText.\n", [("heading", "# T"), ("paragraph", "Text.")]),
        ("# T\n\n- one <!-- x -->\n- two\n", [("heading", "# T"), ("list", "- one\n- two")]),
        (
            "# T\n\n<div>\n<!-- note -->\nShown.\n</div>\n",
            [("heading", "# T"), ("paragraph", "<div>\nShown.\n</div>")],
        ),
        # a table that is only markup gives nothing to index, and leaves nothing behind
        ("# T\n\n<table></table>\n\nText.\n", [("heading", "# T"), ("paragraph", "Text.")]),
        # never closed: the HTML block alone is read as the table
        (
            "# T\n\n<table><tr><td>a</td><td>b</td></tr>\n\nText.\n",
            [("heading", "# T"), ("table", "| a | b |"), ("paragraph", "Text.")],
        ),
    ],
)
def test_comment_and_table_edge_cases(source: str, expected: list[tuple[str, str]]) -> None:
    doc = parse(source)
    assert texts(doc) == expected
    assert doc.title == "T"


def test_a_file_of_comments_only_has_no_text() -> None:
    with pytest.raises(Exception, match="no text to index"):
        parse("# Title\n\n<!-- everything\nhere is a comment -->\n")


def test_answers_never_quote_a_comment(tmp_path: Path) -> None:
    (tmp_path / "api.md").write_text(API_PAGE, encoding="utf-8")
    kb = citeline.open(tmp_path / "index", embedder="hashing")
    try:
        assert not kb.add([tmp_path / "api.md"]).failed
        hits = kb.search("pr-url version description changes added", ADMIN, k=20)
        assert hits and all("pr-url" not in h.chunk.text for h in hits)
        assert all("<!--" not in h.chunk.text.split("```html")[0] for h in hits)
        table = kb.search("top speed of Widget XL", ADMIN, k=20)
        assert any("| Widget XL | 800 turns a minute |" in h.chunk.text for h in table)
    finally:
        kb.close()
