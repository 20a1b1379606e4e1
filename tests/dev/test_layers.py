"""The layer check: citeline's own tree holds its layers, and each kind of fault is named."""

from __future__ import annotations

from pathlib import Path

import pytest

from citeline.dev import layers

SRC = Path(layers.__file__).resolve().parents[2]
LOW_HIGH = (("low", ("citeline.low",)), ("high", ("citeline.high", "citeline")))


def test_the_tree_holds_its_layers() -> None:
    assert layers.check(SRC) == []
    assert layers.main([str(SRC)]) == 0


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in {"citeline/__init__.py": "", **files}.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        # a shared type above its user: named with its file, line and both layers
        (
            {
                "citeline/low.py": "x = 1\nfrom citeline.high import Thing\n",
                "citeline/high.py": "class Thing: ...\n",
            },
            ["citeline/low.py:2: citeline.low imports citeline.high: layer 'low' imports 'high' above it"],
        ),
        # an import inside a function or under TYPE_CHECKING climbs all the same
        (
            {
                "citeline/low.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import citeline.high\n",
                "citeline/high.py": "",
            },
            ["citeline/low.py:3: citeline.low imports citeline.high: layer 'low' imports 'high' above it"],
        ),
        # `from package import module` reaches the module
        (
            {
                "citeline/low.py": "def f():\n    from citeline.high import mod\n",
                "citeline/high/__init__.py": "",
                "citeline/high/mod.py": "",
            },
            [
                "citeline/low.py:2: citeline.low imports citeline.high.mod: layer 'low' imports 'high' above it"
            ],
        ),
        # a circle inside one layer, and a relative import in it
        (
            {
                "citeline/high/__init__.py": "",
                "citeline/high/a.py": "from citeline.high import b\n",
                "citeline/high/b.py": "def f():\n    from . import a\n",
            },
            [
                "import circle of 2 modules: citeline.high.a, citeline.high.b",
                "  citeline/high/a.py:1: citeline.high.a imports citeline.high.b",
                "  citeline/high/b.py:2: citeline.high.b imports citeline.high.a",
            ],
        ),
        # downward imports are fine
        ({"citeline/low.py": "", "citeline/high.py": "from citeline.low import x\n"}, []),
    ],
)
def test_faults_are_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files: dict[str, str], expected: list[str]
) -> None:
    monkeypatch.chdir(_tree(tmp_path, files))
    assert layers.check(tmp_path, LOW_HIGH, known=()) == expected


def test_an_unplaced_module_and_a_stale_known_circle_fail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(_tree(tmp_path, {"citeline/low.py": ""}))
    only_low = (("low", ("citeline.low",)),)
    gone = frozenset({"citeline.low", "citeline.x"})
    assert layers.check(tmp_path, only_low, known=(gone,)) == [
        "citeline: no layer names this module; add it to LAYERS",
        "KNOWN_CIRCLES: no longer a circle: citeline.low, citeline.x",
    ]
