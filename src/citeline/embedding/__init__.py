"""Embedders: built through the backend registry (citeline.registry), shared per process."""

from __future__ import annotations

from citeline.embedding.base import Embedder, Vectors

DEFAULT_EMBEDDER = "minilm-int8"

_loaded: dict[str, Embedder] = {}


def make_embedder(spec: str) -> Embedder:
    """An embedder by registry spec (``minilm-int8``, ``hashing``, ``onnx:/path/to/dir``).

    Instances are shared per process: loading a model costs a second or more, and an embedder
    holds no per-index state.
    """
    if spec not in _loaded:
        from citeline.registry import registry

        embedder: Embedder = registry.create("embedder", spec)
        _loaded[spec] = embedder
    return _loaded[spec]


__all__ = ["DEFAULT_EMBEDDER", "Embedder", "Vectors", "make_embedder"]
