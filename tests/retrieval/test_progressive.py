"""Retrieval over a progressively indexed index (retrieval/progressive.py), on a real index folder:
the index's embedder is the hashing one, the fast one minilm-static (two spaces, two dimensions)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from citeline.filters import Filter, Principal
from citeline.kb import KnowledgeBase, open_kb

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
QUESTION = "What does error LDG-4012 mean and how do I fix it?"
ADMIN = Principal.local_admin()


@pytest.fixture()
def kb(tmp_path: Path) -> KnowledgeBase:
    kb = open_kb(tmp_path / "index", embedder="hashing", fast_embedder="minilm-static")
    report = kb.add([SAMPLES], progressive=True)
    assert report.added and not report.failed
    return kb


def _cosine(kb: KnowledgeBase, text: str, query: str) -> float:
    a, b = kb.embedder.embed([text, query])
    return float(np.dot(a, b))


def test_pending_chunks_are_rescored_in_the_index_space_then_full_vectors_take_over(
    kb: KnowledgeBase,
) -> None:
    assert kb.status()["pending_vectors"]["chunks"] == kb.status()["chunks"]
    before = kb.retrieve(QUESTION, ADMIN)
    assert before.dense and before.hits
    chunks = kb.store.chunks([c for c, _ in before.dense])
    for chunk_id, score in before.dense:  # every dense score is a cosine of the index's embedder
        assert score == pytest.approx(_cosine(kb, chunks[chunk_id][0].index_text, QUESTION), abs=1e-5)
    assert all("rescored" in h.stages for h in before.hits if "dense" in h.stages)
    assert not any("dense_fast" in h.stages for h in before.hits)

    assert kb.embed()["finished"]
    after = kb.retrieve(QUESTION, ADMIN)
    assert not any("rescored" in h.stages or "dense_fast" in h.stages for h in after.hits)
    rescored = dict(before.dense)
    shared = [(c, s) for c, s in after.dense if c in rescored]
    assert shared  # the same cosines, from the stored vectors now
    assert all(s == pytest.approx(rescored[c], abs=1e-5) for c, s in shared)


def test_without_rescoring_the_fast_list_is_rank_fused_beside_the_others(kb: KnowledgeBase) -> None:
    kb.settings = kb.settings.replace(rescore_pending=0)
    found = kb.retrieve(QUESTION, ADMIN)
    assert found.dense == []  # no chunk has a full vector yet: nothing in the index's space
    fast = [h for h in found.hits if "dense_fast" in h.stages]
    assert fast and all("rescored" not in h.stages for h in found.hits)


def test_the_trace_says_which_vectors_each_hit_came_from(kb: KnowledgeBase) -> None:
    answer = kb.ask(QUESTION, ADMIN)
    trace = kb.trace(answer.trace_id) if answer.trace_id else None
    assert trace is not None
    assert any("rescored" in hit.stages for hit in trace.candidates.fused)


def test_an_index_with_pending_chunks_is_not_copied_before_its_pass(
    kb: KnowledgeBase, tmp_path: Path
) -> None:
    from citeline.errors import CitelineError
    from citeline.index.migrate import migrate
    from citeline.wiring import open_store

    target = open_store(str(tmp_path / "copy"))
    try:
        with pytest.raises(CitelineError, match="citeline embed"):
            migrate(kb.store, target)
        assert target.count_chunks(Filter.admin()) == 0
    finally:
        target.close()
