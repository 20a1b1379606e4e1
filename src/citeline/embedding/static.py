"""A static (per-token) embedder distilled from all-MiniLM-L6-v2: a table lookup and a mean.

``minilm-static`` (``data/minilm-static``, MODEL_CARD.md there) holds one vector per token of
MiniLM's WordPiece vocabulary, made by training/distill_static.py; a text's vector is the
normalised sum of its tokens' rows. No neural network runs: numpy and `tokenizers` only, tens
of times faster than the ONNX model and weaker on meaning. It tokenizes with MiniLM's own
tokenizer, so it counts tokens, and the chunker cuts chunks, exactly as ``minilm-int8`` does.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from citeline.embedding.base import Vectors
from citeline.embedding.onnx import DATA_DIR, MINILM_TOKENIZER
from citeline.embedding.tokenized import WINDOW, TokenizedTexts
from citeline.errors import ConfigError

if TYPE_CHECKING:
    from citeline.build_context import BuildContext

MINILM_STATIC = DATA_DIR / "minilm-static"


class StaticEmbedder(TokenizedTexts):
    """Embeds a text as the L2-normalised sum of its tokens' rows in ``vectors.npy`` (int8) times
    ``scales.npy`` (one float32 per row); rows of tokens that never count have a scale of 0."""

    def __init__(self, folder: Path, tokenizer_path: Path, *, name: str, max_tokens: int = 256) -> None:
        self._files = {n: folder / n for n in ("vectors.npy", "scales.npy", "config.json")}
        for p in (*self._files.values(), tokenizer_path):
            if not p.is_file():
                raise ConfigError(f"Embedder '{name}': {p} does not exist.")
        try:
            config = json.loads(self._files["config.json"].read_text(encoding="utf-8"))
            self.dim = int(config["dims"])
            digest = str(config["sha256"])
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigError(f"Embedder '{name}': {self._files['config.json']} is not valid: {exc}") from exc
        self.name = name
        self.version = f"{name}-{digest[:16]}"
        self.max_tokens = max_tokens
        self._init_tokenizing(tokenizer_path)
        self.calls = 0  # number of embed() calls that did work
        self.texts_embedded = 0

    @functools.cached_property
    def _table(self) -> Vectors:
        """The rows as float32 (loaded on first embedding, like the ONNX model: ~30 MB)."""
        rows, scales = (np.load(self._files[n], allow_pickle=False) for n in ("vectors.npy", "scales.npy"))
        if rows.ndim != 2 or rows.shape[1] != self.dim or scales.shape != (rows.shape[0],):
            raise ConfigError(
                f"Embedder '{self.name}': {self._files['vectors.npy']} ({rows.shape}) and its scales "
                f"({scales.shape}) do not make a table of {self.dim} dimensions."
            )
        table: Vectors = rows.astype(np.float32) * scales.astype(np.float32)[:, None]
        vocabulary = int(self._tokenizer.get_vocab_size(with_added_tokens=True))
        if vocabulary > len(table):
            raise ConfigError(
                f"Embedder '{self.name}': the tokenizer has {vocabulary} tokens, the table {len(table)} rows."
            )
        return table

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        self.calls += 1
        self.texts_embedded += len(texts)
        table = self._table
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for lo in range(0, len(texts), WINDOW):
            # one text at a time: its rows stay in cache, where gathering a batch's rows into one
            # array first cost 10x the CPU (a fresh array of tokens x dims floats each time)
            for row, ids in enumerate(self._input_ids(texts[lo : lo + WINDOW]), lo):
                if ids:
                    out[row] = table[ids].sum(axis=0)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        normalised: Vectors = out / np.clip(norms, 1e-12, None)
        return normalised


def minilm_static(**options: Any) -> StaticEmbedder:
    """The packaged static table distilled from all-MiniLM-L6-v2 (MODEL_CARD.md in its folder)."""
    return StaticEmbedder(MINILM_STATIC, MINILM_TOKENIZER, name="minilm-static", **options)


def minilm_static_factory(
    context: BuildContext | None, argument: str | None, threads: int = 0
) -> StaticEmbedder:
    # threads: numpy's lookup and sum need none (the tokenizer parallelises by itself)
    return minilm_static()
