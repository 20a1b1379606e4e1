from __future__ import annotations

import codecs
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from citeline.errors import ParseError
from citeline.ingest.formats.html import HtmlParser
from citeline.ingest.registry import parser_for
from citeline.types import ParsedDocument

P = HtmlParser()


def _spans(doc: ParsedDocument) -> list[tuple[str, str, tuple[str, ...]]]:
    """Every block indexes back into the text exactly, stripped and non-empty."""
    out: list[tuple[str, str, tuple[str, ...]]] = []
    prev_end = 0
    for b in doc.blocks:
        piece = doc.text[b.start : b.end]
        assert piece and piece == piece.strip(), (b, piece)
        assert prev_end <= b.start < b.end <= len(doc.text)
        prev_end = b.end
        out.append((b.kind, piece, b.heading_trail))
    assert doc.text == "\n\n".join(p for _, p, _ in out)
    return out


PAGE = b"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Gateway Guide</title>
<meta name="author" content="Ann Example"><script>var x = "<p>not text</p>";</script>
<style>p { color: red }</style></head>
<body>
<header><a href="/">Site name</a></header>
<nav><ul><li>Home</li><li>Docs</li></ul></nav>
<div class="cookie-banner">We use cookies.</div>
<main>
  <h1>Gateway Guide</h1>
  <p>Intro   text with <b>bold</b>,
     a <a href="#x">link</a> and<br>a break.</p>
  <h2>Install</h2>
  <pre>
    pip install gateway
      --flag   kept
  </pre>
  <ul><li>one</li><li>two<ul><li>two a</li></ul></li></ul>
  <ol><li>first</li></ol>
  <h3>Ports</h3>
  Loose text <em>here</em>
  <table>
    <thead><tr><th>Port</th><th>Use</th></tr></thead>
    <tbody><tr><td>8080</td><td>HTTP | admin</td></tr><tr><td>9090</td><td>metrics</td></tr></tbody>
  </table>
  <aside>Related: other pages</aside>
  <div role="navigation">Prev | Next</div>
  <p hidden>hidden text</p>
  <h2>Upgrade</h2>
  <div>In a div</div>tail after div
</main>
<footer>Copyright 2024</footer>
</body></html>"""


def test_structure_trails_and_boilerplate() -> None:
    doc = P.parse(PAGE, Path("guide.html"))
    assert doc.title == "Gateway Guide"
    assert doc.format == "html"
    assert doc.metadata["author"] == "Ann Example"
    assert doc.metadata["lang"] == "en"
    assert _spans(doc) == [
        ("heading", "Gateway Guide", ()),  # the page title is not part of the trail
        ("paragraph", "Intro text with bold, a link and\na break.", ()),
        ("heading", "Install", ("Install",)),
        ("code", "pip install gateway\n  --flag   kept", ("Install",)),
        ("list", "- one\n- two\n  - two a", ("Install",)),
        ("list", "- first", ("Install",)),
        ("heading", "Ports", ("Install", "Ports")),
        ("paragraph", "Loose text here", ("Install", "Ports")),
        (
            "table",
            "| Port | Use |\n| --- | --- |\n| 8080 | HTTP \\| admin |\n| 9090 | metrics |",
            ("Install", "Ports"),
        ),
        ("heading", "Upgrade", ("Upgrade",)),
        ("paragraph", "In a div", ("Upgrade",)),
        ("paragraph", "tail after div", ("Upgrade",)),
    ]
    for junk in ("Site name", "Home", "cookies", "Related", "Prev", "hidden text", "Copyright", "not text"):
        assert junk not in doc.text


def test_registry_finds_html_parser() -> None:
    assert isinstance(parser_for(Path("a.htm")), HtmlParser)
    assert isinstance(parser_for(Path("a.HTML")), HtmlParser)


def test_article_preferred_and_title_fallbacks() -> None:
    html = b"""<html><body><div class="sidebar"><p>menu stuff</p></div>
    <div id="top-nav">links</div>
    <article><header><h1>Post Title</h1></header><p>Post body.</p><h2>Part</h2><p>More.</p>
    <footer>tags: a, b</footer></article>
    <p>Outside the article.</p></body></html>"""
    doc = P.parse(html, Path("post.html"))
    assert doc.title == "Post Title"  # no <title>: first h1
    assert _spans(doc) == [
        ("heading", "Post Title", ()),
        ("paragraph", "Post body.", ()),
        ("heading", "Part", ("Part",)),
        ("paragraph", "More.", ("Part",)),
    ]
    doc = P.parse(b"<html><body><p>Just a paragraph.</p></body></html>", Path("plain.htm"))
    assert doc.title == "plain"


def test_two_h1_are_both_in_trails() -> None:
    html = b"<html><body><h1>A</h1><p>x</p><h1>B</h1><h2>B1</h2><p>y</p></body></html>"
    doc = P.parse(html, Path("two.html"))
    assert doc.title == "A"
    assert _spans(doc) == [
        ("heading", "A", ("A",)),
        ("paragraph", "x", ("A",)),
        ("heading", "B", ("B",)),
        ("heading", "B1", ("B", "B1")),
        ("paragraph", "y", ("B", "B1")),
    ]


def test_layout_table_is_walked_not_rendered() -> None:
    html = b"""<html><body><table role="presentation"><tr><td><h2>Left</h2><p>Left text.</p></td>
    <td><p>Right text.</p></td></tr></table><table><tr><td>a</td></tr></table></body></html>"""
    doc = P.parse(html, Path("layout.html"))
    assert _spans(doc) == [
        ("heading", "Left", ("Left",)),
        ("paragraph", "Left text.", ("Left",)),
        ("paragraph", "Right text.", ("Left",)),
        ("table", "| a |", ("Left",)),  # no <th>: no header row
    ]


def test_a_header_rule_only_under_a_row_of_th_cells() -> None:
    from citeline.answer.units import passage_units

    html = b"""<html><body><h1>Directives</h1>
    <table><tr><th>Description:</th><td>Enables persistent connections</td></tr>
    <tr><th>Default:</th><td>KeepAlive On</td></tr></table>
    <table><tr><th>Name</th><th>Port</th></tr><tr><td>web</td><td>7443</td></tr></table></body></html>"""
    doc = P.parse(html, Path("directives.html"))
    tables = [doc.text[b.start : b.end] for b in doc.blocks if b.kind == "table"]
    assert "---" not in tables[0] and "| --- | --- |" in tables[1]
    rows = [u.text for t in tables for u in passage_units(t)]
    assert rows == [
        "Description: Enables persistent connections.",
        "Default: KeepAlive On.",
        "Name: web; Port: 7443.",
    ]


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"   \n ",
        b"<html><head><title>Only a head</title></head></html>",
        b"<!-- just a comment -->",
        b"<html><body><script>alert(1)</script><nav>menu</nav></body></html>",
    ],
)
def test_no_text_content(data: bytes) -> None:
    with pytest.raises(ParseError, match="no text content"):
        P.parse(data, Path("empty.html"))


def test_nested_ten_thousand_levels() -> None:
    depth = 10_000
    html = "<html><body>" + "<div>" * depth + "deep text" + "</div>" * depth + "<p>after</p></body></html>"
    doc = P.parse(html.encode(), Path("deep.html"))
    assert _spans(doc) == [("paragraph", "deep text", ()), ("paragraph", "after", ())]


def test_deeply_nested_lists_and_inline() -> None:
    depth = 5_000
    html = "<ul><li>" * depth + "x" + "</li></ul>" * depth + "<p>" + "<b>" * depth + "y" + "</b>" * depth
    doc = P.parse(html.encode(), Path("deep.html"))
    kinds = _spans(doc)
    assert kinds[-1] == ("paragraph", "y", ())
    assert "x" in doc.text


def test_latin1_with_meta_charset() -> None:
    html = '<html><head><meta charset="iso-8859-1"></head><body><p>Café déjà vu</p></body></html>'
    doc = P.parse(html.encode("latin-1"), Path("l1.html"))
    assert doc.text == "Café déjà vu"


def test_latin1_without_declaration_is_detected() -> None:
    html = (
        "<html><body><p>Les élèves étudient à l'école française depuis déjà très longtemps, "
        "et ils préfèrent ça.</p></body></html>"
    )
    doc = P.parse(html.encode("latin-1"), Path("l1.html"))
    assert doc.text.startswith("Les élèves étudient à l'école")


def test_http_equiv_windows_1252() -> None:
    html = (
        '<html><head><meta http-equiv="Content-Type" content="text/html; charset=windows-1252">'
        "</head><body><p>\u201cquoted\u201d \u2013 dash</p></body></html>"
    )
    doc = P.parse(html.encode("cp1252"), Path("w.html"))
    assert doc.text == "\u201cquoted\u201d \u2013 dash"


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be", "utf-8"])
def test_bom_decoding(encoding: str) -> None:
    bom = {"utf-16-le": codecs.BOM_UTF16_LE, "utf-16-be": codecs.BOM_UTF16_BE, "utf-8": codecs.BOM_UTF8}
    html = "<html><head><title>Ünïcode</title></head><body><p>Grüße — 日本語</p></body></html>"
    doc = P.parse(bom[encoding] + html.encode(encoding), Path("u.html"))
    assert doc.title == "Ünïcode"
    assert doc.text == "Grüße — 日本語"


def test_control_characters_and_nul_are_dropped() -> None:
    doc = P.parse(b"<p>a\x00b\x01c</p>", Path("c.html"))
    assert _spans(doc) == [("paragraph", "a b c", ())]


# Random HTML-ish documents: tags from a small vocabulary, random text (with whitespace,
# entities and markup characters), random nesting and unclosed tags.
_TAGS = ["p", "div", "span", "b", "h1", "h2", "h3", "ul", "ol", "li", "pre", "table", "tr", "td", "th"]
_TAGS += ["br", "nav", "script", "main", "article", "code", "a", "section", "blockquote", "dl", "dt"]
_text = st.text(alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00"), max_size=12)
_piece = st.one_of(
    _text,
    st.sampled_from(_TAGS).map(lambda t: f"<{t}>"),
    st.sampled_from(_TAGS).map(lambda t: f"</{t}>"),
    st.sampled_from(["&amp;", "&lt;", "&nbsp;", " ", "\n", "\t", "<br/>", "<!-- c -->", "&#x1F600;"]),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_piece, max_size=40))
def test_blocks_always_index_into_text(pieces: list[str]) -> None:
    data = "".join(pieces).encode("utf-8")
    try:
        doc = P.parse(data, Path("random.html"))
    except ParseError as exc:
        assert exc.reason == "no text content"
        return
    _spans(doc)
    for b in doc.blocks:
        if b.kind == "heading":
            assert b.heading_trail == () or b.heading_trail[-1] == doc.text[b.start : b.end]


def test_ids_are_anchors_but_chrome_classes_are_dropped() -> None:
    html = b"""<html><body><div class="sect1" id="plpython-sharing"><p>Shared data text.</p>
    <div class="post-share">Share on X</div><div id="sidebar">side</div></div></body></html>"""
    doc = P.parse(html, Path("anchors.html"))
    assert _spans(doc) == [("paragraph", "Shared data text.", ())]


def test_everything_looks_like_chrome_falls_back_to_keeping_it() -> None:
    doc = P.parse(b'<html><body><div class="menu"><p>Only text here.</p></div></body></html>', Path("m.html"))
    assert _spans(doc) == [("paragraph", "Only text here.", ())]


DEFINITIONS = (
    b"""<html><head><title>Parameters</title></head><body><h1>Parameters</h1>
<h2>main.cf</h2><p>Intro.</p>
<dl><dt><b>recipient_limit</b> (default: 1000)</dt><dd><p>The maximal number.</p><p>Lower it.</p></dd>
<dt>-v</dt><dt>--verbose</dt><dd>Talk more.</dd>
<dt>"""
    + b"a long term " * 12
    + b"""</dt><dd>Under main.cf again.</dd></dl>
<p>After the list.</p><h2>Next</h2><p>x</p></body></html>"""
)


def test_definition_terms_open_sections_that_end_with_their_list() -> None:
    """A <dt> stays a quotable paragraph and files its definition under it; several names for one
    definition share one entry; a term too long to be a name, and the text after </dl>, do not."""
    blocks = [(kind, text, trail) for kind, text, trail in _spans(P.parse(DEFINITIONS, Path("p.html")))]
    term = ("main.cf", "recipient_limit (default: 1000)")
    names = ("main.cf", "-v / --verbose")
    assert blocks[2:] == [
        ("paragraph", "Intro.", ("main.cf",)),
        ("paragraph", "recipient_limit (default: 1000)", term),
        ("paragraph", "The maximal number. Lower it.", term),
        ("paragraph", "-v", names),
        ("paragraph", "--verbose", names),
        ("paragraph", "Talk more.", names),
        ("paragraph", ("a long term " * 12).strip(), ("main.cf",)),
        ("paragraph", "Under main.cf again.", ("main.cf",)),
        ("paragraph", "After the list.", ("main.cf",)),
        ("heading", "Next", ("Next",)),
        ("paragraph", "x", ("Next",)),
    ]
