"""The saved dense matrix: mapped back exactly as saved, and any other file is ignored."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from citeline.index.sqlite import dense
from citeline.index.sqlite.dense import DenseMatrix, load_saved, save

KEY = "7:minilm-int8:4:3:12:0"


def matrix(rows: int = 3, dim: int = 4) -> DenseMatrix:
    rng = np.random.default_rng(rows)
    return DenseMatrix(np.arange(10, 10 + rows, dtype=np.int64), rng.random((rows, dim), dtype=np.float32))


def test_saved_and_mapped_back(tmp_path: Path) -> None:
    path = tmp_path / dense.SAVED_NAME
    original = matrix()
    save(path, KEY, original)
    found = load_saved(path, KEY)
    assert found is not None
    assert np.array_equal(found.rowids, original.rowids) and np.array_equal(found.matrix, original.matrix)
    assert found.matrix.dtype == np.float32 and found.matrix.shape == (3, 4)
    assert not found.matrix.flags.writeable  # a mapping of the file: nobody writes through it
    assert found.search(original.matrix[1], 1) == original.search(original.matrix[1], 1)


def test_an_empty_matrix_round_trips(tmp_path: Path) -> None:
    path = tmp_path / dense.SAVED_NAME
    save(path, KEY, DenseMatrix(np.zeros(0, dtype=np.int64), np.zeros((0, 4), dtype=np.float32)))
    found = load_saved(path, KEY)
    assert found is not None and len(found) == 0 and found.search(np.ones(4, dtype=np.float32), 3) == []


def truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:-4])


def grow(path: Path) -> None:
    path.write_bytes(path.read_bytes() + b"\0" * 16)


def other_magic(path: Path) -> None:
    path.write_bytes(b"X" + path.read_bytes()[1:])


def garbage(path: Path) -> None:
    path.write_bytes(b"not a matrix file")


def bad_header(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(dense.MAGIC + b"{not json\n" + data[len(dense.MAGIC) :])


@pytest.mark.parametrize("damage", [truncate, grow, other_magic, garbage, bad_header])
def test_a_damaged_file_is_ignored(tmp_path: Path, damage: Callable[[Path], None]) -> None:
    path = tmp_path / dense.SAVED_NAME
    save(path, KEY, matrix())
    damage(path)
    assert load_saved(path, KEY) is None


def test_another_key_or_no_file_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / dense.SAVED_NAME
    assert load_saved(path, KEY) is None
    save(path, KEY, matrix())
    assert load_saved(path, KEY.replace("7:", "8:", 1)) is None


def test_saving_removes_the_old_format(tmp_path: Path) -> None:
    (tmp_path / dense.LEGACY_NAME).write_bytes(b"an npz of before")
    save(tmp_path / dense.SAVED_NAME, KEY, matrix())
    assert not (tmp_path / dense.LEGACY_NAME).exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == [dense.SAVED_NAME]  # no temporary file left


def test_a_mapping_survives_the_file_being_replaced(tmp_path: Path) -> None:
    path = tmp_path / dense.SAVED_NAME
    first = matrix(3)
    save(path, KEY, first)
    found = load_saved(path, KEY)
    save(path, "another key", matrix(5))  # another process saves after a write: a rename
    assert found is not None and np.array_equal(found.matrix, first.matrix)
