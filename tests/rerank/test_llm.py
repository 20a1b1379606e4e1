"""LLM reranker at unit level: the model is an external boundary, so a deterministic fake stands in."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from citeline.build_context import StaticContext
from citeline.errors import ConfigError
from citeline.registry import registry
from citeline.rerank.llm import LlmReranker, build_prompt, parse_ranking

from ._hits import make_hit


def test_parse_ranking_is_lenient() -> None:
    assert parse_ranking("[3] > [1] > [2]", 3) == [2, 0, 1]
    assert parse_ranking("Ranking: 2, 2, 9, 1", 3) == [1, 0]  # repeats and out-of-range numbers dropped
    assert parse_ranking("I cannot rank these.", 3) == []


def test_prompt_numbers_passages_and_truncates() -> None:
    prompt = build_prompt("what  is\nX?", ["first passage", "second " * 500], max_chars=50)
    assert "Query: what is X?" in prompt
    assert "[1] first passage" in prompt
    assert len(prompt.split("[2] ")[1].split("\n")[0]) <= 50


def test_reranks_by_the_model_answer_and_keeps_the_rest_in_order() -> None:
    prompts: list[str] = []

    class Fake:
        name = "fake"

        def complete(self, messages: Sequence[Mapping[str, str]], max_tokens: int = 256) -> str:
            prompts.append(messages[-1]["content"])
            return "[3] > [1]"  # names two of four passages

    reranker = registry.create("reranker", "llm", StaticContext(chat_model_=Fake()))
    assert isinstance(reranker, LlmReranker)
    reranker.max_passages = 4
    hits = [make_hit(i, f"passage {i}") for i in range(1, 6)]
    out = reranker.rerank("q", hits)
    assert [h.chunk.id for h in out] == ["c3", "c1", "c2", "c4", "c5"]  # c5 was past max_passages
    assert [h.stages["rerank"].rank for h in out] == [1, 2, 3, 4, 5]
    assert len(prompts) == 1 and "[4] passage 4" in prompts[0] and "passage 5" not in prompts[0]


def test_unusable_answer_keeps_order() -> None:
    class Clueless:
        name = "clueless"

        def complete(self, messages: Sequence[Mapping[str, str]], max_tokens: int = 256) -> str:
            return "no idea"

    reranker = LlmReranker(Clueless())
    hits = [make_hit(i, f"p{i}") for i in (1, 2, 3)]
    assert [h.chunk.id for h in reranker.rerank("q", hits)] == ["c1", "c2", "c3"]
    assert reranker.rerank("q", []) == []


def test_needs_a_model() -> None:
    with pytest.raises(ConfigError, match="chat model"):
        registry.create("reranker", "llm", StaticContext())
