"""Switching embedders: vectors are never mixed; reindex swaps atomically."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import citeline
from citeline.errors import EXIT_REGRESSION, EmbedderMismatchError, SwapRefusedError
from citeline.eval.answers import load_golden
from citeline.eval.shadow import Rollout, ShadowComparison, compared_reindex
from citeline.filters import Filter
from citeline.kb import KnowledgeBase
from conftest import ADMIN, OpenIndex


def test_reindex_swaps_embedder_and_keeps_serving(tmp_path: Path, docs_dir: Path) -> None:
    kb = citeline.open(tmp_path / "idx")
    kb.add([docs_dir])
    assert kb.store.embedder_info().name == "minilm-int8"  # type: ignore[union-attr]
    before = kb.search("alpha queue full", ADMIN, k=1)[0].chunk.id
    result = kb.reindex("hashing")
    assert result["embedder"] == "hashing" and result["embedded"] == result["chunks"]
    info = kb.store.embedder_info()
    assert info is not None and info.name == "hashing"
    stats = kb.store.stats()
    assert stats["vectors"] == stats["chunks"]  # the old vectors are gone, not mixed
    kb.close()
    reopened = citeline.open(tmp_path / "idx")
    assert reopened.embedder.name == "hashing"
    assert reopened.search("ZX-7781 alpha queue full", ADMIN, k=1)[0].chunk.id == before
    # adding more documents now uses the index's embedder
    (docs_dir / "extra.md").write_text(
        "# Extra\n\nExtra words about the epsilon service.\n", encoding="utf-8"
    )
    report = reopened.add([docs_dir])
    assert len(report.added) == 1


def _serves_with(kb: KnowledgeBase, name: str, dim: int) -> None:
    info = kb.store.embedder_info()
    assert info is not None and (info.name, info.dim) == (name, dim)
    report = kb.check()
    assert report.ok, report.problems
    stats = kb.store.stats()
    assert stats["vectors"] == stats["chunks"]  # one vector per chunk text, of this embedder
    question = "ZX-7781 alpha queue full"
    assert len(kb.store.vector_search(kb.embedder.embed([question])[0], Filter.admin(), 3)) == 3
    assert kb.search(question, ADMIN, k=1)[0].source.endswith("alpha.md")


def test_reindex_to_another_width_and_back_on_every_store(open_index: OpenIndex, docs_dir: Path) -> None:
    # minilm-int8 has 384 dimensions, minilm-static 256: on PostgreSQL the swap rebuilds the HNSW
    # index in its transaction, where the rows' previous versions still hold the old vectors
    kb = open_index("index")
    kb.add([docs_dir])
    result = kb.reindex("minilm-static")  # through the API, then back through the CLI
    assert result["embedder"] == "minilm-static" and result["embedded"] == result["chunks"] > 0
    _serves_with(kb, "minilm-static", 256)
    env = {**os.environ, "CITELINE_INDEX": open_index.location("index")}
    for args in (["reindex", "--embedder", "minilm-int8"], ["check"]):
        done = subprocess.run(
            [sys.executable, "-m", "citeline", *args], capture_output=True, text=True, env=env, timeout=600
        )
        assert done.returncode == 0, (args, done.stderr)
    _serves_with(open_index("index"), "minilm-int8", 384)


def test_asking_for_another_embedder_is_refused(
    tmp_path: Path, docs_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kb = citeline.open(tmp_path / "idx")
    kb.add([docs_dir])
    kb.close()
    monkeypatch.setenv("CITELINE_EMBEDDER", "hashing")
    other = citeline.open(tmp_path / "idx")
    with pytest.raises(EmbedderMismatchError, match="reindex"):
        _ = other.embedder
    assert os.environ["CITELINE_EMBEDDER"] == "hashing"


def test_store_refuses_vectors_of_another_embedder(tmp_path: Path) -> None:
    kb = citeline.open(tmp_path / "idx")
    kb.store.bind_embedder("minilm-int8", "v1", 384)
    with pytest.raises(EmbedderMismatchError):
        kb.store.bind_embedder("hashing", "1", 384)


# -- reindex --compare: a shadow comparison decides the swap --------------------------------------

SAMPLES = Path(__file__).resolve().parents[1] / "samples"
#: questions of tests/data/questions.jsonl where minilm-static does worse than minilm-int8 on the
#: samples (it answers three unanswerable questions and refuses one answerable one), and some where
#: both do the same
SHADOW_IDS = ("q01", "q02", "q15", "q25", "q49", "q54", "q57", "q59", "q61")


def _golden_subset(path: Path, ids: tuple[str, ...] = SHADOW_IDS) -> None:
    """tests/data/questions.jsonl's rows as a golden set: the expected answer, the whole source as evidence."""
    lines = []
    for line in (Path(__file__).parent / "data" / "questions.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row["id"] not in ids:
            continue
        golden = {"id": row["id"], "question": row["question"], "answerable": row["answerable"]}
        if row["answerable"]:  # sources relative to the documents folder (--docs-root)
            golden |= {"answers": [row["answer"]], "evidence": [{"source": Path(row["source"]).name}]}
        lines.append(json.dumps(golden))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _citeline(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CITELINE_INDEX": str(cwd / "index")}
    return subprocess.run(
        [sys.executable, "-m", "citeline", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=600,
    )


def test_reindex_compare_refuses_a_weaker_embedder_and_swaps_at_a_loose_max_drop(tmp_path: Path) -> None:
    shutil.copytree(SAMPLES, tmp_path / "docs")
    questions = tmp_path / "questions.jsonl"
    _golden_subset(questions)
    kb = citeline.open(tmp_path / "index")
    kb.add([tmp_path / "docs"], root=tmp_path)
    before = [h.chunk.id for h in kb.search("How often are data encryption keys rotated?", ADMIN, k=5)]
    kb.close()
    compare = ["reindex", "--embedder", "minilm-static", "--compare", str(questions), "--docs-root", "docs"]

    refused = _citeline(tmp_path, *compare, "--max-drop", "0.05")
    assert refused.returncode == EXIT_REGRESSION, refused.stderr
    # named: the metric, its old and new figures, the allowance, the embedder kept
    said = r"refused \(--max-drop\): \d+ metrics got worse by more than 0\.05: refusal_recall 1\.000 -> 0\.\d{3} \(worse"
    assert re.search(said, refused.stderr)
    assert "keeps 'minilm-int8'" in refused.stderr
    assert (
        "Refusal recall" in refused.stdout and "minilm-static (new)" in refused.stdout
    )  # eval compare's table
    assert "reindexed" not in refused.stdout
    kb = citeline.open(tmp_path / "index")
    info = kb.store.embedder_info()
    assert info is not None and info.name == "minilm-int8"
    assert kb.check().ok
    assert [
        h.chunk.id for h in kb.search("How often are data encryption keys rotated?", ADMIN, k=5)
    ] == before
    assert kb.traces() == []  # the questions were asked on a scratch copy, not here
    kb.close()

    accepted = _citeline(tmp_path, *compare, "--max-drop", "1", "--reports", "reports")
    assert accepted.returncode == 0, accepted.stderr
    assert (
        "No metric of" in accepted.stderr
        and "got worse by more than 1 with 'minilm-static'" in accepted.stderr
    )
    # the vectors built for the refused run were kept side by side: nothing embedded again
    assert re.search(r"reindexed \d+ chunks with minilm-static \(0 embedded\)", accepted.stdout)
    old, new = (json.loads((tmp_path / "reports" / f"{s}.json").read_text()) for s in ("old", "new"))
    assert (old["settings"]["embedder"], new["settings"]["embedder"]) == ("minilm-int8", "minilm-static")
    assert old["metrics"]["refusal_recall"] == 1.0 > new["metrics"]["refusal_recall"]
    kb = citeline.open(tmp_path / "index")
    info = kb.store.embedder_info()
    assert info is not None and info.name == "minilm-static"
    assert kb.check().ok
    stats = kb.store.stats()
    assert stats["vectors"] == stats["chunks"]  # the old vectors are gone, not mixed
    answer = kb.ask("How often are the data encryption keys rotated?", ADMIN)
    assert "180 days" in answer.answer and answer.citations and not answer.refused
    assert answer.citations[0].source == "docs/security-policy.md"
    kb.close()


def test_a_refused_swap_keeps_the_index_and_force_swaps_on_every_store(
    open_index: OpenIndex, tmp_path: Path
) -> None:
    # hashing: as wide as minilm-int8 (another width: test_reindex_to_another_width_and_back_on_every_store)
    shutil.copytree(SAMPLES, tmp_path / "docs")
    _golden_subset(tmp_path / "q.jsonl", ("q01", "q15", "q54", "q59", "q61"))
    rows = load_golden(tmp_path / "q.jsonl")
    kb = open_index("index")
    kb.add([tmp_path / "docs"], root=tmp_path)
    with pytest.raises(SwapRefusedError) as refused:
        compared_reindex(kb, "hashing", rows, Rollout(max_drop=0.0, docs_root=tmp_path / "docs"))
    comparison = refused.value.comparison
    assert isinstance(comparison, ShadowComparison) and not comparison.decision.accepted
    assert refused.value.exit_code == EXIT_REGRESSION
    assert kb.embedder.name == kb.store.embedder_info().name == "minilm-int8"  # type: ignore[union-attr]
    assert kb.check().ok and kb.traces() == []
    assert kb.search("web console port", ADMIN, k=1)[0].source == "docs/configuration-reference.md"

    result = compared_reindex(
        kb, "hashing", rows, Rollout(max_drop=0.0, force=True, docs_root=tmp_path / "docs")
    )
    assert result["embedded"] == 0 and not result["comparison"].decision.accepted
    assert kb.embedder.name == kb.store.embedder_info().name == "hashing"  # type: ignore[union-attr]
    assert kb.check().ok
    stats = kb.store.stats()
    assert stats["vectors"] == stats["chunks"]
    assert kb.search("web console port", ADMIN, k=1)[0].source == "docs/configuration-reference.md"


# (case, arguments, exit code, what stderr says)
BAD_COMPARES = [
    ("max-drop without compare", ["--max-drop", "0.1"], 2, "apply to --compare only"),
    ("no such question file", ["--compare", "missing.jsonl"], 2, "missing.jsonl"),
    ("malformed question file", ["--compare", "bad.jsonl"], 1, "bad.jsonl:2: missing 'answerable'"),
]


@pytest.mark.parametrize(
    ("args", "code", "said"), [b[1:] for b in BAD_COMPARES], ids=[b[0] for b in BAD_COMPARES]
)
def test_reindex_compare_bad_input(tmp_path: Path, args: list[str], code: int, said: str) -> None:
    (tmp_path / "bad.jsonl").write_text(
        '{"id": "a", "question": "Q?", "answerable": false}\n{"id": "b", "question": "Q?"}\n',
        encoding="utf-8",
    )
    proc = _citeline(tmp_path, "reindex", "--embedder", "hashing", *args)
    assert proc.returncode == code
    assert said in proc.stderr
    assert not (tmp_path / "index").exists()  # refused before the index was opened
