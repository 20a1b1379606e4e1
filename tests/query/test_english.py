"""The English word list read from the cache folder answers as wordfreq's own dictionary does."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from wordfreq import get_frequency_dict

from citeline.query import english
from citeline.query.english import SortedWords, english_words

WORDS = sorted(["apple", "banana", "café", "cherry", "zebra", "zürich", "αβγ"], key=str.encode)


def sorted_words(words: list[str]) -> SortedWords:
    return SortedWords(b"\n" + b"\n".join(w.encode() for w in sorted(words, key=str.encode)) + b"\n")


@pytest.mark.parametrize(
    ("word", "found"),
    [
        ("apple", True),  # the first line
        ("αβγ", True),  # the last line (UTF-8 sorts after ASCII)
        ("café", True),
        ("zürich", True),
        ("banan", False),  # a prefix of a word
        ("bananas", False),  # a word plus a suffix
        ("aardvark", False),  # before the first
        ("ωmega", False),  # after the last
        ("cherry\nzebra", False),  # two lines are not one word
        ("", False),
    ],
)
def test_sorted_words_membership(word: str, found: bool) -> None:
    assert (word in sorted_words(WORDS)) is found


def test_sorted_words_of_one_word_and_of_none() -> None:
    assert "only" in sorted_words(["only"])
    assert "other" not in sorted_words(["only"])
    assert "any" not in SortedWords(b"\n")
    with pytest.raises(ValueError):
        SortedWords(b"no newlines around")


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("CITELINE_CACHE", str(tmp_path))
    english_words.cache_clear()
    yield tmp_path
    english_words.cache_clear()


def test_the_cached_list_agrees_with_wordfreq(cache: Path) -> None:
    words = english_words()
    assert isinstance(words, SortedWords)
    assert len(list((cache / "wordlists").glob("wordfreq-large_en-*.txt"))) == 1
    reference = get_frequency_dict("en", wordlist="large")
    rng = random.Random(7)
    known = rng.sample(sorted(reference), 3000)
    unknown = ["certbot", "mailertable", "concurrencyremote", "dockerd", "xyzzyq", "Container", "memory "]
    for word in known + unknown + ["memory", "container", "limit"]:
        assert (word in words) is (word in reference), word
    english_words.cache_clear()
    again = english_words()  # a new process reads the file the first one wrote
    assert isinstance(again, SortedWords) and again._blob == words._blob


def test_a_damaged_list_is_written_again(cache: Path) -> None:
    english_words()
    (path,) = (cache / "wordlists").glob("*.txt")
    path.write_bytes(b"truncated")
    english_words.cache_clear()
    assert "memory" in english_words()
    assert path.read_bytes().startswith(b"\n") and len(path.read_bytes()) > 1_000_000


def test_an_unwritable_cache_keeps_the_dictionary(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(path: Path, blob: bytes, prefix: str) -> None:
        raise PermissionError(f"{path}: read-only")

    monkeypatch.setattr(english, "write_atomically", refuse)
    words = english_words()
    assert not isinstance(words, SortedWords)
    assert "memory" in words and "certbot" not in words
