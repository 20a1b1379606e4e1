"""Where the shared evaluation datasets live, and what a test does when one is missing.

The datasets sit in `shared/datasets/<name>` beside the repository checkout (not inside it). On a
developer machine a missing dataset skips the test; under CI (CI=true) it fails it, so a broken
checkout of shared/ can't pass as green.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

SHARED_DATASETS = Path(__file__).resolve().parents[1].parent / "shared" / "datasets"


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() == "true"


def shared_dataset(name: str) -> Path:
    """Path of shared dataset `name`; skips the calling test if absent, or fails it when CI=true."""
    path = SHARED_DATASETS / name
    if path.is_dir():
        return path
    reason = (
        f"shared dataset '{name}' not found at {path}; "
        "it is expected in shared/datasets beside the repository checkout"
    )
    if in_ci():
        pytest.fail(f"{reason} (CI=true, so a missing dataset is an error)", pytrace=False)
    pytest.skip(reason)
