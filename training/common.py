"""Shared by the training-data scripts: the cache folder, the manual list, reserved packages, the
progress log."""

from __future__ import annotations

import fnmatch
import json
import os
import random
import re
import resource
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from citeline.eval import metrics

REPO = Path(__file__).resolve().parent.parent
MANUALS_TOML = Path(__file__).resolve().parent / "manuals.toml"
RESERVED_FILE = REPO / "evalsets" / "RESERVED"

#: Never used for anything, whatever evalsets/RESERVED says: PostgreSQL and R documentation are kept
#: for independent evaluation, Postfix is our golden evaluation set.
HARD_RESERVED = ("postgresql*", "r-doc*", "postfix", "postfix-doc", "postfix-*")

_PKG_TOKEN = re.compile(r"^[a-z0-9*?\[][a-z0-9.+*?\[\]-]*$")


class ReservedPackageError(ValueError):
    """A package that must never be used for training data."""


def cache_root() -> Path:
    base = os.environ.get("CITELINE_CACHE")
    return (Path(base).expanduser() if base else Path.home() / ".cache" / "citeline") / "train"


def read_reserved(path: Path = RESERVED_FILE) -> list[str]:
    """Package globs from evalsets/RESERVED (first token of each non-comment line), if it exists."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    globs = []
    for line in lines:
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        token = line.split()[0].strip(",;")
        if _PKG_TOKEN.match(token.lower()):
            globs.append(token.lower())
    return globs


def reserved_globs(path: Path = RESERVED_FILE) -> tuple[str, ...]:
    return tuple(dict.fromkeys([*HARD_RESERVED, *read_reserved(path)]))


def is_reserved(package: str, globs: tuple[str, ...] | None = None) -> bool:
    name = package.strip().lower()
    name = name.split("=", 1)[0].split(":", 1)[0]  # "pkg=1.0" or "pkg:amd64"
    globs = reserved_globs() if globs is None else globs
    return any(fnmatch.fnmatchcase(name, g) for g in globs)


def check_not_reserved(package: str, globs: tuple[str, ...] | None = None) -> None:
    if is_reserved(package, globs):
        raise ReservedPackageError(
            f"{package} is reserved for evaluation (PostgreSQL, R, Postfix or evalsets/RESERVED) and "
            "must never be used for training data"
        )


@dataclass(frozen=True)
class Manual:
    package: str
    version: str
    licence: str
    copyright: str
    what: str
    include: tuple[str, ...]
    exclude: tuple[str, ...] = ()
    render: str = ""
    split: str = ""
    max_files: int = 0
    sha256: str = ""
    extra: dict[str, object] = field(default_factory=dict)

    @property
    def root(self) -> Path:
        return cache_root() / "manuals" / self.package

    @property
    def stamp(self) -> Path:
        return self.root / f".extracted-{self.version.replace(':', '_')}"


def load_manuals(path: Path = MANUALS_TOML, globs: tuple[str, ...] | None = None) -> list[Manual]:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    manuals = []
    for entry in data.get("manual", []):
        known = {k: entry[k] for k in Manual.__dataclass_fields__ if k in entry and k != "extra"}
        for key in ("include", "exclude"):
            if key in known:
                known[key] = tuple(known[key])
        manual = Manual(**known, extra={k: v for k, v in entry.items() if k not in known})
        check_not_reserved(manual.package, globs)
        if manual.split not in ("", "train", "dev", "test"):
            raise ValueError(f"{manual.package}: split must be dev, test or empty, not {manual.split!r}")
        manuals.append(manual)
    return manuals


def _excluded(rel: str, patterns: tuple[str, ...]) -> bool:
    probe = "/" + rel
    return any(fnmatch.fnmatchcase(probe, "*/" + p.replace("**/", "*/").lstrip("/")) for p in patterns)


def manual_files(manual: Manual, seed: int = 13) -> list[Path]:
    """The manual's files (sorted; a seeded sample when ``max_files`` is set)."""
    found: set[Path] = set()
    for pattern in manual.include:
        found.update(p for p in manual.root.glob(pattern) if p.is_file())
    files = sorted(p for p in found if not _excluded(p.relative_to(manual.root).as_posix(), manual.exclude))
    if manual.max_files and len(files) > manual.max_files:
        files = sorted(random.Random(f"{seed}:{manual.package}").sample(files, manual.max_files))
    return files


def rendered_path(manual: Manual, man_file: Path) -> Path:
    """Where a man page rendered to text lives: <root>/_rendered/<name>.txt ("tmux.1.txt")."""
    name = man_file.name.removesuffix(".gz")
    return manual.root / "_rendered" / f"{name}.txt"


class Logger:
    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)

    def info(self, message: str) -> None:
        line = f"{time.strftime('%Y-%m-%d %H:%M:%S')} {message}"
        print(line, flush=True)
        with self.path.open("a", encoding="utf-8") as f:
            f.write(line + "\n")


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    rows = []
    with path.open(encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            try:
                rows.append(json.loads(line))
            except ValueError:
                continue  # a line cut by a kill mid-write
    return rows


def auroc(scores: list[float], labels: list[int]) -> float:
    """Area under the ROC curve (citeline.eval.metrics.auroc); NaN without both classes."""
    value = metrics.auroc(scores, labels)
    return float("nan") if value is None else value
