"""Stage 1 of the training-data builder (build_data.py): the units of the third-party manuals.

Every manual file of training/manuals.toml is parsed with citeline's own parser and cut into
sentences, table rows and list items, each with its heading trail, plus windows of two adjacent
units of one section; ``stage_units`` writes them to ``<out>/units.jsonl``. Also the small pure
helpers every stage shares: seeded randomness, the split of a document, the model's input text.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from training.common import Logger, Manual, check_not_reserved, manual_files, rendered_path

UNIT_KINDS = ("sentence", "row", "item")

# ============================================================================ small pure helpers


def stable_hash(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")


def rng_for(seed: int, *key: object) -> random.Random:
    return random.Random(f"{seed}:" + ":".join(str(k) for k in key))


def split_of(doc: str, seed: int, pinned: str = "", dev: float = 0.1, test: float = 0.1) -> str:
    """train/dev/test for a whole document, from a hash of its id (a pinned manual wins)."""
    if pinned:
        return pinned
    x = stable_hash(f"{seed}:split:{doc}") / 2**64
    if x < test:
        return "test"
    if x < test + dev:
        return "dev"
    return "train"


def prefix_of(title: str, trail: Sequence[str]) -> str:
    """The heading context of a unit as the models see it: the last two headings, else the title."""
    parts = [" ".join(t.split()) for t in trail if t.strip()][-2:]
    return " > ".join(parts) if parts else (title or "")


def model_input(prefix: str, text: str) -> str:
    """The ``b`` side of a pair: "heading trail: unit text"."""
    text = " ".join(text.split())
    return f"{prefix}: {text}" if prefix else text


# ============================================================================ stage 1: units


@dataclass
class Unit:
    id: str
    doc: str
    manual: str
    title: str
    trail: tuple[str, ...]
    section: str
    kind: str
    text: str
    start: int
    end: int
    members: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        d = {
            "id": self.id,
            "doc": self.doc,
            "manual": self.manual,
            "title": self.title,
            "trail": list(self.trail),
            "section": self.section,
            "kind": self.kind,
            "text": self.text,
            "start": self.start,
            "end": self.end,
        }
        if self.members:
            d["members"] = list(self.members)
        return d

    @staticmethod
    def from_json(d: dict[str, Any]) -> Unit:
        return Unit(
            d["id"],
            d["doc"],
            d["manual"],
            d["title"],
            tuple(d["trail"]),
            d["section"],
            d["kind"],
            d["text"],
            d["start"],
            d["end"],
            tuple(d.get("members", ())),
        )

    @property
    def b(self) -> str:
        return model_input(prefix_of(self.title, self.trail), self.text)


_MAN_HEADER = re.compile(r"^([A-Z][A-Z0-9 ,/&()'-]{2,60})$", re.MULTILINE)


def _man_sections(text: str) -> list[tuple[int, str]]:
    return [(m.start(), m.group(1).strip()) for m in _MAN_HEADER.finditer(text)]


def doc_units(manual: Manual, path: Path, doc_id: str) -> list[Unit]:
    """Units of one file: sentences, rows and items of its text blocks, plus 2-unit windows."""
    from citeline.answer.units import passage_units
    from citeline.ingest.registry import parser_for

    fake = (
        path if path.suffix.lower() in (".html", ".htm", ".pdf", ".txt", ".md") else path.with_suffix(".html")
    )
    doc = parser_for(fake).parse(path.read_bytes(), fake)
    headers = _man_sections(doc.text) if doc.format == "text" else []
    units: list[Unit] = []
    windows: list[Unit] = []
    prev: Unit | None = None
    prev_block = -2
    for bi, block in enumerate(doc.blocks):
        if block.kind not in ("paragraph", "list", "table"):
            prev = None
            continue
        if bi != prev_block + 1:
            prev = None
        prev_block = bi
        for u in passage_units(doc.text[block.start : block.end], block.start):
            if u.kind not in UNIT_KINDS or len(u.text.split()) < 3:
                prev = None
                continue
            if headers:
                before = [h for pos, h in headers if pos <= u.start]
                section = before[-1] if before else ""
            else:
                section = " > ".join(block.heading_trail)
            unit = Unit(
                id=f"{doc_id}#{len(units)}",
                doc=doc_id,
                manual=manual.package,
                title=doc.title,
                trail=tuple(block.heading_trail),
                section=section,
                kind=u.kind,
                text=u.text,
                start=u.start,
                end=u.end,
            )
            units.append(unit)
            if prev is not None and prev.section == unit.section:
                text = f"{prev.text} {unit.text}"
                if len(text.split()) <= 90:
                    windows.append(
                        Unit(
                            id=f"{doc_id}#w{len(windows)}",
                            doc=doc_id,
                            manual=manual.package,
                            title=doc.title,
                            trail=unit.trail,
                            section=unit.section,
                            kind="window",
                            text=text,
                            start=prev.start,
                            end=unit.end,
                            members=(prev.id, unit.id),
                        )
                    )
            prev = unit
    return units + windows


def manual_documents(manual: Manual) -> Iterator[tuple[str, Path]]:
    for f in manual_files(manual):
        path = rendered_path(manual, f) if manual.render == "man" else f
        rel = path.relative_to(manual.root).as_posix()
        yield f"{manual.package}/{rel}", path


def stage_units(out: Path, manuals: Sequence[Manual], log: Logger) -> Path:
    target = out / "units.jsonl"
    manifest = hashlib.sha256(
        json.dumps([[m.package, m.version, m.include, m.exclude, m.max_files] for m in manuals]).encode()
    ).hexdigest()[:16]
    stamp = out / "units.done"
    if target.is_file() and stamp.is_file() and stamp.read_text().strip() == manifest:
        log.info(f"units: cached ({target})")
        return target
    tmp = target.with_suffix(".tmp")
    counts: Counter[str] = Counter()
    start = time.perf_counter()
    with tmp.open("w", encoding="utf-8") as f:
        for manual in manuals:
            check_not_reserved(manual.package)
            if not manual.stamp.is_file():
                raise SystemExit(f"{manual.package} is not fetched: run python training/fetch_manuals.py")
            n_docs = 0
            for doc_id, path in manual_documents(manual):
                try:
                    units = doc_units(manual, path, doc_id)
                except Exception as exc:  # a file a parser refuses is skipped, and said so
                    log.info(f"units: skipped {doc_id}: {type(exc).__name__}: {exc}"[:300])
                    continue
                n_docs += 1
                for u in units:
                    f.write(json.dumps(u.to_json(), ensure_ascii=False) + "\n")
                    counts[f"{manual.package}:{'window' if u.kind == 'window' else 'unit'}"] += 1
            log.info(
                f"units: {manual.package}: {n_docs} documents, {counts[manual.package + ':unit']} units, "
                f"{counts[manual.package + ':window']} windows ({time.perf_counter() - start:.0f}s)"
            )
    os.replace(tmp, target)
    stamp.write_text(manifest + "\n")
    return target


def load_units(path: Path) -> list[Unit]:
    with path.open(encoding="utf-8") as f:
        return [Unit.from_json(json.loads(line)) for line in f]
