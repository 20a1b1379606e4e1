"""Token ids without the tokenizers library: the library's ids, for every text the rules cover."""

from __future__ import annotations

import json
import random
import string
from pathlib import Path

import numpy as np
import pytest
from tokenizers import Tokenizer

from citeline.embedding.onnx import MINILM_TOKENIZER, minilm_int8
from citeline.embedding.wordpiece import from_tokenizer_json, load

ROOT = Path(__file__).resolve().parents[2]
#: the golden sets' questions (postfix is reserved: evalsets/RESERVED)
QUESTION_SETS = ["docker", "aptitude", "borg", "gnuplot", "openssh"]


def library() -> Tokenizer:
    tokenizer = Tokenizer.from_file(str(MINILM_TOKENIZER))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


def questions() -> list[str]:
    texts = []
    for name in QUESTION_SETS:
        for path in sorted((ROOT / "evalsets" / name).glob("*.jsonl")):
            texts += [json.loads(line)["question"] for line in path.read_text(encoding="utf-8").splitlines()]
    texts += [json.loads(line)["question"] for line in (ROOT / "tests/data/questions.jsonl").open()]
    return texts


def document_passages() -> list[str]:
    """Every paragraph of the sample documents (line breaks kept), as an answer's units are."""
    texts = []
    for path in sorted((ROOT / "samples").rglob("*")):
        if path.suffix in {".md", ".txt", ".rst", ".html"}:
            texts += [
                p for p in path.read_text(encoding="utf-8", errors="replace").split("\n\n") if p.strip()
            ]
    return texts


def random_texts(count: int) -> list[str]:
    rng = random.Random(37)
    alphabet = string.ascii_letters + string.digits + string.punctuation + "     \t\n\r"
    words = ["container", "memory", "--memory-swap", "dockerd", "unaffable", "##ing", "x" * 120, "[cls]"]
    out = []
    for _ in range(count):
        parts = [rng.choice(words) if rng.random() < 0.3 else "" for _ in range(3)]
        parts.append("".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 80))))
        rng.shuffle(parts)
        out.append(" ".join(parts))
    return out


@pytest.fixture(scope="module")
def rules_and_library(tmp_path_factory: pytest.TempPathFactory) -> tuple[object, Tokenizer]:
    rules = load(MINILM_TOKENIZER, tmp_path_factory.mktemp("cache"))
    assert rules is not None
    return rules, library()


@pytest.mark.parametrize(
    "texts", [questions(), document_passages(), random_texts(3000)], ids=["questions", "documents", "random"]
)
def test_the_ids_are_the_librarys_for_every_text_the_rules_cover(
    rules_and_library: tuple[object, Tokenizer], texts: list[str]
) -> None:
    rules, tokenizer = rules_and_library
    covered = [(t, rules.ids(t)) for t in texts]  # type: ignore[attr-defined]
    covered = [(t, ids) for t, ids in covered if ids is not None]
    assert len(covered) >= 0.8 * len(texts)  # plain ASCII nearly always
    expected = [e.ids for e in tokenizer.encode_batch([t for t, _ in covered])]
    assert [ids for _, ids in covered] == expected


@pytest.mark.parametrize(
    "text",
    ["café", "漢字", "naïve", "the [CLS] token", "a [mask] here", "bell\x07", "form\x0cfeed", "nul\x00"],
)
def test_other_texts_are_left_to_the_library(rules_and_library: tuple[object, Tokenizer], text: str) -> None:
    rules, _ = rules_and_library
    assert rules.ids(text) is None  # type: ignore[attr-defined]


def test_the_rules_are_read_back_from_the_cache_and_other_shapes_refused(tmp_path: Path) -> None:
    first = load(MINILM_TOKENIZER, tmp_path)
    assert first is not None and len(list((tmp_path / "wordpiece").iterdir())) == 1
    again = load(MINILM_TOKENIZER, tmp_path)
    assert again == first
    data = json.loads(MINILM_TOKENIZER.read_text(encoding="utf-8"))
    for change in ({"normalizer": {**data["normalizer"], "lowercase": False}}, {"pre_tokenizer": None}):
        assert from_tokenizer_json({**data, **change}) is None
    other = tmp_path / "other.json"
    other.write_text(json.dumps({**data, "pre_tokenizer": {"type": "Whitespace"}}), encoding="utf-8")
    assert load(other, tmp_path) is None and load(other, tmp_path) is None  # the refusal is cached too


def test_a_query_is_embedded_as_with_the_library_without_loading_it() -> None:
    quick, loaded = minilm_int8(), minilm_int8()  # two instances (make_embedder shares one)
    assert loaded._tokenizer is not None  # the library, loaded first
    query = "How do I limit the memory a container may use?"
    a, b = quick.embed([query]), loaded.embed([query])
    assert "_tokenizer_and_pad" not in quick.__dict__ and "_tokenizer_and_pad" in loaded.__dict__
    assert np.array_equal(a, b)


CROSS_ENCODER = ROOT / "src" / "citeline" / "answer" / "data" / "cross-encoder"


def pair_texts(count: int) -> list[tuple[str, str]]:
    rng = random.Random(34)
    firsts = ["question: " + q for q in questions()] + random_texts(200)
    seconds = document_passages() + random_texts(200)
    seconds += [" ".join(seconds[i : i + 3]) for i in range(0, 60, 3)]  # longer than 128 tokens
    return [(rng.choice(firsts), rng.choice(seconds)) for _ in range(count)]


@pytest.mark.parametrize("max_tokens", [128, 40, 512])  # 512: nothing is cut
def test_pairs_are_encoded_and_truncated_longest_first_as_the_library_does(
    tmp_path: Path, max_tokens: int
) -> None:
    rules = load(CROSS_ENCODER / "tokenizer.json", tmp_path)
    assert rules is not None and rules.pairs
    tokenizer = Tokenizer.from_file(str(CROSS_ENCODER / "tokenizer.json"))
    tokenizer.enable_truncation(max_tokens, strategy="longest_first")
    tokenizer.no_padding()
    pairs = pair_texts(2000)
    encoded = [(p, rules.pair_ids(*p, max_tokens)) for p in pairs]
    covered = [(p, q) for p, q in encoded if q is not None]
    assert len(covered) >= 0.8 * len(pairs)
    assert any(len(q[0]) == max_tokens for _, q in covered) == (max_tokens < 512)  # truncation exercised
    expected = [(e.ids, e.type_ids) for e in tokenizer.encode_batch([p for p, _ in covered])]
    assert [q for _, q in covered] == expected


def test_the_cross_encoder_scores_pairs_as_with_the_library_without_loading_it() -> None:
    from citeline.rerank.cross_encoder import OnnxPairScorer

    quick, loaded = (
        OnnxPairScorer(CROSS_ENCODER, max_tokens=128),
        OnnxPairScorer(CROSS_ENCODER, max_tokens=128),
    )
    assert loaded._tokenizer is not None
    pairs = pair_texts(40)
    pairs = [p for p in pairs if all(t.isascii() for t in p)][:20]
    assert np.array_equal(quick.logits(pairs), loaded.logits(pairs))
    assert "_tokenizer" not in quick.__dict__
    for got, want in zip(quick._encode(pairs), loaded._encode(pairs), strict=True):
        assert np.array_equal(got, want)
