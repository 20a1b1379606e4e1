"""One registry for every backend kind: specs, errors that list what exists, extras, plugins."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

import citeline
from citeline.build_context import StaticContext
from citeline.errors import ConfigError, MissingExtraError, UnknownBackendError
from citeline.registry import KINDS, Registry, registry, split_spec
from conftest import ADMIN


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("minilm-int8", ("minilm-int8", None)),
        ("onnx:/models/e5", ("onnx", "/models/e5")),
        ("cross-encoder:C:/models/x", ("cross-encoder", "C:/models/x")),
        ("llamacpp:", ("llamacpp", "")),
        ("  hashing ", ("hashing", None)),
    ],
)
def test_split_spec(spec: str, expected: tuple[str, str | None]) -> None:
    assert split_spec(spec) == expected


def test_every_kind_has_backends_and_the_built_ins_are_there() -> None:
    assert all(registry.names(kind) for kind in KINDS)
    assert {"minilm-int8", "onnx", "hashing"} <= set(registry.names("embedder"))
    assert {"extractive", "llamacpp", "openai", "anthropic"} <= set(registry.names("generator"))
    assert {"heuristic", "nli", "llm"} <= set(registry.names("verifier"))
    assert registry.parser_backend(".MD") is not None and registry.parser_backend(".xyz") is None
    assert ".pdf" in registry.extensions()


def test_unknown_names_list_what_exists() -> None:
    with pytest.raises(UnknownBackendError) as info:
        registry.create("reranker", "colbert")
    assert "late-interaction" in str(info.value) and "cross-encoder:MODEL" in str(info.value)


def test_arguments_are_checked_before_anything_is_imported() -> None:
    with pytest.raises(ConfigError, match="takes no argument"):
        registry.check("embedder", "hashing:384")
    with pytest.raises(ConfigError, match="needs an argument"):
        registry.check("embedder", "onnx")


def test_a_missing_optional_dependency_names_the_extra() -> None:
    r = Registry()
    r.register("generator", "ghost", "ghost_backend_pkg.backend:factory", extra="ghost")
    with pytest.raises(MissingExtraError, match=r"citeline\[ghost\]"):
        r.create("generator", "ghost")


def test_backends_are_built_from_the_context_they_are_given() -> None:
    from citeline.embedding.hashing import HashingEmbedder

    verifier = registry.create("verifier", "heuristic", StaticContext(embedder_=HashingEmbedder()))
    assert verifier.name == "heuristic"
    with pytest.raises(ConfigError, match="needs an embedder"):
        registry.create("verifier", "heuristic", StaticContext())


PLUGIN = """
from citeline.embedding.hashing import HashingEmbedder


class PluginEmbedder(HashingEmbedder):
    name = "plugin-hash"
    version = "plugin-1"


def factory(context, argument):
    return PluginEmbedder(dim=64)


def register(registry):
    registry.register("embedder", "plugin-hash", factory, summary="a test plugin")
"""


@pytest.fixture()
def plugin_on_path(tmp_path: Path) -> Iterator[None]:
    """A real installed distribution (a dist-info with entry points) on sys.path."""
    site = tmp_path / "site"
    (site / "citeline_test_plugin-0.1.dist-info").mkdir(parents=True)
    (site / "citeline_test_plugin.py").write_text(textwrap.dedent(PLUGIN))
    info = site / "citeline_test_plugin-0.1.dist-info"
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: citeline-test-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[citeline.backends]\nhash = citeline_test_plugin:register\n")
    sys.path.insert(0, str(site))
    try:
        yield
    finally:
        sys.path.remove(str(site))
        sys.modules.pop("citeline_test_plugin", None)
        registry._backends["embedder"].pop("plugin-hash", None)


def test_a_plugin_registers_through_entry_points_and_indexes_documents(
    plugin_on_path: None, tmp_path: Path, docs_dir: Path
) -> None:
    registry.load_entry_points(force=True)
    assert "plugin-hash" in registry.names("embedder")
    with citeline.open(tmp_path / "index", embedder="plugin-hash") as kb:
        kb.add([docs_dir])
        assert kb.embedder.name == "plugin-hash" and kb.embedder.dim == 64
        hits = kb.search("alpha queue", ADMIN, k=3)
        assert hits and hits[0].source.endswith("alpha.md")
