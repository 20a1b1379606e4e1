"""Semantic chunking for documents without structure: cuts where the topic shifts."""

from __future__ import annotations

import dataclasses
import itertools
from pathlib import Path

import pytest

from citeline.chunking import Chunker, ChunkingOptions, has_structure, semantic_cuts
from citeline.embedding import make_embedder
from citeline.embedding.base import Embedder
from citeline.errors import ConfigError
from citeline.ingest.markdown import MarkdownParser
from citeline.ingest.text import TextParser
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


def chunk_text(source: str, embedder: Embedder, mode: str) -> tuple[str, list]:  # type: ignore[type-arg]
    doc = TextParser().parse(source.encode(), Path("notes.txt"))
    assert not has_structure(doc)
    options = ChunkingOptions(max_tokens=embedder.max_tokens, target_tokens=200, unstructured=mode)  # type: ignore[arg-type]
    return doc.text, Chunker(embedder.count_tokens, options, embed=embedder.embed).chunk(doc, "d" * 24)


def test_a_flat_text_is_cut_where_the_topic_changes(embedder: Embedder) -> None:
    source = " ".join(BREAD + TELESCOPE)  # one paragraph, no headings: nothing to go on but meaning
    text, chunks = chunk_text(source, embedder, "semantic")
    boundary = text.index(TELESCOPE[0])
    assert [c.start for c in chunks] == [0, boundary]
    for c in chunks:
        assert text[c.start : c.end] == c.text
    # sentence windows over the same text mix both topics into one chunk
    _, windows = chunk_text(source, embedder, "windows")
    assert any(c.start < boundary < c.end for c in windows)


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
    with pytest.raises(ValueError, match="unstructured"):
        ChunkingOptions(unstructured="topics")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="chunk_unstructured"):
        load_settings(tmp_path, chunk_unstructured="topics")
