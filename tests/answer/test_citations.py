from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from citeline.answer.citations import (
    StreamingCitationFilter,
    filter_citations,
    parse_citations,
    split_cited_sentences,
    strip_citations,
)

# ----------------------------------------------------------------------------- parse_citations


@pytest.mark.parametrize(
    ("text", "numbers"),
    [
        ("a [1] b", [(1,)]),
        ("a [1, 3] b", [(1, 3)]),
        ("a [1,2] b", [(1, 2)]),
        ("a [ 1 ,2 ] b", [(1, 2)]),
        ("a [2-4] b", [(2, 3, 4)]),
        ("a [2–4] b", [(2, 3, 4)]),
        ("a [4-2] b", [(2, 3, 4)]),
        ("a [1, 3-4] b", [(1, 3, 4)]),
        ("a ［1］ b", [(1,)]),
        ("a 【1】 b", [(1,)]),
        ("a 【１，２】 b", [(1, 2)]),
        ("a [1][2] b", [(1,), (2,)]),
        ("a [1; 2] b", [(1, 2)]),
        ("a [1 2] b", [(1, 2)]),
        ("a [1, 1] b", [(1,)]),
        ("a [2023] b", []),
        ("a [note] b [1a] [] [,] [1,] [-2]", []),
        ("[1-500]", [(1, 500)]),
    ],
)
def test_parse_citations_forms(text: str, numbers: list[tuple[int, ...]]) -> None:
    assert [m.numbers for m in parse_citations(text)] == numbers


def test_parse_citations_spans_cover_the_marker() -> None:
    text = "Claim [1, 3] and 【2】."
    markers = parse_citations(text)
    assert [text[a:b] for (a, b), _ in markers] == ["[1, 3]", "【2】"]


# ----------------------------------------------------------------------------- split


def test_marker_before_and_after_final_punctuation_cite_the_same_sentence() -> None:
    before, inv1 = split_cited_sentences("The sky is blue [1]. Grass is green [2].", 2)
    after, inv2 = split_cited_sentences("The sky is blue. [1] Grass is green. [2]", 2)
    assert [(s.text, s.citations) for s in before] == [
        ("The sky is blue.", (1,)),
        ("Grass is green.", (2,)),
    ]
    assert before == after
    assert inv1 == inv2 == []


def test_uncited_sentence_has_empty_citations() -> None:
    sentences, invented = split_cited_sentences("First claim [1]. Second claim without a source.", 3)
    assert sentences[1].text == "Second claim without a source."
    assert sentences[1].citations == ()
    assert invented == []


def test_invented_numbers_are_dropped_and_recorded() -> None:
    sentences, invented = split_cited_sentences("Alpha [1, 7]. Beta [9][2]. Gamma [0].", 3)
    assert [s.citations for s in sentences] == [(1,), (2,), ()]
    assert invented == [7, 9, 0]
    assert all("[" not in s.text for s in sentences)


def test_ranges_and_adjacent_markers_merge_per_sentence() -> None:
    sentences, invented = split_cited_sentences("Claim [2–4][1]. Other［3］.", 3)
    assert [s.citations for s in sentences] == [(2, 3, 1), (3,)]
    assert invented == [4]


def test_markers_on_their_own_line_cite_the_previous_sentence() -> None:
    sentences, _ = split_cited_sentences("Claim one.\n[1][2]\n\n- Item two [3]\n- Item three", 3)
    assert [(s.text, s.citations) for s in sentences] == [
        ("Claim one.", (1, 2)),
        ("- Item two", (3,)),
        ("- Item three", ()),
    ]


def test_leading_marker_cites_first_sentence_and_lone_markers_are_dropped() -> None:
    sentences, _ = split_cited_sentences("[2] Claim first.", 2)
    assert [(s.text, s.citations) for s in sentences] == [("Claim first.", (2,))]
    assert split_cited_sentences("[1]", 2) == ([], [])
    assert split_cited_sentences("", 2) == ([], [])
    assert split_cited_sentences("  \n ", 2) == ([], [])


def test_unicode_text_keeps_offsets_right() -> None:
    sentences, _ = split_cited_sentences("Größe: 5 m² [1]. 中文句子【2】。", 2)
    assert [(s.text, s.citations) for s in sentences] == [("Größe: 5 m².", (1,)), ("中文句子。", (2,))]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["Alpha beta", "Gamma", "x y z", "Delta 2023", "e.g. this"]),
            st.lists(st.integers(min_value=0, max_value=12), max_size=3),
            st.sampled_from([".", "!", ""]),
            st.booleans(),
        ),
        max_size=6,
    ),
    st.integers(min_value=1, max_value=6),
)
def test_invented_numbers_never_survive(parts: list[tuple[str, list[int], str, bool]], n: int) -> None:
    pieces = []
    cited: set[int] = set()
    for words, nums, punct, after in parts:
        marker = "".join(f"[{x}]" for x in nums)
        cited.update(nums)
        pieces.append(f"{words}{punct} {marker}" if after else f"{words} {marker}{punct}")
    sentences, invented = split_cited_sentences(" ".join(pieces), n)
    for s in sentences:
        assert all(1 <= x <= n for x in s.citations)
        assert len(set(s.citations)) == len(s.citations)
        assert not parse_citations(s.text)
    assert set(invented) == {x for x in cited if not 1 <= x <= n}


# ----------------------------------------------------------------------------- filtering


def test_filter_rewrites_markers_and_drops_invalid_numbers() -> None:
    text = "A [1, 9]. B [9]. C [2-3]. D 【1】 E [2023]."
    invented: list[int] = []
    assert filter_citations(text, 2, invented) == "A [1]. B. C [2]. D [1] E [2023]."
    assert invented == [9, 3]
    assert strip_citations("A [1]. B [2, 3].") == "A. B."


def test_streaming_never_emits_half_a_marker() -> None:
    f = StreamingCitationFilter(20)
    assert f.feed("Claim") == "Claim"
    assert f.feed(" [1") == ""
    assert f.feed("2") == ""
    assert f.feed("]") == " [12]"
    assert f.feed(" and [") == " and"
    assert f.feed("x") == " [x"
    assert f.feed(" more [9") == " more"
    assert f.feed("9]") == ""  # 99 is not a source: the marker and its space go
    assert f.feed(".") == "."
    assert f.flush() == ""
    assert f.invented == [99]


def test_streaming_flush_releases_an_unclosed_bracket() -> None:
    f = StreamingCitationFilter(3)
    assert f.feed("see [1, 2") == "see"
    assert f.flush() == " [1, 2"


_ALPHABET = "ab .,\n\t[]［］【】-–0123456789"


@settings(max_examples=400, deadline=None)
@given(
    st.text(alphabet=_ALPHABET, max_size=80),
    st.lists(st.integers(min_value=0, max_value=80), max_size=12),
    st.integers(min_value=0, max_value=12),
)
def test_streamed_output_equals_filtered_output_for_any_split(text: str, cuts: list[int], n: int) -> None:
    bounds = sorted({0, len(text), *(c for c in cuts if c <= len(text))})
    chunks = [text[a:b] for a, b in itertools.pairwise(bounds)]
    expected_invented: list[int] = []
    expected = filter_citations(text, n, expected_invented)
    f = StreamingCitationFilter(n)
    out = ""
    for chunk in chunks:
        out += f.feed(chunk)
        # what was emitted is final: it never has to be taken back
        assert expected.startswith(out)
    out += f.flush()
    assert out == expected
    assert f.invented == expected_invented


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet=_ALPHABET, max_size=60), st.integers(min_value=0, max_value=5))
def test_character_by_character_streaming_matches(text: str, n: int) -> None:
    f = StreamingCitationFilter(n)
    assert "".join(f.feed(c) for c in text) + f.flush() == filter_citations(text, n)


_TOKENS = [
    "[",
    "]",
    "1",
    "3",
    "12",
    "123",
    "4567",
    ", ",
    ",",
    "-",
    "–",
    " ",
    "   ",
    "word",
    "【",
    "】",
    "\n",
    ".",
]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(_TOKENS), max_size=40),
    st.lists(st.integers(min_value=0, max_value=40), max_size=10),
    st.integers(min_value=0, max_value=13),
)
def test_marker_dense_streams_match(tokens: list[str], cuts: list[int], n: int) -> None:
    text = "".join(tokens)
    bounds = sorted({0, len(text), *(c for c in cuts if c <= len(text))})
    f = StreamingCitationFilter(n)
    out = "".join(f.feed(text[a:b]) for a, b in itertools.pairwise(bounds)) + f.flush()
    assert out == filter_citations(text, n)
