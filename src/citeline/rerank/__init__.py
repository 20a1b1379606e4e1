"""Rerankers, registered by name in one place."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from citeline.errors import UnknownBackendError
from citeline.rerank.base import Reranker

RERANKERS: dict[str, Callable[..., Reranker]] = {}


def make_reranker(name: str, **options: Any) -> Reranker:
    if name not in RERANKERS:
        raise UnknownBackendError("reranker", name, ["none", *RERANKERS])
    return RERANKERS[name](**options)
