"""The static embedder distilled from MiniLM: numpy lookups that count and rank like MiniLM."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from citeline.embedding import make_embedder
from citeline.embedding.onnx import MINILM_TOKENIZER
from citeline.embedding.static import MINILM_STATIC, StaticEmbedder
from citeline.errors import ConfigError

TEXTS = [
    "How do I limit the memory of a container?",
    "Specify hard limits on memory available to containers (-m, --memory)",
    "Publish a container's port to the host with -p 8080:80",
    "Zürich café — naïve façade, 東京",
    "",
    "word " * 300,  # over max_tokens: embedded truncated, as minilm-int8 does
]


@pytest.fixture(scope="module")
def static() -> StaticEmbedder:
    e = make_embedder("minilm-static")
    assert isinstance(e, StaticEmbedder)
    return e


def test_counts_tokens_exactly_as_minilm_does(static: StaticEmbedder) -> None:
    # the chunker cuts by these counts: the same chunks whichever of the two embeds them
    assert static.count_tokens(TEXTS) == make_embedder("minilm-int8").count_tokens(TEXTS)
    assert (static.max_tokens, static.dim) == (256, 256)


def test_a_vector_is_the_normalised_sum_of_its_tokens_rows(static: StaticEmbedder) -> None:
    rows = np.load(MINILM_STATIC / "vectors.npy").astype(np.float32)
    scales = np.load(MINILM_STATIC / "scales.npy")
    for text in TEXTS[:4]:
        ids = static._tokenizer.encode(text).ids  # [CLS] ... [SEP]: their scales are 0
        expected = (rows[ids] * scales[ids, None]).sum(axis=0)
        expected /= np.linalg.norm(expected)
        assert np.abs(static.embed([text])[0] - expected).max() < 1e-5
    cls_sep = static._tokenizer.encode("").ids
    assert len(cls_sep) == 2 and not scales[cls_sep].any()


def test_vectors_do_not_depend_on_the_batch(static: StaticEmbedder) -> None:
    together = static.embed(TEXTS)
    alone = np.stack([static.embed([t])[0] for t in TEXTS])
    assert together.shape == (len(TEXTS), 256) and together.dtype == np.float32
    assert np.abs(together - alone).max() < 1e-6
    norms = np.linalg.norm(together, axis=1)
    assert np.allclose(norms[[0, 1, 2, 3, 5]], 1.0, atol=1e-5)
    assert norms[4] == 0.0  # no tokens but the special ones: a zero vector, not NaN
    assert static.embed([]).shape == (0, 256)


def test_a_long_text_is_embedded_truncated(static: StaticEmbedder) -> None:
    long = "alpha beta gamma " * 200
    cut = static._truncating.decode(static._truncating.encode(long).ids)
    assert np.abs(static.embed([long])[0] - static.embed([cut])[0]).max() < 1e-5


def test_it_ranks_a_matching_passage_above_unrelated_ones(static: StaticEmbedder) -> None:
    q, match, port, *_ = static.embed(TEXTS)
    assert q @ match > 0.7
    assert q @ match > q @ port + 0.2


def test_registered_and_versioned_by_its_table(static: StaticEmbedder) -> None:
    config = json.loads((MINILM_STATIC / "config.json").read_text())
    assert static.version == f"minilm-static-{config['sha256'][:16]}"
    assert static.name == "minilm-static"


@pytest.mark.parametrize("missing", ["vectors.npy", "scales.npy", "config.json"])
def test_a_missing_file_is_named(tmp_path: Path, missing: str) -> None:
    folder = tmp_path / "model"
    shutil.copytree(MINILM_STATIC, folder)
    (folder / missing).unlink()
    with pytest.raises(ConfigError, match=re.escape(missing)):
        StaticEmbedder(folder, MINILM_TOKENIZER, name="t")


def test_a_table_of_the_wrong_shape_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "model"
    shutil.copytree(MINILM_STATIC, folder)
    np.save(folder / "vectors.npy", np.zeros((10, 256), dtype=np.int8))
    with pytest.raises(ConfigError, match=r"vectors\.npy"):
        StaticEmbedder(folder, MINILM_TOKENIZER, name="t").embed(["text"])


def test_runs_without_onnxruntime() -> None:
    code = (
        "import sys\n"
        "from citeline.embedding import make_embedder\n"
        "make_embedder('minilm-static').embed(['a question'])\n"
        "assert 'onnxruntime' not in sys.modules and 'torch' not in sys.modules\n"
    )
    src = str(Path(__file__).resolve().parents[2] / "src")
    env = {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=120)


def test_an_index_built_with_it_searches_and_answers(tmp_path: Path) -> None:
    """End to end on a real index of the bundled samples: chunks embedded by the static table, a
    search finds the passage, and the index records the embedder."""
    import citeline
    from citeline.filters import Principal

    samples = Path(__file__).resolve().parents[2] / "samples"
    kb = citeline.open(tmp_path / "index", embedder="minilm-static")
    try:
        report = kb.add([samples])
        assert not report.failed and report.chunks_embedded > 0
        info = kb.store.embedder_info()
        assert info is not None and (info.name, info.dim) == ("minilm-static", 256)
        hits = kb.search("What does error LDG-4012 mean?", Principal.local_admin(), k=3)
        top = hits[0].chunk
        assert "LDG-4012" in " ".join(top.heading_trail) + top.text
        assert any("dense" in h.stages for h in hits)  # the static vectors took part
    finally:
        kb.close()
