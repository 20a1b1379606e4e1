"""Structure-first chunking: exact spans, headings as context, tables and code kept whole."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from citeline.chunking import Chunker, ChunkingOptions, context_prefix
from citeline.chunking.chunker import DEFAULT_TARGET_TOKENS
from citeline.embedding import make_embedder
from citeline.embedding.base import Embedder
from citeline.ingest.formats.markdown import MarkdownParser
from citeline.ingest.formats.text import TextParser
from citeline.types import Chunk


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return make_embedder("minilm-int8")


def chunk_md(
    source: str, embedder: Embedder, target_tokens: int = DEFAULT_TARGET_TOKENS
) -> tuple[str, list[Chunk]]:
    doc = MarkdownParser().parse(source.encode(), Path("doc.md"))
    options = ChunkingOptions(
        target_tokens=target_tokens, max_tokens=embedder.max_tokens, unstructured="windows"
    )
    chunker = Chunker(embedder.count_tokens, options)
    return doc.text, chunker.chunk(doc, "d" * 24)


def test_prefix_is_title_and_trail_without_repeating_title() -> None:
    assert context_prefix("Guide", ("Guide", "Setup", "Linux")) == "Guide > Setup > Linux"
    assert context_prefix("Guide", ("Other",)) == "Guide > Other"
    assert context_prefix("", ()) == ""


def test_sections_become_chunks_with_trails(embedder: Embedder) -> None:
    text, chunks = chunk_md("# Guide\n\nIntro.\n\n## Setup\n\nRun it.\n\n### Linux\n\nUse apt.\n", embedder)
    assert [c.heading_trail for c in chunks] == [("Guide",), ("Guide", "Setup"), ("Guide", "Setup", "Linux")]
    assert chunks[2].index_text == "Guide > Setup > Linux\n\nUse apt."
    for c in chunks:
        assert text[c.start : c.end] == c.text


def test_long_paragraph_becomes_overlapping_sentence_windows(embedder: Embedder) -> None:
    sentences = [
        f"Sentence {i} describes the replication engine and its checkpoint store." for i in range(60)
    ]
    text, chunks = chunk_md("# T\n\n" + " ".join(sentences) + "\n", embedder)
    assert len(chunks) >= 4
    for a, b in itertools.pairwise(chunks):
        assert b.start < a.end  # sentence-aligned overlap
        assert text[b.start : b.start + 9] == "Sentence "  # windows start on a sentence
        assert a.text.endswith(".")  # and never end mid-sentence
    counts = embedder.count_tokens([c.index_text for c in chunks])
    assert max(counts) <= 205


def test_table_under_the_maximum_stays_whole(embedder: Embedder) -> None:
    rows = "\n".join(f"| opt.{i} | {i} | meaning {i} |" for i in range(18))
    _, chunks = chunk_md(
        f"# T\n\n| name | default | meaning |\n|---|---|---|\n{rows}\n", embedder, target_tokens=120
    )
    tables = [c for c in chunks if c.kind == "table"]
    assert len(tables) == 1 and "opt.0" in tables[0].text and "opt.17" in tables[0].text


def test_table_over_the_maximum_repeats_its_header(embedder: Embedder) -> None:
    rows = "\n".join(
        f"| option.number_{i} | {i * 7} | what option {i} controls in detail |" for i in range(80)
    )
    text, chunks = chunk_md(f"# T\n\n| name | default | meaning |\n|---|---|---|\n{rows}\n", embedder)
    assert len(chunks) > 2
    for c in chunks:
        assert "| name | default | meaning |" in c.index_text
        assert text[c.start : c.end] == c.text
    assert max(embedder.count_tokens([c.index_text for c in chunks])) <= embedder.max_tokens
    covered = "".join(c.text for c in chunks)
    assert all(f"option.number_{i} " in covered for i in range(80))


def test_code_block_kept_whole(embedder: Embedder) -> None:
    code = "```python\n" + "\n".join(f"x{i} = compute({i})" for i in range(20)) + "\n```"
    _, chunks = chunk_md(f"# T\n\nBefore.\n\n{code}\n\nAfter.\n", embedder, target_tokens=60)
    whole = [c for c in chunks if "x0 = compute(0)" in c.text]
    assert len(whole) == 1 and "x19 = compute(19)" in whole[0].text


def test_one_giant_sentence_is_split_without_truncation(embedder: Embedder) -> None:
    _, chunks = chunk_md("# T\n\n" + " ".join(["word"] * 3000) + "\n", embedder)
    assert len(chunks) > 10
    assert max(embedder.count_tokens([c.index_text for c in chunks])) <= embedder.max_tokens
    assert sum(c.text.count("word") for c in chunks) >= 3000


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(
        st.one_of(
            st.text(
                alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1, max_size=400
            ),
            st.sampled_from(
                [
                    "# Heading",
                    "## Sub heading",
                    "| a | b |\n|---|---|\n| 1 | 2 |",
                    "```\ncode\n```",
                    "- item one\n- item two",
                    "Ünïcödé 😀 text. Second sentence!",
                ]
            ),
        ),
        min_size=1,
        max_size=12,
    )
)
def test_spans_always_index_back_into_the_stored_text(embedder: Embedder, parts: list[str]) -> None:
    source = "\n\n".join(parts)
    for parser, name in ((MarkdownParser(), "d.md"), (TextParser(), "d.txt")):
        try:
            doc = parser.parse(source.encode("utf-8"), Path(name))
        except Exception as exc:  # empty or binary-looking input is refused with a reason
            assert "text" in str(exc) or "binary" in str(exc)
            continue
        for block in doc.blocks:
            assert doc.text[block.start : block.end].strip() == doc.text[block.start : block.end]
        chunker = Chunker(
            embedder.count_tokens,
            ChunkingOptions(target_tokens=64, max_tokens=embedder.max_tokens, unstructured="windows"),
        )
        for chunk in chunker.chunk(doc, "x" * 24):
            assert doc.text[chunk.start : chunk.end] == chunk.text
            assert chunk.token_count <= embedder.max_tokens
