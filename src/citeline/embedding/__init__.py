"""Embedders: built through the backend registry (citeline.registry), shared per process."""

from __future__ import annotations

from citeline.embedding.base import Embedder, Vectors

DEFAULT_EMBEDDER = "minilm-int8"

_loaded: dict[tuple[str, int], Embedder] = {}


def make_embedder(spec: str, threads: int = 0) -> Embedder:
    """An embedder by registry spec (``minilm-int8``, ``hashing``, ``onnx:/path/to/dir``).

    Instances are shared per process: loading a model costs a second or more, and an embedder
    holds no per-index state. ``threads`` (the ``embed_threads`` setting) goes to the factory
    only when set, so a factory that takes no such option keeps working.
    """
    key = (spec, threads)
    if key not in _loaded:
        from citeline.registry import registry

        options: dict[str, object] = {"threads": threads} if threads else {}
        embedder: Embedder = registry.create("embedder", spec, None, **options)
        _loaded[key] = embedder
    return _loaded[key]


__all__ = ["DEFAULT_EMBEDDER", "Embedder", "Vectors", "make_embedder"]
