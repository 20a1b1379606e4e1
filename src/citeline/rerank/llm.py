"""LLM as reranker (listwise): one prompt lists the passages, the model answers with their order.

The model is any ChatModel (citeline.chat), so every LLM generator backend can serve.
The answer is parsed leniently: passage numbers in the order they first appear ("[3] > [1]",
"3, 1, 2", one per line...). Passages the model leaves out keep their incoming order after the
ones it ranked; an answer with no usable number leaves the order unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from citeline.chat import ChatModel, user
from citeline.query.analysis import Query, analyze
from citeline.types import Hit, StageScore

if TYPE_CHECKING:
    from citeline.build_context import BuildContext

_NUMBER = re.compile(r"\d+")

PROMPT = """Rank the passages by how well they answer or support the query, most relevant first.
Answer with the passage numbers only, in order, separated by " > " (for example: [2] > [1] > [3]).

Query: {query}

{passages}

Ranking:"""


def build_prompt(query: str, passages: Sequence[str], max_chars: int = 800) -> str:
    listed = "\n\n".join(f"[{i}] {' '.join(p.split())[:max_chars]}" for i, p in enumerate(passages, 1))
    return PROMPT.format(query=" ".join(query.split()), passages=listed)


def parse_ranking(text: str, n: int) -> list[int]:
    """0-based passage indices in the order the answer names them (each once, 1..n only)."""
    seen: dict[int, None] = {}
    for match in _NUMBER.finditer(text):
        k = int(match.group(0))
        if 1 <= k <= n:
            seen.setdefault(k - 1, None)
    return list(seen)


class LlmReranker:
    def __init__(self, model: ChatModel, *, max_passages: int = 20, max_chars: int = 800, name: str = "llm"):
        self.model = model
        self.max_passages = max_passages
        self.max_chars = max_chars
        self.name = name

    def rerank(self, query: Query | str, hits: Sequence[Hit]) -> list[Hit]:
        head, tail = list(hits[: self.max_passages]), list(hits[self.max_passages :])
        if not head:
            return []
        prompt = build_prompt(analyze(query).text, [h.chunk.index_text for h in head], self.max_chars)
        answer = self.model.complete(user(prompt), max_tokens=8 * len(head))
        named = parse_ranking(answer, len(head))
        order = named + [i for i in range(len(head)) if i not in set(named)]
        out: list[Hit] = []
        for rank, i in enumerate([*order, *range(len(head), len(head) + len(tail))], 1):
            hit = head[i] if i < len(head) else tail[i - len(head)]
            score = 1.0 / rank
            out.append(replace(hit, score=score, stages={**hit.stages, "rerank": StageScore(score, rank)}))
        return out


def llm_reranker_factory(context: BuildContext | None, argument: str | None) -> LlmReranker:
    from citeline.errors import ConfigError

    if context is None:
        raise ConfigError("The 'llm' reranker needs a chat model: build it from settings (chat_model).")
    return LlmReranker(context.chat_model)
