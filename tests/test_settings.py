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
