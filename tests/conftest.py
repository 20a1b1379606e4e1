"""Shared fixtures: a real index over the bundled samples, built once per test process."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

import citeline
from citeline.kb import KnowledgeBase
from citeline.retrieval.filters import Principal

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples"
QUESTIONS = ROOT / "tests" / "data" / "questions.jsonl"
#: the principal of tests that read everything (the command line's local administrator)
ADMIN = Principal.local_admin()


@pytest.fixture(scope="session")
def samples_kb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KnowledgeBase]:
    """An index of samples/ (read-mostly: tests that change documents use their own index)."""
    folder = tmp_path_factory.mktemp("samples-index")
    docs = folder / "samples"
    shutil.copytree(SAMPLES, docs)
    kb = citeline.open(folder / "index")
    report = kb.add([docs])
    assert not report.failed, report.failed
    yield kb
    kb.close()


@pytest.fixture()
def docs_dir(tmp_path: Path) -> Path:
    """A small, writable folder of documents for tests that edit or remove files."""
    d = tmp_path / "docs"
    d.mkdir()
    (d / "alpha.md").write_text(
        "# Alpha Guide\n\n## Setup\n\nInstall the alpha package with the installer. It takes two minutes.\n\n"
        "## Limits\n\nThe alpha queue holds at most 900 jobs. Older jobs are dropped first.\n\n"
        "## Errors\n\nError ZX-7781 means the alpha queue is full. Drain it with `alpha drain`.\n",
        encoding="utf-8",
    )
    (d / "beta.md").write_text(
        "# Beta Handbook\n\n## Overview\n\nBeta replicates tables between regions every five minutes.\n\n"
        "## Security\n\nBeta encrypts every replica with a per-region key. Keys rotate monthly.\n",
        encoding="utf-8",
    )
    (d / "notes.txt").write_text(
        "Team notes\n\nThe gamma service restarts nightly at 02:00 UTC.\n\nNobody owns the delta service yet.\n",
        encoding="utf-8",
    )
    return d


@pytest.fixture()
def kb(tmp_path: Path) -> Iterator[KnowledgeBase]:
    base = citeline.open(tmp_path / "index")
    yield base
    base.close()
