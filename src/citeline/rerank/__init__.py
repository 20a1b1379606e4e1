"""Rerankers, registered by name in one place.

A name may carry an argument after a colon, e.g. ``cross-encoder:/models/ms-marco-onnx``: the part
before the colon picks the factory and the rest reaches it as ``model``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from citeline.errors import UnknownBackendError
from citeline.rerank.base import Reranker


def _learned(**options: Any) -> Reranker:
    from citeline.rerank.learned import make_learned

    return make_learned(**options)


def _late_interaction(**options: Any) -> Reranker:
    from citeline.rerank.learned import make_late_interaction

    return make_late_interaction(**options)


def _cross_encoder(**options: Any) -> Reranker:
    from citeline.rerank.cross_encoder import make_cross_encoder

    return make_cross_encoder(**options)


def _llm(**options: Any) -> Reranker:
    from citeline.rerank.llm import make_llm_reranker

    return make_llm_reranker(**options)


RERANKERS: dict[str, Callable[..., Reranker]] = {
    "learned": _learned,
    "late-interaction": _late_interaction,
    "cross-encoder": _cross_encoder,
    "llm": _llm,
}

#: The reranker measured best offline (no extra model); `citeline eval retrieval` uses it by default.
DEFAULT_RERANKER = "late-interaction"


def make_reranker(name: str, **options: Any) -> Reranker:
    base, sep, arg = name.partition(":")
    if base not in RERANKERS:
        raise UnknownBackendError("reranker", name, ["none", *RERANKERS])
    if sep:
        options = {**options, "model": arg}
    return RERANKERS[base](**options)
