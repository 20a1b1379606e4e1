"""Rerankers: reorder retrieved hits for one query. Built through citeline.registry (kind "reranker")."""

from __future__ import annotations

#: The reranker measured best offline (no extra model); `citeline eval retrieval` uses it by default.
DEFAULT_RERANKER = "late-interaction"
