"""Adding files again: what the store holds for them, looked up once, and when a file may be taken
as unchanged without reading it; reconciling a folder whose files are gone.

A folder added again costs one stat per file and a dictionary lookup: the stored state of every
document of the collection (``Store.stored_files``: id, source, content hash, size, mtime, when it
was indexed, pipeline, path, tags, ACL) is read in a few queries up front, whatever the number of
files, instead of a query per group of files plus a second full read to reconcile the folder.
Files named one by one are looked up a group at a time (``Store.get_documents``), so adding one
file to a large collection does not read the whole collection. In a process that adds again and
again (a script, the server, a watcher), that read is kept and reused while nothing was written to
the store since (``StoredFilesMemo``), so the stats are most of what a re-add costs.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable, Iterator
from typing import TYPE_CHECKING

from citeline.index.base import Store, StoredFile
from citeline.ingest.embed import Progress
from citeline.ingest.files import RACY_S as RACY_S  # a racy file is read again (stamp_unchanged)
from citeline.ingest.files import FileList, FolderWalk, Sources, Stamp
from citeline.types import document_id_for

if TYPE_CHECKING:
    from citeline.ingest.report import IngestReport


class StoredFilesMemo:
    """The last whole read of a collection's stored files, kept between adds in one process: while
    nothing was written to the store since (``Store.write_mark``), adding the folder again does
    not read them again, and an add's own writes are read back into it (:meth:`written`). The
    dictionary handed out is shared: never changed by its readers."""

    def __init__(self) -> None:
        self._last: tuple[tuple[object, int], str, dict[str, StoredFile]] | None = None
        self._paths: tuple[dict[str, StoredFile], frozenset[str]] | None = None

    def file_paths(self, by_source: dict[str, StoredFile]) -> frozenset[str]:
        """The paths of the files ``by_source``'s documents were read from (uploads have none),
        worked out once for each stored state handed out."""
        if self._paths is None or self._paths[0] is not by_source:
            paths = frozenset(f.path for f in by_source.values() if f.path is not None and not f.uploaded)
            self._paths = (by_source, paths)
        return self._paths[1]

    def read(self, store: Store, collection: str) -> dict[str, StoredFile]:
        mark = store.write_mark()  # taken before reading: a write after it moves the next mark
        last = self._last
        if mark is not None and last is not None and last[0] == mark and last[1] == collection:
            return last[2]
        by_source = {f.source: f for f in store.stored_files(collection)}
        self._last = None if mark is None else (mark, collection, by_source)
        return by_source

    def written(
        self, store: Store, collection: str, sources: Collection[str], start: tuple[object, int] | None
    ) -> None:
        """After an add to ``collection`` that began at the store's mark ``start`` and whose only
        writes were the documents of ``sources`` (written, updated or removed): read those back
        into the memo when it held the store as of ``start`` and no other connection wrote since
        (else it is dropped, and the next add reads everything again)."""
        last = self._last
        mark = store.write_mark()
        if last is None or mark is None or last[1] != collection or last[0] != start or mark[0] != last[0][0]:
            self._last = None
            return
        if mark == last[0]:
            return
        ids = {document_id_for(collection, s): s for s in sources}
        if len(ids) * 2 > len(last[2]):  # most of the collection: one whole read is cheaper
            self._last = None
            self.read(store, collection)
            return
        docs = store.get_documents(list(ids))
        by_source = dict(last[2])
        for doc_id, source in ids.items():
            doc = docs.get(doc_id)
            if doc is None:
                by_source.pop(source, None)
            else:
                by_source[source] = StoredFile.of(doc)
        self._last = (mark, collection, by_source)


class KnownFiles:
    """The stored state of the files being added to ``collection``, by source. ``whole``: every
    document of the collection, read at once (a folder is being added: reconciling it reads them
    all anyway), through ``memo`` when given; else those of the sources passed to :meth:`look_up`."""

    def __init__(
        self, store: Store, collection: str, *, whole: bool, memo: StoredFilesMemo | None = None
    ) -> None:
        self.store = store
        self.collection = collection
        self.whole = whole
        self.by_source: dict[str, StoredFile] = (
            (memo or StoredFilesMemo()).read(store, collection) if whole else {}
        )

    def look_up(self, sources: Iterable[str]) -> None:
        """Fetch the documents of ``sources`` (one query a group; nothing to do when whole)."""
        if self.whole:
            return
        ids = [document_id_for(self.collection, s) for s in sources]
        self.by_source = {d.source: StoredFile.of(d) for d in self.store.get_documents(ids).values()}

    def get(self, source: str) -> StoredFile | None:
        return self.by_source.get(source)

    def fresh(self, source: str) -> StoredFile | None:
        """The document of ``source`` as stored now (after this run wrote it)."""
        return stored_file(self.store, document_id_for(self.collection, source))


def stored_file(store: Store, document_id: str) -> StoredFile | None:
    """One document's stored state, read now."""
    doc = store.get_document(document_id)
    return None if doc is None else StoredFile.of(doc)


def stamp_unchanged(stored: StoredFile, absolute: str, stamp: Stamp, signature: str, limit: int) -> bool:
    """True when the regular file at ``absolute`` may be taken as unchanged without reading it:
    the same pipeline, path, size and modification time (``stamp``) as its document, and the
    document was indexed more than RACY_S after that time (a file changed again within the
    clock's granularity is read)."""
    size, mtime = stamp
    return (
        stored.pipeline == signature
        and stored.path == absolute
        and size == stored.size
        and size <= limit
        and mtime == stored.mtime
        and stored.updated_at - stored.mtime > RACY_S
    )


def pass_changed(
    found: Iterable[FileList],
    known: KnownFiles,
    sources: Sources,
    done: set[str],
    report: IngestReport,
    progress: Progress | None,
    *,
    signature: str,
    limit: int,
    tags: dict[str, str],
    acl: tuple[str, ...],
) -> Iterator[FileList]:
    """The files of ``found`` (as ``iter_file_lists`` gives them) that need a closer look.
    A file a folder's walk stat()ed whose stored document has the same stamp (``stamp_unchanged``,
    written out here), tags and ACL is counted unchanged here (and its source put in ``done``),
    in one tight loop: a folder added again costs little more than its stats. Only for a whole
    read of the collection (``known.whole``)."""
    if not known.whole:
        yield from found
        return
    by_source = known.by_source
    unchanged = report.unchanged
    prefix = sources.prefix if os.sep == "/" else None  # under it, a source is the rest of the path
    cut = len(sources.prefix)
    for files in found:
        slow = FileList([], [], [])
        for path, size, mtime in zip(files.paths, files.sizes, files.mtimes, strict=True):
            if size is not None and mtime is not None:
                source = path[cut:] if prefix is not None and path.startswith(prefix) else sources(path)
                stored = by_source.get(source)
                if (  # stamp_unchanged, inline: no tuple per file
                    stored is not None
                    and stored.tags == tags
                    and stored.acl == acl
                    and stored.pipeline == signature
                    and stored.path == path
                    and size == stored.size
                    and size <= limit
                    and mtime == stored.mtime
                    and stored.updated_at - stored.mtime > RACY_S
                    and source not in done
                ):
                    done.add(source)
                    unchanged.append(source)
                    continue
            slow.paths.append(path)
            slow.sizes.append(size)
            slow.mtimes.append(mtime)
        if progress and len(slow.paths) < len(files.paths):
            progress("file", len(files.paths) - len(slow.paths))
        if slow.paths:
            yield slow


def gone_documents(
    walk: FolderWalk, stored: Iterable[StoredFile], processed: Collection[str] = ()
) -> tuple[list[StoredFile], int]:
    """(the documents of ``walk.folder`` whose files are gone, how many documents the folder has).

    A document read from a file under the folder is gone when its file was not seen by the walk,
    is not under a subfolder that could not be listed, and does not exist. Uploads are never
    gone, nor a document whose source was added in this run (``processed``: its file was just
    seen, even if the document still names another path)."""
    prefix = walk.folder.rstrip(os.sep) + os.sep
    docs = [
        (f.path, f) for f in stored if f.path is not None and f.path.startswith(prefix) and not f.uploaded
    ]
    if not docs:
        return [], 0
    blocked = tuple(u.rstrip(os.sep) + os.sep for u in walk.unreadable)
    gone = [
        f
        for path, f in docs
        if path not in walk.seen
        and f.source not in processed
        and not path.startswith(blocked)
        and not os.path.lexists(path)
    ]
    return gone, len(docs)


def reconcile(
    store: Store,
    walk: FolderWalk,
    known: KnownFiles,
    memo: StoredFilesMemo,
    report: IngestReport,
    keep_missing: bool,
    prune: bool,
    processed: Collection[str],
) -> None:
    """Remove the documents of ``walk.folder`` whose files are gone (``gone_documents``), from
    ``known``, the whole collection as read before the add (``processed``: its sources added in
    this run). Nothing is removed when the folder holds no file or could not be listed; more than
    half of its documents only with ``prune``; ``keep_missing`` reports them as missing instead."""
    if walk.seen and not walk.unreadable and not memo.file_paths(known.by_source) - walk.seen:
        return  # every stored document's file was seen: none is gone (a set operation, no loop)
    gone, count = gone_documents(walk, known.by_source.values(), processed)
    if not count:
        return
    if walk.folder in walk.unreadable or not walk.seen:
        report.notes.append(
            f"{walk.folder}: {'could not be listed' if walk.folder in walk.unreadable else 'holds no file'}"
            f"; none of its {count} documents was removed"
        )
        return
    if not gone:
        return
    if keep_missing or (len(gone) * 2 > count and not prune):
        report.missing.extend(d.source for d in gone)
        if not keep_missing:
            report.prune_needed = True
            report.notes.append(
                f"{walk.folder}: the files of {len(gone)} of its {count} documents are gone; removing "
                "more than half of a folder's documents needs --prune (or --keep-missing to keep them)"
            )
        return
    for doc in gone:
        store.remove_document(doc.id)
        report.removed.append(doc.source)
