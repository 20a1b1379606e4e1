"""Cross-encoder reranking: (query, passage) pairs scored jointly by a sequence-classification model.

Two ways to load one:

* a local folder with ``model.onnx`` and ``tokenizer.json`` (e.g. an export of
  ``cross-encoder/ms-marco-MiniLM-L-6-v2``), run with onnxruntime like the embedder: no
  download, no torch. Registry name ``cross-encoder:/path/to/folder``.
* a model name, through ``sentence-transformers`` when it is installed and the hub is
  reachable: ``cross-encoder:cross-encoder/ms-marco-MiniLM-L-6-v2``.

The passage is the chunk's indexed text (title and headings prefix included).
"""

from __future__ import annotations

import functools
import typing
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import numpy.typing as npt

from citeline.embedding.wordpiece import QUICK_BUDGET, WordPiece
from citeline.embedding.wordpiece import load as load_wordpiece
from citeline.errors import ConfigError
from citeline.inference.batching import length_batches
from citeline.inference.session import CpuSession
from citeline.query.analysis import Query, analyze
from citeline.types import Hit, StageScore

if TYPE_CHECKING:
    from citeline.build_context import BuildContext


class PairScorer(Protocol):
    def score(self, query: str, passages: Sequence[str]) -> npt.NDArray[np.float32]: ...


class Head(Protocol):
    """A second model on a cross-encoder's hidden states (answer/span.py): ``hidden`` names the
    output it reads; called with it, the attention mask and the type ids, one score per pair."""

    hidden: str

    def __call__(
        self, hidden: npt.NDArray[np.float32], mask: npt.NDArray[np.int64], types: npt.NDArray[np.int64]
    ) -> npt.NDArray[np.float32]: ...


class OnnxPairScorer:
    """A BERT-style cross-encoder exported to ONNX: inputs input_ids/attention_mask[/token_type_ids],
    output logits of shape (batch, 1) (a relevance score) or (batch, 2) (not relevant, relevant)."""

    def __init__(
        self, folder: Path, *, max_tokens: int = 512, batch_size: int = 16, threads: int | None = None
    ):
        model, tok = folder / "model.onnx", folder / "tokenizer.json"
        for p in (model, tok):
            if not p.is_file():
                raise ConfigError(
                    f"Cross-encoder folder {folder}: {p.name} is missing (need model.onnx and tokenizer.json)."
                )
        self.batch_size, self.max_tokens = batch_size, max_tokens
        self._tokenizer_path = tok
        #: pairs the tokenizer.json's WordPiece rules may still tokenize without the library
        self._quick_left = QUICK_BUDGET
        # every use scores many pairs (hundreds of tokens or more): optimised from the start, and
        # built in the background: a one-shot `ask` retrieves meanwhile
        self._session = CpuSession(model, threads, optimize_after=0, background=True)

    @functools.cached_property
    def _tokenizer(self) -> Any:
        """The tokenizers library's tokenizer (~0.05 s to load), for what the rules do not cover."""
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(self._tokenizer_path))
        tokenizer.enable_truncation(self.max_tokens, strategy="longest_first")  # a long question too
        tokenizer.enable_padding()
        return tokenizer

    @functools.cached_property
    def _rules(self) -> WordPiece | None:
        from citeline.settings import process_cache_root

        return load_wordpiece(self._tokenizer_path, process_cache_root())

    def _encode(self, pairs: Sequence[tuple[str, str]]) -> tuple[npt.NDArray[np.int64], ...]:
        """Token ids, attention mask and type ids of the pairs, padded to the longest: by the
        WordPiece rules while the library is not loaded and they cover every pair (a one-shot
        `ask` reads ~20 units: embedding/wordpiece.py), else by the library."""
        quick = None
        if self._quick_left >= len(pairs) and "_tokenizer" not in self.__dict__ and self._rules is not None:
            rules = self._rules
            quick = [rules.pair_ids(a, b, self.max_tokens) for a, b in pairs]
        if quick is not None and all(q is not None for q in quick):
            self._quick_left -= len(pairs)
            encoded = typing.cast(list[tuple[list[int], list[int]]], quick)
            width = max(len(ids) for ids, _ in encoded)
            ids = np.zeros((len(pairs), width), dtype=np.int64)  # the library pads with id 0, type 0
            mask, types = np.zeros_like(ids), np.zeros_like(ids)
            for row, (row_ids, row_types) in enumerate(encoded):
                ids[row, : len(row_ids)], types[row, : len(row_ids)] = row_ids, row_types
                mask[row, : len(row_ids)] = 1
            return ids, mask, types
        enc = self._tokenizer.encode_batch(list(pairs))  # padded to the longest: cut per batch below
        return (
            np.array([e.ids for e in enc], dtype=np.int64),
            np.array([e.attention_mask for e in enc], dtype=np.int64),
            np.array([e.type_ids for e in enc], dtype=np.int64),
        )

    @functools.cached_property
    def _inputs(self) -> frozenset[str]:
        return frozenset(i.name for i in self._session.get_inputs())

    @functools.cached_property
    def _first_output(self) -> str:
        return str(self._session.get_outputs()[0].name)

    def logits(self, pairs: Sequence[tuple[str, str]], head: Head | None = None) -> npt.NDArray[np.float32]:
        """The model's raw output for each (first, second) text pair, shape (pairs, classes), and
        with ``head`` one more column: the head's score of the hidden states it reads.

        Pairs run shortest first, cut where padding costs least (inference/batching.py): in
        arrival order, batches of 16 padded a reader's 20 units by ~35%."""
        if not pairs:
            return np.zeros((0, 1 if head is None else 2), dtype=np.float32)
        ids, mask, types = self._encode(pairs)
        lengths = [int(n) for n in mask.sum(axis=1)]
        wanted = [self._first_output] + ([head.hidden] if head is not None else [])
        out: npt.NDArray[np.float32] | None = None
        for batch in length_batches(lengths, self.batch_size, self.batch_size * self.max_tokens):
            width = max(lengths[i] for i in batch)
            feeds: dict[str, Any] = {"input_ids": ids[batch, :width], "attention_mask": mask[batch, :width]}
            if "token_type_ids" in self._inputs:
                feeds["token_type_ids"] = types[batch, :width]
            results = self._session.run(wanted, feeds)
            logits = np.asarray(results[0], dtype=np.float32).reshape(len(batch), -1)
            if head is not None:
                extra = head(results[1], mask[batch, :width], types[batch, :width])
                logits = np.concatenate([logits, extra.reshape(-1, 1)], axis=1)
            if out is None:
                out = np.zeros((len(pairs), logits.shape[1]), dtype=np.float32)
            out[batch] = logits
        assert out is not None
        return out

    def score(self, query: str, passages: Sequence[str]) -> npt.NDArray[np.float32]:
        logits = self.logits([(query, p) for p in passages])
        if logits.shape[-1] == 1:
            return logits[:, 0]
        return logits[:, -1] - logits[:, 0]  # two classes: the log-odds of "relevant"


class SentenceTransformersPairScorer:
    """A hub model by name via sentence-transformers (optional dependency, needs the hub once)."""

    def __init__(self, model_name: str) -> None:
        try:
            from sentence_transformers import CrossEncoder
        except ImportError as exc:
            raise ConfigError(
                f"Cross-encoder '{model_name}' is not a local folder; loading it by name needs "
                "`pip install sentence-transformers` and access to the model hub. Or export it to ONNX "
                "and pass the folder (model.onnx + tokenizer.json)."
            ) from exc
        try:
            self._model = CrossEncoder(model_name)
        except Exception as exc:  # network, missing repo, bad weights: all mean "cannot load"
            raise ConfigError(f"Cannot load cross-encoder '{model_name}': {exc}") from exc

    def score(self, query: str, passages: Sequence[str]) -> npt.NDArray[np.float32]:
        if not passages:
            return np.zeros(0, dtype=np.float32)
        return np.asarray(self._model.predict([(query, p) for p in passages]), dtype=np.float32).reshape(-1)


def load_pair_scorer(model: str) -> PairScorer:
    folder = Path(model).expanduser()
    if folder.is_dir():
        return OnnxPairScorer(folder)
    if folder.exists() or model.startswith((".", "/", "~")):
        raise ConfigError(f"Cross-encoder folder {model} does not exist or is not a folder.")
    return SentenceTransformersPairScorer(model)


class CrossEncoderReranker:
    """Reorders hits by cross-encoder score; ties keep the incoming order."""

    def __init__(self, scorer: PairScorer, name: str = "cross-encoder") -> None:
        self.scorer = scorer
        self.name = name

    def rerank(self, query: Query | str, hits: Sequence[Hit]) -> list[Hit]:
        if not hits:
            return []
        scores = self.scorer.score(analyze(query).text, [h.chunk.index_text for h in hits])
        order = sorted(range(len(hits)), key=lambda i: (-float(scores[i]), i))
        out: list[Hit] = []
        for rank, i in enumerate(order, 1):
            hit = hits[i]
            out.append(
                replace(
                    hit,
                    score=float(scores[i]),
                    stages={**hit.stages, "rerank": StageScore(float(scores[i]), rank)},
                )
            )
        return out


def cross_encoder_factory(context: BuildContext | None, model: str | None) -> CrossEncoderReranker:
    if not model:
        raise ConfigError(
            "The cross-encoder reranker needs a model: 'cross-encoder:/path/to/folder' (model.onnx + "
            "tokenizer.json) or 'cross-encoder:<hub model name>' (needs sentence-transformers)."
        )
    return CrossEncoderReranker(load_pair_scorer(model), name=f"cross-encoder:{model}")
