"""Tokenizing for embedders that read a Hugging Face ``tokenizer.json`` (the ONNX and static ones).

Each text is tokenized once, without truncation or padding; token counts asked for by the chunker
are kept (up to ``ENCODING_CACHE`` texts) and reused when the same texts are embedded next.
"""

from __future__ import annotations

import functools
import threading
import typing
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from citeline.embedding.wordpiece import QUICK_BUDGET

if TYPE_CHECKING:
    from citeline.embedding.wordpiece import WordPiece

#: encodings kept from count_tokens for embed() to reuse (the chunker counts, then the same texts
#: are often embedded: semantic chunking's sentences, chunks that are one block)
ENCODING_CACHE = 4096
#: texts tokenized and sorted together in embed() and count_tokens(): sorting a few thousand texts
#: by length already pads little, and memory stays bounded on large files
WINDOW = 4096
#: at most this many texts of at most QUICK_CHARS are tokenized without loading the tokenizers
#: library, while it is not loaded (embedding/wordpiece.py): a query, an answer's passages and units
#: (~1 ms of CPU per 20 units, against ~0.045 s to import and load the library); more is its work
QUICK_TEXTS, QUICK_CHARS = 64, 2000


class TokenizedTexts:
    """Mixin: ``count_tokens`` and the token ids of texts, for an embedder whose ``__init__``
    calls ``_init_tokenizing``."""

    max_tokens: int

    def _init_tokenizing(self, tokenizer_path: Path) -> None:
        self._tokenizer_path = tokenizer_path
        self._encoded: OrderedDict[str, list[int]] = OrderedDict()
        self._lock = threading.Lock()
        self.texts_tokenized = 0  # texts run through the tokenizer; tests assert on it
        self._quick_left = QUICK_BUDGET  # texts the WordPiece rules may still tokenize

    @functools.cached_property
    def _tokenizer_and_pad(self) -> tuple[Any, int]:
        """Loaded on first use, like the model: a command that reads nothing new needs neither.
        One encoding serves counting and embedding: no truncation, no padding (done per batch)."""
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(self._tokenizer_path))
        padding = tokenizer.padding
        tokenizer.no_truncation()
        tokenizer.no_padding()
        return tokenizer, int(padding["pad_id"]) if padding else 0

    @property
    def _tokenizer(self) -> Any:
        return self._tokenizer_and_pad[0]

    @property
    def _pad_id(self) -> int:
        quick = None if "_tokenizer_and_pad" in self.__dict__ else self._quick
        return quick.pad if quick is not None else self._tokenizer_and_pad[1]

    @functools.cached_property
    def _quick(self) -> WordPiece | None:
        """The rules of a BERT WordPiece tokenizer (embedding/wordpiece.py), or None."""
        from citeline.embedding import wordpiece
        from citeline.settings import process_cache_root

        return wordpiece.load(self._tokenizer_path, process_cache_root())

    def _quick_ids(self, texts: Sequence[str]) -> list[list[int]] | None:
        """The ids of a few short texts before the library is loaded (what it would give), or None."""
        if len(texts) > min(QUICK_TEXTS, self._quick_left) or "_tokenizer_and_pad" in self.__dict__:
            return None
        if any(len(t) > QUICK_CHARS for t in texts) or self._quick is None:
            return None
        ids = [self._quick.ids(t) for t in texts]
        if any(x is None for x in ids):
            return None
        self._quick_left -= len(texts)
        return typing.cast(list[list[int]], ids)

    @functools.cached_property
    def _truncating(self) -> Any:
        """For texts over max_tokens (rare: chunks are cut below it), encoded again truncated so
        that any tokenizer's template truncates as it would itself. Built on first use: loading a
        tokenizer costs a one-shot `citeline search` about 0.1 s."""
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(self._tokenizer_path))
        tokenizer.enable_truncation(self.max_tokens)
        tokenizer.no_padding()
        return tokenizer

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        # A window of texts at a time: the tokenizer's encodings of a whole large file at once
        # would cost far more memory than the counts.
        return [
            len(x) for lo in range(0, len(texts), WINDOW) for x in self._encode(texts[lo : lo + WINDOW], True)
        ]

    def _encode(self, texts: Sequence[str], keep: bool = False) -> list[list[int]]:
        """Token ids of each text (special tokens included, untruncated), each distinct text
        tokenized once; ``keep``: remember them for a later embed() of the same texts."""
        with self._lock:
            known = {t: self._encoded[t] for t in texts if t in self._encoded}
            for t in known:
                self._encoded.move_to_end(t)
        todo = [t for t in dict.fromkeys(texts) if t not in known]
        if todo:
            self.texts_tokenized += len(todo)
            quick = self._quick_ids(todo)
            encoded = quick if quick is not None else [e.ids for e in self._tokenizer.encode_batch(todo)]
            fresh = dict(zip(todo, encoded, strict=True))
            known.update(fresh)
            if keep:
                with self._lock:
                    self._encoded.update(fresh)
                    while len(self._encoded) > ENCODING_CACHE:
                        self._encoded.popitem(last=False)
        return [known[t] for t in texts]

    def _input_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """The ids each text is embedded from: truncated to ``max_tokens`` by the tokenizer itself
        where a text is longer (its special tokens kept)."""
        ids = self._encode(texts)
        long = [i for i, x in enumerate(ids) if len(x) > self.max_tokens]
        if long:
            self.texts_tokenized += len(long)
            for i, e in zip(long, self._truncating.encode_batch([texts[i] for i in long]), strict=True):
                ids[i] = e.ids
        return ids
