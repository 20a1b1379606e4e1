"""Is this an English word? wordfreq's large English list, without loading wordfreq per process.

Importing wordfreq (langcodes, ftfy, regex) and building its 321,000-word dictionary cost a one-shot
`citeline search` 0.3-0.5 s of CPU for the few lookups the query analysis makes. The words are
written once, sorted, to a plain file in the cache folder (named after the wordfreq data file's
size and modification time, so an upgrade of wordfreq writes a new one); a process reads that file
(2.6 MB, ~1 ms) and looks words up by binary search in it. Where the file cannot be written, the
dictionary is loaded as before.
"""

from __future__ import annotations

import functools
import importlib.util
from collections.abc import Container, Mapping
from pathlib import Path

from citeline.atomic import write_atomically

#: the wordlist wordfreq's get_frequency_dict reads for ("en", wordlist="large")
WORDLIST = "large_en.msgpack.gz"


class SortedWords:
    """Membership in a sorted, newline-separated list of words, by binary search in its bytes."""

    def __init__(self, blob: bytes) -> None:
        if not (blob.startswith(b"\n") and blob.endswith(b"\n")):
            raise ValueError("a word list starts and ends with a newline")
        self._blob = blob

    def __contains__(self, word: object) -> bool:
        if not isinstance(word, str) or not word or "\n" in word:
            return False
        key, blob = word.encode(), self._blob
        lo, hi = 0, len(blob) - 1  # newlines; the candidates are the lines between them
        while lo < hi:
            start = blob.rfind(b"\n", lo, (lo + hi) // 2 + 1)
            end = blob.find(b"\n", start + 1)
            found = blob[start + 1 : end]
            if found == key:
                return True
            if found < key:
                lo = end
            else:
                hi = start
        return False


def word_list_file(source: Path, cache: Path) -> Path:
    stat = source.stat()
    return cache / "wordlists" / f"wordfreq-{source.name.split('.')[0]}-{stat.st_size}-{stat.st_mtime_ns}.txt"


def _wordfreq_source() -> Path | None:
    spec = importlib.util.find_spec("wordfreq")  # finds the package without importing it
    if spec is None or spec.origin is None:
        return None
    source = Path(spec.origin).parent / "data" / WORDLIST
    return source if source.is_file() else None


def _cache_folder() -> Path:
    from citeline.settings import process_cache_root

    return process_cache_root()


def _wordfreq_dictionary() -> Mapping[str, float]:
    from wordfreq import get_frequency_dict

    words: Mapping[str, float] = get_frequency_dict("en", wordlist="large")
    return words


@functools.cache
def english_words() -> Container[str]:
    """wordfreq's large English list (books, news, the web and subtitles), as a container."""
    source = _wordfreq_source()
    if source is None:
        return _wordfreq_dictionary()
    path = word_list_file(source, _cache_folder())
    try:
        return SortedWords(path.read_bytes())
    except (OSError, ValueError):
        pass
    words = _wordfreq_dictionary()
    blob = b"\n" + b"\n".join(sorted(w.encode() for w in words if w and "\n" not in w)) + b"\n"
    try:
        write_atomically(path, blob, ".words-")
    except OSError:
        return words  # a read-only cache: this process keeps the dictionary
    return SortedWords(blob)
