"""Semantic chunking for documents without structure: cuts where the topic shifts."""

from __future__ import annotations

import dataclasses
import itertools
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from citeline.chunking import GAP_SIMILARITIES, Chunker, ChunkingOptions, has_structure
from citeline.chunking.topic_cuts import lexical_gap_similarities, semantic_cuts, vector_gap_similarities
from citeline.embedding import make_embedder
from citeline.embedding.base import Embedder
from citeline.errors import ConfigError
from citeline.ingest.formats.markdown import MarkdownParser
from citeline.ingest.formats.text import TextParser
from citeline.settings import load_settings

BREAD = [
    "Sourdough bread rises with a starter of wild yeast and lactic acid bacteria.",
    "The starter is fed flour and water every day to keep the yeast active.",
    "A long cold proof in the refrigerator deepens the sour flavour of the loaf.",
    "Bakers score the dough with a blade so the crust opens evenly in the oven.",
    "Steam during the first minutes of baking keeps the crust soft while the loaf expands.",
]
TELESCOPE = [
    "A refracting telescope gathers starlight with a large objective lens.",
    "The focal length of the lens divided by the eyepiece focal length gives the magnification.",
    "Astronomers mount telescopes on equatorial mounts that follow the rotation of the sky.",
    "Light pollution from cities washes out faint galaxies and nebulae.",
    "Dark sites far from towns reveal the Milky Way to the naked eye.",
]


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return make_embedder("minilm-int8")


def test_cuts_at_the_lowest_similarity_when_both_sides_are_long_enough() -> None:
    sims = [0.9, 0.2, 0.8, 0.85, 0.1, 0.9]
    assert semantic_cuts(sims, [30] * 7, budget=1000, threshold=0.3, min_tokens=48) == [2, 5]
    # min_tokens keeps a cut from leaving a one-sentence scrap at the end
    scrap = [0.9, 0.2, 0.8, 0.85, 0.9, 0.1]
    assert semantic_cuts(scrap, [30] * 7, budget=1000, threshold=0.3, min_tokens=48) == [2]
    assert semantic_cuts([], [10], budget=5, threshold=0.5, min_tokens=1) == []


def test_segments_over_budget_are_cut_at_their_least_similar_gap() -> None:
    sims = [0.9, 0.9, 0.4, 0.9, 0.9]
    assert semantic_cuts(sims, [40] * 6, budget=150, threshold=0.0, min_tokens=10) == [3]
    cuts = semantic_cuts([0.9] * 9, [30] * 10, budget=100, threshold=0.0, min_tokens=48)
    bounds = [0, *cuts, 10]
    assert all((hi - lo) * 30 <= 100 for lo, hi in itertools.pairwise(bounds))


def test_thousands_of_equal_gaps_do_not_hit_the_recursion_limit() -> None:
    n = 5000
    cuts = semantic_cuts([0.5] * (n - 1), [20] * n, budget=200, threshold=0.0, min_tokens=40)
    bounds = [0, *cuts, n]
    assert all(0 < (hi - lo) * 20 <= 200 for lo, hi in itertools.pairwise(bounds))


E1, E2 = [1.0, 0.0], [0.0, 1.0]


@pytest.mark.parametrize(
    ("vectors", "expected"),
    [
        ([E1], []),  # one sentence: no gap
        ([E1, E1], [1.0]),
        ([E1, E2], [0.0]),
        # gap 1: piece 0 alone vs pieces 1+2; gap 2: pieces 0+1 vs 2+3; gap 3: 1+2 vs 3 alone
        ([E1, E1, E2, E2], [0.5**0.5, 0.0, 0.5**0.5]),
        ([E1, [-1.0, 0.0]], [-1.0]),
        ([E1, [0.0, 0.0]], [0.0]),  # a zero vector compares as 0, not NaN
        ([E1, E1, E1], [1.0, 1.0]),
    ],
)
def test_vector_gap_similarities(vectors: list[list[float]], expected: list[float]) -> None:
    got = vector_gap_similarities(np.asarray(vectors, dtype=np.float32).reshape(len(vectors), 2))
    assert got == pytest.approx(expected, abs=1e-6)


@pytest.mark.parametrize(
    ("paragraphs", "expected"),
    [
        ([["one sentence"]], [[]]),
        ([[]], [[]]),
        # words in every sentence weigh nothing: no shared weighted word, similarity 0
        ([["the cat sat", "the dog ran"]], [[0.0]]),
        ([["alpha beta", "gamma delta"], ["alpha beta"]], [[0.0], []]),
        # the same rare words on both sides: 1
        ([["alpha beta", "alpha beta"], ["gamma"]], [[1.0], []]),
        # case and punctuation do not matter, one-letter words are not words
        ([["Yeast, FLOUR!", "yeast flour a"], ["stars"]], [[1.0], []]),
        # one word of two shared: idf log(7/3) for "red" (2 of 6 sentences), log(7/2) for the others
        (
            [["red blue", "red green"], ["x", "y", "z", "w"]],
            [[math.log(7 / 3) ** 2 / (math.log(7 / 3) ** 2 + math.log(7 / 2) ** 2)], [0.0, 0.0, 0.0]],
        ),
        # sides of two sentences: gap 1 is piece 0 vs pieces 1-2, gap 2 pieces 0-1 vs piece 2
        (
            [["red", "red", "blue"], ["x", "y"]],
            [[math.log(2) / math.hypot(math.log(2), math.log(3)), 0.0], [0.0]],
        ),
    ],
)
def test_lexical_gap_similarities(paragraphs: list[list[str]], expected: list[list[float]]) -> None:
    got = lexical_gap_similarities(paragraphs)
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        assert g == pytest.approx(e, abs=1e-9)


def chunk_text(source: str, embedder: Embedder, mode: str, similarity: str | None = None) -> tuple[str, list]:  # type: ignore[type-arg]
    doc = TextParser().parse(source.encode(), Path("notes.txt"))
    assert not has_structure(doc)
    options = ChunkingOptions(
        max_tokens=embedder.max_tokens,
        target_tokens=200,
        unstructured=mode,  # type: ignore[arg-type]
        similarity=similarity,  # type: ignore[arg-type]
    )
    return doc.text, Chunker(embedder.count_tokens, options, embed=embedder.embed).chunk(doc, "d" * 24)


@pytest.mark.parametrize("similarity", [s for s in GAP_SIMILARITIES if s != "lexical"])
def test_a_flat_text_is_cut_where_the_topic_changes(embedder: Embedder, similarity: str) -> None:
    source = " ".join(BREAD + TELESCOPE)  # one paragraph, no headings: nothing to go on but meaning
    text, chunks = chunk_text(source, embedder, "semantic", similarity)
    boundary = text.index(TELESCOPE[0])
    assert [c.start for c in chunks] == [0, boundary]
    for c in chunks:
        assert text[c.start : c.end] == c.text
    # sentence windows over the same text mix both topics into one chunk
    _, windows = chunk_text(source, embedder, "windows")
    assert any(c.start < boundary < c.end for c in windows)


# Two topics whose sentences share their topic's words, as a longer text's do.
KILNS = [
    "A pottery kiln fires clay at temperatures above a thousand degrees.",
    "The kiln is loaded with clay pots dried for a week so that no water is left in the clay.",
    "Glazes melt in the kiln and turn the clay surface into glass.",
    "A gas kiln lets the potter starve the flame of oxygen, which changes the colour of glazes.",
    "Cooling the kiln slowly keeps the fired clay pots from cracking.",
    "Potters test glazes on small clay tiles before firing a full kiln.",
]
BEES = [
    "Honey bees live in colonies of thousands of worker bees and one queen.",
    "Worker bees collect nectar from flowers and turn the nectar into honey in the hive.",
    "The queen lays eggs in wax cells that worker bees build in the hive.",
    "Beekeepers smoke the hive gently so the bees stay calm while the honey is taken.",
    "In winter the bees cluster around the queen and live on the honey stored in the hive.",
    "A strong colony of bees can make more honey than the hive needs.",
]


@pytest.mark.parametrize("mode", ["lexical", "semantic"])
def test_two_unrelated_topics_are_cut_where_one_ends(embedder: Embedder, mode: str) -> None:
    source = " ".join(KILNS + BEES)
    text, chunks = chunk_text(source, embedder, mode)
    assert [c.start for c in chunks] == [0, text.index(BEES[0])]
    assert [text[c.start : c.end] for c in chunks] == [c.text for c in chunks]
    assert chunks[-1].end == len(text.rstrip())


def test_lexical_chunking_needs_no_embedder_and_keeps_exact_spans(embedder: Embedder) -> None:
    # the default for flat text: no embed function, every chunk an exact span of the text
    assert ChunkingOptions().unstructured == "lexical"
    doc = TextParser().parse(
        ("\n\n".join([" ".join(KILNS + BEES)] * 3 + [" ".join(BREAD)])).encode(), Path("a.txt")
    )
    chunks = Chunker(embedder.count_tokens, ChunkingOptions(max_tokens=embedder.max_tokens)).chunk(
        doc, "d" * 24
    )
    assert len(chunks) >= 7
    for c in chunks:
        assert doc.text[c.start : c.end] == c.text
        assert c.token_count <= 200
    bees = [c for c in chunks if c.start == doc.text.index(BEES[0])]
    assert bees


def test_lexical_ties_do_not_cut_a_text_whose_sentences_share_no_words(embedder: Embedder) -> None:
    # every gap scores 0.0: no topic to find, so only the budget cuts (halving what is over it),
    # not every gap where both sides keep semantic_min_tokens (48: chunks of 52 tokens)
    source = " ".join(f"Entry{i} recorded value{i} at station{i}." for i in range(80))
    text, chunks = chunk_text(source, embedder, "lexical")
    assert all(100 <= c.token_count <= 200 for c in chunks)
    assert [text[c.start : c.end] for c in chunks] == [c.text for c in chunks]


SENTENCE = st.one_of(
    st.sampled_from(KILNS + BEES + BREAD + TELESCOPE + ["Ünïcödé 😀 text.", "x", "1 2 3.", "?!"]),
    st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1, max_size=300),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.lists(SENTENCE, min_size=1, max_size=30), min_size=1, max_size=4))
def test_lexical_chunks_are_exact_spans_within_the_embedders_limit(
    embedder: Embedder, paragraphs: list[list[str]]
) -> None:
    source = "\n\n".join(" ".join(p) for p in paragraphs)
    try:
        doc = TextParser().parse(source.encode(), Path("flat.txt"))
    except Exception as exc:  # empty or binary-looking input is refused with a reason
        assert "text" in str(exc) or "binary" in str(exc)
        return
    options = ChunkingOptions(max_tokens=embedder.max_tokens, target_tokens=64, unstructured="lexical")
    chunks = Chunker(embedder.count_tokens, options).chunk(doc, "x" * 24)
    for c in chunks:
        assert doc.text[c.start : c.end] == c.text
        assert c.token_count <= embedder.max_tokens
    assert [c.start for c in chunks] == sorted(c.start for c in chunks)


def test_headings_or_a_structured_format_keep_structure_first_chunking(embedder: Embedder) -> None:
    flat = " ".join(BREAD + TELESCOPE)
    options = ChunkingOptions(max_tokens=embedder.max_tokens, unstructured="semantic")
    semantic = Chunker(embedder.count_tokens, options, embed=embedder.embed)
    windows = Chunker(
        embedder.count_tokens, ChunkingOptions(max_tokens=embedder.max_tokens, unstructured="windows")
    )
    headed = MarkdownParser().parse(f"# Notes\n\n{flat}\n".encode(), Path("notes.md"))
    assert has_structure(headed)
    plain_md = MarkdownParser().parse(f"{flat}\n".encode(), Path("notes.md"))
    assert not has_structure(plain_md)
    # a text file with headings (as a parser could report them) and a Markdown file without any
    for doc in (dataclasses.replace(headed, format="text"), plain_md):
        got = [(c.start, c.end) for c in semantic.chunk(doc, "d" * 24)]
        assert got == [(c.start, c.end) for c in windows.chunk(doc, "d" * 24)]


def test_semantic_mode_needs_an_embed_function_and_a_known_name(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="embed"):
        Chunker(lambda texts: [1] * len(texts), ChunkingOptions(unstructured="semantic"))
    with pytest.raises(ValueError, match="embed"):
        Chunker(
            lambda texts: [1] * len(texts), ChunkingOptions(unstructured="lexical", similarity="sentences")
        )
    Chunker(lambda texts: [1] * len(texts), ChunkingOptions(unstructured="lexical"))  # words only
    with pytest.raises(ValueError, match="unstructured"):
        ChunkingOptions(unstructured="topics")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="similarity"):
        ChunkingOptions(similarity="meaning")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="chunk_unstructured"):
        load_settings(tmp_path, chunk_unstructured="topics")


def test_the_default_flat_text_mode_changes_the_signature_so_old_chunks_are_redone() -> None:
    from citeline.ingest.pipeline import pipeline_signature
    from citeline.settings import Settings

    assert pipeline_signature(Settings()).endswith(":lexical")
    # an index that chose semantic (or windows) explicitly keeps its chunks: that path is unchanged
    assert pipeline_signature(Settings(chunk_unstructured="semantic")).endswith(":semantic")
