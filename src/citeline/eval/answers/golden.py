"""Golden rows: validating, reading and writing a golden set (the format is in the package docstring)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from citeline.errors import CitelineError


class GoldenFormatError(CitelineError):
    """A golden-set row is malformed; the message names the row and what to fix."""


def validate_row(row: Mapping[str, Any], where: str = "") -> dict[str, Any]:
    """Check one golden row and return it with defaults filled in; raises GoldenFormatError."""
    label = where or f"row {row.get('id', '?')!r}"
    if not isinstance(row, Mapping):
        raise GoldenFormatError(f"{label}: expected a JSON object.")
    for key in ("id", "question", "answerable"):
        if key not in row:
            raise GoldenFormatError(f"{label}: missing '{key}'.")
    if not isinstance(row["question"], str) or not row["question"].strip():
        raise GoldenFormatError(f"{label}: 'question' must be a non-empty string.")
    if not isinstance(row["answerable"], bool):
        raise GoldenFormatError(f"{label}: 'answerable' must be true or false.")
    answers = row.get("answers")
    if answers is not None and (
        not isinstance(answers, list) or not all(isinstance(a, str) for a in answers)
    ):
        raise GoldenFormatError(f"{label}: 'answers' must be a list of strings.")
    reference = row.get("reference")
    if reference is not None and not isinstance(reference, str):
        raise GoldenFormatError(f"{label}: 'reference' must be a string.")
    scope = row.get("scope")
    if scope is not None and (not isinstance(scope, str) or not scope.strip("/\\ ")):
        raise GoldenFormatError(f"{label}: 'scope' must be a folder path (relative to the documents folder).")
    evidence = row.get("evidence") or []
    if not isinstance(evidence, list):
        raise GoldenFormatError(f"{label}: 'evidence' must be a list.")
    clean = [_evidence_item(ev, f"{label}: evidence[{i}]") for i, ev in enumerate(evidence)]
    return {
        **row,
        "id": str(row["id"]),
        "answers": list(answers) if answers is not None else None,
        "reference": reference,
        "evidence": clean,
    }


def _evidence_item(ev: Any, label: str) -> dict[str, Any]:
    """One checked evidence item: its source, page and quote; raises GoldenFormatError."""
    if not isinstance(ev, Mapping):
        raise GoldenFormatError(f"{label} must be an object.")
    if "chunk_id" in ev or "chunk" in ev:
        raise GoldenFormatError(
            f"{label} names a chunk; chunk ids are not accepted (they change with "
            "chunking). Give the document 'source' and the 'quote' text instead."
        )
    source = ev.get("source")
    if not isinstance(source, str) or not source:
        raise GoldenFormatError(f"{label} needs a 'source' (document path).")
    page = ev.get("page")
    if page is not None and (isinstance(page, bool) or not isinstance(page, int) or page < 1):
        raise GoldenFormatError(f"{label}.page must be a positive integer or null.")
    quote = ev.get("quote")
    if quote is not None and (not isinstance(quote, str) or not quote.strip()):
        raise GoldenFormatError(f"{label}.quote must be non-empty text or null.")
    return {"source": source, "page": page, "quote": quote}


def load_golden(path: str | Path) -> list[dict[str, Any]]:
    """Read and validate a golden JSONL file."""
    rows: list[dict[str, Any]] = []
    p = Path(path)
    for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise GoldenFormatError(f"{p}:{n}: not valid JSON ({exc.msg}).") from exc
        rows.append(validate_row(data, f"{p}:{n}"))
    ids = [r["id"] for r in rows]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise GoldenFormatError(f"{p}: id {dup!r} appears more than once.")
    return rows


def write_golden(rows: Iterable[Mapping[str, Any]], path: str | Path) -> None:
    """Write golden rows as JSONL, one object a line."""
    Path(path).write_text(
        "".join(json.dumps(dict(r), ensure_ascii=False) + "\n" for r in rows), encoding="utf-8"
    )
