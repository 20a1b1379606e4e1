"""LLM query expansion: parsing the model's rewrites, the HyDE gate, and fusion of the extra lists."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

import citeline
from citeline.errors import ConfigError, ConvexWithExpansionError
from citeline.filters import Filter
from citeline.kb import KnowledgeBase
from citeline.retrieval.hybrid import HybridRetriever
from citeline.retrieval.rewrite import Expansion, QueryExpander, is_vague, parse_rewrites
from conftest import ADMIN


def test_rewrites_are_stripped_of_list_marks_deduplicated_and_capped() -> None:
    reply = (
        "Here are the queries:\n1. How do I rotate keys?\n- how do i rotate keys?\n"
        '2) "Key rotation schedule"\n\nWhat is the question?\n* Rotating encryption keys monthly\n'
    )
    assert parse_rewrites(reply, "What is the question?", 3) == [
        "How do I rotate keys?",
        "Key rotation schedule",
        "Rotating encryption keys monthly",
    ]
    assert parse_rewrites(reply, "x", 1) == ["How do I rotate keys?"]
    assert parse_rewrites("", "x", 3) == []


@pytest.mark.parametrize(
    ("question", "vague"),
    [
        ("How do I make it faster?", True),
        ("Why is replication slow?", True),
        ("What does error LDG-4012 mean?", False),  # an exact code: HyDE would drown it
        ("What is the default value of sync.batch_size?", False),
        ('Where is "the maintenance window" defined?', False),
        ("Which regions replicate encrypted replicas every five minutes with per region keys?", False),
        ("what is it?", False),  # nothing to expand
    ],
)
def test_hyde_is_gated_to_vague_questions(question: str, vague: bool) -> None:
    assert is_vague(question) is vague


class Recorder:
    """Stands in for the LLM (an external model, not a citeline component)."""

    def __init__(self, reply: str) -> None:
        self.reply = reply
        self.prompts: list[str] = []

    name = "recorder"

    def complete(self, messages: Sequence[Mapping[str, str]], max_tokens: int = 256) -> str:
        self.prompts.append(messages[-1]["content"])
        return self.reply


def test_expander_asks_for_rewrites_always_and_a_passage_only_when_vague() -> None:
    model = Recorder("Key rotation policy\nRotating encryption keys")
    precise = QueryExpander(model, "multi+hyde").expand("What does error LDG-4012 mean?")
    assert precise.queries == ("Key rotation policy", "Rotating encryption keys") and precise.passage == ""
    assert len(model.prompts) == 1
    vague = QueryExpander(model, "hyde").expand("How do I keep keys safe?")
    assert vague.queries == () and vague.passage == "Key rotation policy Rotating encryption keys"
    with pytest.raises(ConfigError, match="query_expansion"):
        QueryExpander(model, "everything")


def test_rewrites_reach_documents_the_question_misses(docs_dir: Path, kb: KnowledgeBase) -> None:
    kb.add([docs_dir])
    retriever = HybridRetriever(kb.store, kb.embedder)
    question = "Which component restarts every night?"
    plain = retriever.retrieve(question, Filter.admin(), k=3)
    expansion = Expansion(queries=("gamma service nightly restart 02:00 UTC",))
    expanded = retriever.retrieve(question, Filter.admin(), k=3, expansion=expansion)
    assert expanded.expansion == expansion
    assert expanded.hits[0].source.endswith("notes.txt")
    assert len({h.chunk.id for h in expanded.hits}) == len(expanded.hits)
    # the original lists are still there: their scores are recorded per stage
    assert [c for c, _ in expanded.lexical] == [c for c, _ in plain.lexical]


def test_expansion_needs_an_llm_generator(tmp_path: Path) -> None:
    kb = citeline.open(tmp_path / "index", query_expansion="multi")
    with pytest.raises(ConfigError, match="needs an LLM"):
        kb.retrieve("anything", ADMIN)
    kb.close()
    with pytest.raises(ConfigError, match="query_expansion"):
        citeline.open(tmp_path / "other", query_expansion="sometimes")


def test_convex_fusion_with_expansion_is_refused_naming_both_settings(tmp_path: Path) -> None:
    # Convex fusion weighs one BM25 list against one dense list: it cannot fuse expansion's lists,
    # and silently fusing them by RRF instead would hide that the setting does nothing.
    (tmp_path / "citeline.toml").write_text('fusion = "convex"\nquery_expansion = "multi"\n')
    with pytest.raises(ConvexWithExpansionError, match=r"fusion = rrf, or query_expansion = none") as caught:
        citeline.open(tmp_path)
    assert "citeline.toml" in str(caught.value)


def test_convex_fusion_asked_per_search_with_expansion_is_refused_before_the_llm(tmp_path: Path) -> None:
    kb = citeline.open(tmp_path / "index", query_expansion="multi")
    model = Recorder("a rewrite")
    kb.components._expander = QueryExpander(model, "multi")
    with pytest.raises(ConvexWithExpansionError, match="query_expansion = multi"):
        kb.search("Which component restarts every night?", ADMIN, fusion="convex")
    assert model.prompts == []
    kb.close()


def test_convex_fusion_with_an_empty_expansion_stays_convex(docs_dir: Path, kb: KnowledgeBase) -> None:
    kb.add([docs_dir])
    retriever = HybridRetriever(kb.store, kb.embedder)
    got = retriever.retrieve("nightly restart", Filter.admin(), k=3, fusion="convex", expansion=Expansion())
    plain = retriever.retrieve("nightly restart", Filter.admin(), k=3, fusion="convex")
    assert got.hits and [h.chunk.id for h in got.hits] == [h.chunk.id for h in plain.hits]
