"""What an add did: the files added, updated, unchanged, failed, removed, skipped or kept, and the
seconds each stage took."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from citeline.jsonable import Jsonable, json_spec, omit_always

STAGES = ("parse", "chunk", "embed", "write")


def _reasons_json(pairs: list[tuple[str, str]]) -> list[dict[str, str]]:
    return [{"source": s, "reason": r} for s, r in pairs]


def _reasons_of(items: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(i["source"], i["reason"]) for i in items]


_REASONS = json_spec(encode=_reasons_json, decode=_reasons_of)
#: working state of the add, not part of what ``add --json`` shows
_NOT_SHOWN = json_spec(omit=omit_always)


@dataclass
class IngestReport(Jsonable):
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list, metadata=_REASONS)
    #: documents removed: their files are gone from a folder added again (or `citeline remove`)
    removed: list[str] = field(default_factory=list)
    #: what was not read and is no failure (the exit code stays 0): a folder's entries that are not
    #: regular files (pipes, sockets, devices, link loops, links to folders: never opened) or are of
    #: an unsupported type, and files with no text to index (empty, navigation only)
    skipped: list[tuple[str, str]] = field(default_factory=list, metadata=_REASONS)
    #: documents whose files are gone but that were kept (--keep-missing, or more than half: --prune)
    missing: list[str] = field(default_factory=list)
    #: unchanged documents whose tags or ACL were written (they are in ``unchanged`` too)
    retagged: list[str] = field(default_factory=list)
    #: paths given that do not exist (a usage error: exit code 2)
    not_found: list[str] = field(default_factory=list, metadata=_NOT_SHOWN)
    #: why something was not done (kept documents, an empty or unreadable folder)
    notes: list[str] = field(default_factory=list)
    #: True when documents whose files are gone were kept only because removing them needs --prune
    prune_needed: bool = field(default=False, metadata=_NOT_SHOWN)
    #: documents another writer added or removed between this add's look-up and its write (two adds
    #: of one folder at once): counted as what this add did when it wrote (it replaced one: updated)
    meanwhile: list[str] = field(default_factory=list, metadata=_NOT_SHOWN)
    chunks_embedded: int = 0
    chunks_written: int = 0
    #: wall seconds per stage: parse, chunk (semantic chunking's embedding included), embed, write
    seconds: dict[str, float] = field(
        default_factory=lambda: dict.fromkeys(STAGES, 0.0), metadata=json_spec(digits=3)
    )

    def summary(self) -> str:
        line = (
            f"{len(self.added)} added, {len(self.updated)} updated, {len(self.unchanged)} unchanged, "
            f"{len(self.failed)} failed"
        )
        if self.removed:
            line += f", {len(self.removed)} removed"
        if self.skipped:
            line += f", {len(self.skipped)} skipped"
        if self.missing:
            line += f", {len(self.missing)} missing (kept)"
        return line

    def note_meanwhile(self) -> None:
        """Say (once, in ``notes``) that other writers changed documents while this add ran."""
        if self.meanwhile:
            n = len(self.meanwhile)
            self.notes.append(
                f"{n} document{'s' if n != 1 else ''} changed in the index while this add ran (another "
                "writer added or removed them between this add's look-up and its write): each is counted "
                "as what this add did when it wrote it (replaced: updated; written anew: added)"
            )
