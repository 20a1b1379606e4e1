"""Token ids of short, plain-ASCII texts for a BERT WordPiece tokenizer, without the tokenizers library.

Importing the tokenizers library and loading MiniLM's tokenizer.json (30,522 tokens) cost a one-shot
`citeline search` ~0.045 s of CPU for one short query, and `ask` that and ~0.05 s more for the
cross-encoder's (question, unit) pairs (``pair_ids``). For a tokenizer.json of the BERT shape
(BertNormalizer lowercasing, BertPreTokenizer, WordPiece, ``[CLS] $A [SEP]``) the ids of a text of
printable ASCII, tabs and line breaks follow from a few rules: lowercase; split at whitespace; each
punctuation character is a word of its own; each word is cut greedily into the longest tokens of
the vocabulary (``##`` before all but the first), or is the unknown token. Any other text (other
controls, non-ASCII: Unicode normalisation) or tokenizer goes to the library;
tests/embedding/test_wordpiece.py checks the ids are the library's on the golden sets' questions,
on the sample documents' lines and on random text.

The first process reads the JSON and writes its vocabulary, one token a line in id order after a
line of settings, to the cache folder (named after the file's size and modification time); the
others read that (~2 ms).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from citeline.atomic import write_atomically

_WORDS = re.compile(r"[a-z0-9]+|[^a-z0-9 ]")  # in lowercased printable ASCII: runs and punctuation
#: the controls BertNormalizer keeps, as whitespace (it removes the others: left to the library)
_SPACES = str.maketrans("\t\n\r", "   ")
_BERT_NORMALIZER = {
    "type": "BertNormalizer",
    "clean_text": True,
    "handle_chinese_chars": True,
    "lowercase": True,
}
_VERSION = 2  # of the cache file's layout
#: texts (or pairs) one tokenizer tokenizes by these rules before loading the library, which is
#: faster in bulk: a one-shot command never gets there, a server does once
QUICK_BUDGET = 4096


@dataclass(frozen=True)
class WordPiece:
    vocab: dict[str, int]
    unknown: int
    prefix: str
    max_word_chars: int
    cls: int
    sep: int
    pad: int
    #: texts holding one of these (special tokens, matched before normalising) go to the library
    added: tuple[str, ...]
    #: the pair template is ``[CLS] A [SEP] B [SEP]``, B's part of type 1
    pairs: bool = False

    def ids(self, text: str) -> list[int] | None:
        """The ids the library gives ``text`` (special tokens included), or None: not a text these
        rules cover."""
        pieces = self.pieces(text)
        return None if pieces is None else [self.cls, *pieces, self.sep]

    def pair_ids(self, first: str, second: str, max_tokens: int) -> tuple[list[int], list[int]] | None:
        """The ids and type ids the library gives the pair, truncated to ``max_tokens`` as its
        ``longest_first`` truncation does (``truncate``), or None."""
        a, b = self.pieces(first), self.pieces(second)
        if not self.pairs or a is None or b is None or max_tokens < 3:
            return None
        n_a, n_b = truncate(len(a), len(b), max_tokens - 3)
        ids = [self.cls, *a[:n_a], self.sep, *b[:n_b], self.sep]
        return ids, [0] * (n_a + 2) + [1] * (n_b + 1)

    def pieces(self, text: str) -> list[int] | None:
        """The ids of ``text``'s tokens (no special tokens), or None."""
        if not text.isascii():
            return None
        lowered = text.translate(_SPACES).lower()
        if not lowered.isprintable():
            return None
        if any(token.lower() in lowered for token in self.added):
            return None
        ids: list[int] = []
        for word in _WORDS.findall(lowered):
            ids += self._word(word)
        return ids

    def _word(self, word: str) -> list[int]:
        if len(word) > self.max_word_chars:
            return [self.unknown]
        pieces: list[int] = []
        start = 0
        while start < len(word):
            for end in range(len(word), start, -1):
                piece = word[start:end] if start == 0 else self.prefix + word[start:end]
                found = self.vocab.get(piece)
                if found is not None:
                    pieces.append(found)
                    start = end
                    break
            else:
                return [self.unknown]
        return pieces


def truncate(n_a: int, n_b: int, room: int) -> tuple[int, int]:
    """How many tokens of each side of a pair the tokenizers library's ``longest_first`` keeps in
    ``room`` (its utils/truncation.rs): the shorter side whole when the longer can take the rest,
    else half each, the odd token to the longer side."""
    if n_a + n_b <= room:
        return n_a, n_b
    swap = n_a > n_b
    short, long = (n_b, n_a) if swap else (n_a, n_b)
    long = short if short > room else max(short, room - short)
    if short + long > room:
        short = room // 2
        long = short + room % 2
    return (long, short) if swap else (short, long)


def from_tokenizer_json(data: dict[str, Any]) -> WordPiece | None:
    """The rules of a parsed tokenizer.json, or None when it is not of the BERT WordPiece shape."""
    model, post = data.get("model") or {}, data.get("post_processor") or {}
    normalizer = dict(data.get("normalizer") or {})
    if normalizer.pop("strip_accents", None) not in (None, True) or normalizer != _BERT_NORMALIZER:
        return None  # (lowercasing strips accents unless strip_accents is false; ASCII has none)
    if data.get("pre_tokenizer") != {"type": "BertPreTokenizer"} or model.get("type") != "WordPiece":
        return None
    single = [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}]
    single.append({"SpecialToken": {"id": "[SEP]", "type_id": 0}})
    special = post.get("special_tokens") or {}
    if post.get("type") != "TemplateProcessing" or post.get("single") != single:
        return None
    if any(len((special.get(name) or {}).get("ids") or ()) != 1 for name in ("[CLS]", "[SEP]")):
        return None
    vocab: dict[str, int] = model.get("vocab") or {}
    unknown = vocab.get(str(model.get("unk_token")))
    if unknown is None or sorted(vocab.values()) != list(range(len(vocab))):
        return None
    if any("\n" in token or "\r" in token for token in vocab):
        return None
    padding = data.get("padding")
    pair = [
        *single[:2],
        {"SpecialToken": {"id": "[SEP]", "type_id": 0}},
        {"Sequence": {"id": "B", "type_id": 1}},
    ]
    pair.append({"SpecialToken": {"id": "[SEP]", "type_id": 1}})
    return WordPiece(
        vocab=vocab,
        unknown=unknown,
        prefix=str(model.get("continuing_subword_prefix") or ""),
        max_word_chars=int(model.get("max_input_chars_per_word") or 100),
        cls=int(special["[CLS]"]["ids"][0]),
        sep=int(special["[SEP]"]["ids"][0]),
        pad=int(padding["pad_id"]) if padding else 0,
        added=tuple(str(t["content"]) for t in data.get("added_tokens") or ()),
        pairs=post.get("pair") == pair,
    )


def cache_file(tokenizer_json: Path, cache: Path) -> Path:
    stat = tokenizer_json.stat()
    key = f"{tokenizer_json.resolve()}|{stat.st_size}|{stat.st_mtime_ns}|{_VERSION}"
    return cache / "wordpiece" / f"{hashlib.sha256(key.encode()).hexdigest()[:24]}.txt"


def _settings(rules: WordPiece) -> dict[str, Any]:
    names = ("unknown", "prefix", "max_word_chars", "cls", "sep", "pad", "added", "pairs")
    return {k: getattr(rules, k) for k in names}


def write(rules: WordPiece | None, path: Path) -> None:
    """The rules as a file, or (None) the note that the tokenizer has another shape."""
    if rules is None:
        text = "null\n"
    else:
        by_id = sorted(rules.vocab, key=rules.vocab.__getitem__)
        text = json.dumps(_settings(rules)) + "\n" + "\n".join(by_id)
    write_atomically(path, text, ".wordpiece-")


def read(path: Path) -> WordPiece | None:
    settings, _, tokens = path.read_text(encoding="utf-8").partition("\n")
    values = json.loads(settings)
    if values is None:
        return None
    vocab = {token: i for i, token in enumerate(tokens.split("\n"))}
    return WordPiece(vocab=vocab, **{**values, "added": tuple(values["added"])})


def load(tokenizer_json: Path, cache: Path) -> WordPiece | None:
    """The rules of ``tokenizer_json`` from the cache folder (written there on first use), or
    None when the tokenizer is not of the BERT WordPiece shape."""
    try:
        path = cache_file(tokenizer_json, cache)
    except OSError:
        return None
    try:
        return read(path)
    except (OSError, ValueError, TypeError, KeyError):
        pass
    try:
        rules = from_tokenizer_json(json.loads(tokenizer_json.read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None
    with contextlib.suppress(OSError):  # a read-only cache: this process uses the rules all the same
        write(rules, path)
    return rules
