"""Embedders, registered by name in one place."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from citeline.embedding.base import Embedder, Vectors
from citeline.errors import UnknownBackendError

DEFAULT_EMBEDDER = "minilm-int8"


def _minilm(**options: Any) -> Embedder:
    from citeline.embedding.onnx import minilm_int8

    return minilm_int8(**options)


def _hashing(**options: Any) -> Embedder:
    from citeline.embedding.hashing import HashingEmbedder

    return HashingEmbedder(**options)


EMBEDDERS: dict[str, Callable[..., Embedder]] = {"minilm-int8": _minilm, "hashing": _hashing}

_loaded: dict[str, Embedder] = {}


def make_embedder(name: str, **options: Any) -> Embedder:
    """An embedder by registry name, or ``onnx:/path/to/dir`` for a local ONNX export.

    Instances are shared per process (loading a model costs a second or more).
    """
    key = name if not options else f"{name}:{sorted(options.items())}"
    if key in _loaded:
        return _loaded[key]
    if name.startswith("onnx:"):
        from citeline.embedding.onnx import onnx_dir

        embedder: Embedder = onnx_dir(name[len("onnx:") :], **options)
    elif name in EMBEDDERS:
        embedder = EMBEDDERS[name](**options)
    else:
        raise UnknownBackendError("embedder", name, [*EMBEDDERS, "onnx:DIR"])
    _loaded[key] = embedder
    return embedder


__all__ = ["DEFAULT_EMBEDDER", "EMBEDDERS", "Embedder", "Vectors", "make_embedder"]
