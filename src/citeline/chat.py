"""The ChatModel contract: complete a list of chat messages within a token limit.

Every LLM generator implements it, and the LLM reranker, query expansion and the LLM judge
take one, so any backend (local GGUF, OpenAI-compatible, Anthropic) serves all of them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol, runtime_checkable

Message = Mapping[str, str]  # {"role": "system" | "user" | "assistant", "content": "..."}


@runtime_checkable
class ChatModel(Protocol):
    name: str

    def complete(self, messages: Sequence[Message], max_tokens: int = 256) -> str:
        """The model's reply text to ``messages``, at most ``max_tokens`` tokens long."""
        ...


def user(content: str) -> list[Message]:
    """One user message: the shape every single-prompt caller sends."""
    return [{"role": "user", "content": content}]
