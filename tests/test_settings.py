"""Settings: defaults < citeline.toml in the index < CITELINE_* env < explicit overrides."""

from __future__ import annotations

from pathlib import Path

import pytest

from citeline.errors import ConfigError
from citeline.settings import Settings, load_settings


def test_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "citeline.toml").write_text('top_k = 12\ncontext_passages = 4\nfusion = "convex"\n')
    monkeypatch.setenv("CITELINE_TOP_K", "20")
    s = load_settings(tmp_path, context_passages=None, refusal_threshold=0.5)
    assert s.top_k == 20  # env beats the file
    assert s.context_passages == 4  # the file beats the default; None means "flag not given"
    assert s.fusion == "convex"
    assert s.refusal_threshold == 0.5
    assert s.index == str(tmp_path)


def test_index_from_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CITELINE_INDEX", str(tmp_path / "x"))
    assert load_settings().index == str(tmp_path / "x")


def test_template_changes_nothing_until_uncommented(tmp_path: Path) -> None:
    (tmp_path / "citeline.toml").write_text(Settings().to_toml())
    assert load_settings(tmp_path) == Settings(index=str(tmp_path))


@pytest.mark.parametrize(
    ("content", "message"),
    [("top_k = [", "invalid TOML"), ('top_k = "many"', "must be a whole number"), ('fusion = "max"', "rrf")],
)
def test_bad_settings_are_named(tmp_path: Path, content: str, message: str) -> None:
    (tmp_path / "citeline.toml").write_text(content)
    with pytest.raises(ConfigError, match=message):
        load_settings(tmp_path)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("top_kk = 3", "Unknown setting 'top_kk'"),
        ("trace = 3", "must be true or false"),
        ('trace = "sometimes"', "must be true or false"),
        ('reranker = "colbert"', "late-interaction"),
        ('embedder = "onnx"', "needs an argument"),
        ("alpha = 1.5", "<= 1.0"),
        ("top_k = 2.5", "whole number"),
        ('index = "elsewhere"', "cannot be set inside the index"),
    ],
)
def test_every_bad_key_or_value_is_an_error_naming_it(tmp_path: Path, content: str, message: str) -> None:
    (tmp_path / "citeline.toml").write_text(content)
    with pytest.raises(ConfigError, match=message):
        load_settings(tmp_path)


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("CITELINE_TOPK", "3", "Unknown environment variable CITELINE_TOPK"),
        ("CITELINE_TRACE", "maybe", r"env CITELINE_TRACE.*true or false"),
        ("CITELINE_GENERATOR", "gpt", "extractive"),
    ],
)
def test_bad_environment_variables_are_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, value: str, message: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError, match=message):
        load_settings(tmp_path)


def test_test_suite_variables_are_not_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CITELINE_TEST_ANYTHING", "1")
    assert load_settings(tmp_path).top_k == Settings().top_k


def test_each_value_records_where_it_came_from(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "citeline.toml").write_text("context_passages = 4\n")
    monkeypatch.setenv("CITELINE_TOP_K", "20")
    s = load_settings(tmp_path, stored={"rrf_k": 30, "context_passages": 6}, reranker="learned")
    assert (s.rrf_k, s.context_passages, s.top_k, s.reranker) == (30, 4, 20, "learned")
    origins = {row["key"]: row["origin"] for row in s.effective()}
    assert origins["rrf_k"] == "index"
    assert origins["context_passages"] == str(tmp_path / "citeline.toml")
    assert origins["top_k"] == "env CITELINE_TOP_K"
    assert origins["reranker"] == "flag"
    assert origins["fusion"] == "default"


def test_chunking_and_settings_share_their_defaults() -> None:
    from citeline.chunking import ChunkingOptions

    options, settings = ChunkingOptions(), Settings()
    assert options.unstructured == settings.chunk_unstructured
    assert (
        options.target_tokens == settings.chunk_tokens and options.overlap_tokens == settings.overlap_tokens
    )


def test_embedder_in_the_toml_cannot_silently_differ_from_the_index(tmp_path: Path, docs_dir: Path) -> None:
    import citeline
    from citeline.errors import EmbedderMismatchError

    with citeline.open(tmp_path / "index", embedder="hashing") as kb:
        kb.add([docs_dir])
    (tmp_path / "index" / "citeline.toml").write_text('embedder = "minilm-int8"\n')
    with citeline.open(tmp_path / "index") as kb, pytest.raises(EmbedderMismatchError):
        _ = kb.embedder
