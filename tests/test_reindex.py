"""Switching embedders: vectors are never mixed; reindex swaps atomically."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import citeline
from citeline.errors import EmbedderMismatchError
from conftest import ADMIN


def test_reindex_swaps_embedder_and_keeps_serving(tmp_path: Path, docs_dir: Path) -> None:
    kb = citeline.open(tmp_path / "idx")
    kb.add([docs_dir])
    assert kb.store.embedder_info().name == "minilm-int8"  # type: ignore[union-attr]
    before = kb.search("alpha queue full", ADMIN, k=1)[0].chunk.id
    result = kb.reindex("hashing")
    assert result["embedder"] == "hashing" and result["embedded"] == result["chunks"]
    info = kb.store.embedder_info()
    assert info is not None and info.name == "hashing"
    stats = kb.store.stats()
    assert stats["vectors"] == stats["chunks"]  # the old vectors are gone, not mixed
    kb.close()
    reopened = citeline.open(tmp_path / "idx")
    assert reopened.embedder.name == "hashing"
    assert reopened.search("ZX-7781 alpha queue full", ADMIN, k=1)[0].chunk.id == before
    # adding more documents now uses the index's embedder
    (docs_dir / "extra.md").write_text(
        "# Extra\n\nExtra words about the epsilon service.\n", encoding="utf-8"
    )
    report = reopened.add([docs_dir])
    assert len(report.added) == 1


def test_asking_for_another_embedder_is_refused(
    tmp_path: Path, docs_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kb = citeline.open(tmp_path / "idx")
    kb.add([docs_dir])
    kb.close()
    monkeypatch.setenv("CITELINE_EMBEDDER", "hashing")
    other = citeline.open(tmp_path / "idx")
    with pytest.raises(EmbedderMismatchError, match="reindex"):
        _ = other.embedder
    assert os.environ["CITELINE_EMBEDDER"] == "hashing"


def test_store_refuses_vectors_of_another_embedder(tmp_path: Path) -> None:
    kb = citeline.open(tmp_path / "idx")
    kb.store.bind_embedder("minilm-int8", "v1", 384)
    with pytest.raises(EmbedderMismatchError):
        kb.store.bind_embedder("hashing", "1", 384)
