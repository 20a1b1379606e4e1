"""The Store contract, run against every store backend (the PostgreSQL store joins STORES).

Each test builds its documents, chunks and vectors by hand, so what it checks is the store alone:
atomic replacement, filters and ACLs applied before ranking, cached vectors, traces, settings and
access data.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from citeline.errors import EmbedderMismatchError
from citeline.filters import PUBLIC, Filter, Principal
from citeline.index.base import ApiKey, DocumentWrite, Store
from citeline.settings import Settings
from citeline.trace import Candidates, Check, Trace, TracedHit
from citeline.types import Chunk, Document, document_id_for, text_hash
from citeline.wiring import open_store

#: "sqlite-engines": the embedded store with its derived engines (tantivy, faiss) at any size
STORES = ["sqlite", "sqlite-engines", "postgresql"]
DIM = 8
ADMIN = Filter.admin()
ALICE = Principal(user="alice", groups=("eng",))
BOB = Principal(user="bob", groups=("finance",))


@pytest.fixture(params=STORES)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    sqlite = request.param.startswith("sqlite")
    location = str(tmp_path / "index") if sqlite else request.getfixturevalue("pg_url")
    s = open_store(location)
    if request.param == "sqlite-engines":
        s.configure(Settings(engine_min_chunks=0))
        caplog = request.getfixturevalue("caplog")
    s.bind_embedder("test-embedder", "1", DIM)
    yield s
    s.close()
    if request.param == "sqlite-engines":  # the engines answered: SQLite never stood in for them
        assert not [r.getMessage() for r in caplog.records if "engines" in r.getMessage()]


def _vector(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
    return v / np.linalg.norm(v)


def put(
    store: Store,
    source: str,
    paragraphs: list[str],
    *,
    acl: tuple[str, ...] = (),
    tags: dict[str, str] | None = None,
    collection: str = "default",
    fmt: str = "markdown",
    seed: int = 0,
    original: bytes | None = None,
    metadata: dict[str, object] | None = None,
) -> Document:
    doc_id = document_id_for(collection, source)
    text = "\n\n".join(paragraphs)
    chunks, vectors, pos = [], {}, 0
    for i, para in enumerate(paragraphs):
        index_text = f"{source} > {para}"
        chunks.append(
            Chunk(
                f"{doc_id[:12]}-{i:012d}",
                doc_id,
                i,
                pos,
                pos + len(para),
                para,
                index_text,
                ("H",),
                "paragraph",
            )
        )
        vectors[text_hash(index_text)] = _vector(seed * 100 + i)
        pos += len(para) + 2
    doc = Document(
        id=doc_id,
        source=source,
        title=source,
        format=fmt,
        content_hash=f"hash-{source}-{seed}",
        size=len(text),
        mtime=1_700_000_000.0 + seed,
        page_count=None,
        tags=tags or {},
        acl=acl,
        metadata=dict(metadata or {}),
        collection=collection,
    )
    store.replace_document(doc, text, chunks, vectors, original=original)
    return doc


def test_documents_round_trip_with_text_spans_and_original(store: Store) -> None:
    doc = put(store, "guides/a.md", ["Alpha first paragraph.", "Alpha second one."], original=b"# raw bytes")
    got = store.get_document(doc.id)
    assert got is not None and got.source == "guides/a.md" and got.collection == "default"
    assert store.find_document("guides/a.md") == got
    assert store.find_document("guides/a.md", collection="other") is None
    text = store.document_text(doc.id)
    chunks = store.chunks(store.document_chunks(doc.id))
    for chunk, owner in chunks.values():
        assert text[chunk.start : chunk.end] == chunk.text and owner.id == doc.id
    assert store.original(doc.id) == b"# raw bytes"
    assert store.count_documents(ADMIN) == 1 and store.count_chunks(ADMIN) == 2


def test_get_documents_looks_up_many_at_once_with_tags_and_acl(store: Store) -> None:
    docs = [
        put(store, f"d{i}.md", [f"paragraph {i}"], tags={"team": f"t{i}"}, acl=("group:b", "group:a"), seed=i)
        for i in range(3)
    ]
    ids = [d.id for d in docs] + ["no-such-document", docs[0].id]
    got = store.get_documents(ids)
    assert set(got) == {d.id for d in docs}  # absent ids are left out, repeats once
    for d in docs:
        assert got[d.id] == store.get_document(d.id)
        assert got[d.id].tags == d.tags and got[d.id].acl == ("group:a", "group:b")
        assert got[d.id].mtime == d.mtime and got[d.id].updated_at > 0
    assert store.get_documents([]) == {}


def test_stored_files_are_what_re_adding_compares_with_for_a_whole_collection(store: Store) -> None:
    read = put(
        store,
        "a.md",
        ["alpha"],
        tags={"team": "ops", "tier": "1"},
        acl=("group:b", "group:a"),
        metadata={"path": "/docs/a.md", "pipeline": "5:256:32", "title_from": "h1"},
    )
    upload = put(store, "b.md", ["beta"], seed=1, metadata={"uploaded_by": None, "path": 7})
    put(store, "a.md", ["other collection"], seed=2, collection="other")
    got = {f.source: f for f in store.stored_files("default")}
    assert set(got) == {"a.md", "b.md"}  # only the collection asked for
    a, b = got["a.md"], got["b.md"]
    stored = store.get_document(read.id)
    assert stored is not None
    assert (a.id, a.content_hash, a.size, a.mtime) == (read.id, read.content_hash, read.size, read.mtime)
    assert a.updated_at == stored.updated_at > 0
    assert (a.path, a.pipeline, a.uploaded) == ("/docs/a.md", "5:256:32", False)
    assert dict(a.tags) == {"team": "ops", "tier": "1"} and a.acl == ("group:a", "group:b")
    assert b.id == upload.id and b.uploaded and b.path is None and b.pipeline is None  # path not a string
    assert dict(b.tags) == {} and b.acl == ()
    assert store.stored_files("nothing-here") == []


def test_a_write_mark_moves_with_every_write_from_anywhere(store: Store) -> None:
    doc = put(store, "a.md", ["alpha"])
    mark = store.write_mark()
    if mark is None:  # a store that cannot tell: nothing read is ever reused
        return
    store.documents(ADMIN)  # reads leave it where it is
    assert store.write_mark() == mark
    store.update_access(doc.id, {"team": "ops"}, ())
    after_own = store.write_mark()
    assert after_own != mark
    other = open_store(store.location)  # another connection, as another process would have
    try:
        other.remove_document(doc.id)
    finally:
        other.close()
    assert store.write_mark() != after_own


def test_replace_is_whole_and_collections_keep_same_named_files_apart(store: Store) -> None:
    old = put(store, "a.md", ["one", "two", "three"])
    old_chunks = set(store.document_chunks(old.id))
    new = put(store, "a.md", ["only one now"], seed=5)
    assert new.id == old.id
    assert not old_chunks & set(store.document_chunks(new.id)) or len(store.document_chunks(new.id)) == 1
    assert len(store.document_chunks(new.id)) == 1
    other = put(store, "a.md", ["someone else's a.md"], collection="uploads/bob")
    assert other.id != new.id and store.count_documents(ADMIN) == 2
    store.remove_document(new.id)
    assert store.get_document(new.id) is None and store.count_documents(ADMIN) == 1
    assert store.document_chunks(new.id) == []


def test_acl_and_metadata_filters_apply_before_ranking(store: Store) -> None:
    put(store, "open.md", ["shared cafeteria menu"], seed=1)
    put(store, "eng.md", ["eng cafeteria notes"], acl=("group:eng",), seed=2)
    put(store, "fin.md", ["finance cafeteria budget"], acl=("group:finance",), seed=3, tags={"team": "fin"})
    put(store, "pub.md", ["public cafeteria hours"], acl=(PUBLIC,), seed=4, fmt="html")

    def visible(flt: Filter) -> set[str]:
        return {d.source for d in store.documents(flt)}

    assert visible(ADMIN) == {"open.md", "eng.md", "fin.md", "pub.md"}
    assert visible(Filter(principal=ALICE)) == {"open.md", "eng.md", "pub.md"}
    assert visible(Filter(principal=BOB)) == {"open.md", "fin.md", "pub.md"}
    assert visible(Filter(principal=Principal.anonymous())) == {"pub.md"}
    assert visible(Filter(principal=Principal.local_admin(), tags={"team": "fin"})) == {"fin.md"}
    assert visible(Filter(principal=Principal.local_admin(), formats=("html",))) == {"pub.md"}
    assert visible(Filter(principal=BOB, source_prefix="e")) == set()
    for flt in (Filter(principal=ALICE), Filter(principal=Principal.anonymous())):
        allowed = {d.id for d in store.documents(flt)}
        keyword = store.keyword_search("cafeteria", flt, 10)
        dense = store.vector_search(_vector(300), flt, 10)
        for chunk_id, _ in keyword + dense:
            assert store.chunks([chunk_id])[chunk_id][1].id in allowed
        assert len(keyword) == len(allowed) and len(dense) == len(allowed)


def test_a_selective_filter_still_returns_k_results(store: Store) -> None:
    for i in range(60):
        put(store, f"bulk/{i}.md", [f"deployment note {i}", f"more text {i}"], seed=10 + i)
    put(
        store,
        "rare/a.md",
        ["deployment runbook a", "deployment runbook b", "deployment c"],
        acl=("user:bob",),
        seed=7,
    )
    flt = Filter(principal=BOB, source_prefix="rare/")
    assert len(store.vector_search(_vector(1), flt, 3)) == 3
    assert len(store.keyword_search("deployment", flt, 3)) == 3


def test_term_weights_count_only_what_the_principal_may_read(store: Store) -> None:
    put(store, "open.md", ["common words here"], seed=1)
    put(store, "secret.md", ["zebracorn zebracorn"], acl=("group:finance",), seed=2)
    for_bob = store.term_weights(["zebracorn"], Filter(principal=BOB))
    for_alice = store.term_weights(["zebracorn"], Filter(principal=ALICE))
    assert for_bob["zebracorn"] < for_alice["zebracorn"]  # alice's statistics never saw the word


def test_keyword_scores_ignore_what_the_principal_may_not_read(store: Store) -> None:
    """BM25 statistics (rows, average length, document frequency) over the reader's slice only:
    adding a restricted document changes no score and no order a reader without access sees."""
    put(store, "a.md", ["gamma ray burst detector", "beta decay of gamma sources"], seed=1)
    put(store, "b.md", ["gamma gamma spectrometer calibration", "beta particles"], seed=2)
    put(store, "c.md", ["an unrelated paragraph about lunch"], seed=3)
    before = store.keyword_search("gamma beta spectrometer", Filter(principal=ALICE), 10)
    put(
        store,
        "secret.md",
        ["gamma beta gamma beta"] * 3 + ["spectrometer " * 12 + "gamma"],
        acl=("group:finance",),
        seed=4,
    )
    after = store.keyword_search("gamma beta spectrometer", Filter(principal=ALICE), 10)
    assert [c for c, _ in after] == [c for c, _ in before]
    assert all(abs(x - y) < 1e-9 for (_, x), (_, y) in zip(after, before, strict=True))
    seen_by_bob = store.keyword_search("gamma beta spectrometer", Filter(principal=BOB), 10)
    assert len(seen_by_bob) == len(before) + 4  # bob reads the secret: his statistics include it


def test_a_hyphenated_word_finds_the_same_word_written_as_one(store: Store) -> None:
    """Every store searches "re-read" as "reread" too (text/terms.py, keyword_phrases)."""
    put(store, "sshd.md", ["sshd rereads its configuration file on SIGHUP", "an unrelated paragraph"])
    found = store.keyword_search("How does sshd re-read its file?", ADMIN, 10)
    assert found and found[0][0].endswith("-000000000000")
    assert store.keyword_search("re-read", ADMIN, 10)  # the joined word alone


def test_check_finds_nothing_wrong_with_a_consistent_store(store: Store) -> None:
    put(store, "a.md", ["one paragraph", "another paragraph"], seed=1)
    put(store, "b.md", ["third"], seed=2, acl=("group:eng",), original=b"raw")
    assert store.check() == []
    assert store.check(repair=True) == []
    assert store.keyword_search("paragraph", ADMIN, 5)  # still searchable after a no-op repair


def test_vectors_are_cached_by_text_hash_and_swapped_whole(store: Store) -> None:
    doc = put(store, "a.md", ["x", "y"])
    hashes = [text_hash(c.index_text) for c, _ in store.chunks(store.document_chunks(doc.id)).values()]
    assert set(store.cached_vectors(hashes)) == set(hashes)
    assert store.cached_vectors(hashes, embedder="other") == {}
    store.add_vectors("other", {h: _vector(i) for i, h in enumerate(hashes)})
    store.swap_embedder("other", "2", DIM)
    info = store.embedder_info()
    assert info is not None and (info.name, info.version) == ("other", "2")
    with pytest.raises(EmbedderMismatchError):
        store.bind_embedder("test-embedder", "1", DIM)


def test_traces_belong_to_their_owner(store: Store) -> None:
    hit = TracedHit("c1", "a.md", "H", 0, 5, 0.5, {"fused": {"score": 0.5, "rank": 1}}, n=1)
    for i, owner in enumerate(["user:alice", "user:bob", "user:alice"]):
        trace = Trace(
            id=f"t{i}",
            question=f"q{i}",
            owner=owner,
            created_at=time.time() + i,
            candidates=Candidates((("c1", 1.0),), (), (hit,)),
            context=(hit,),
            verification=(Check("s", (1,), i != 1, 0.9),),
            refused=i == 1,
        )
        store.save_trace(trace)
    got = store.get_trace("t0")
    assert got is not None and got.owner == "user:alice" and got.context == (hit,)
    assert got.verification[0].supported and got.candidates.bm25 == (("c1", 1.0),)
    assert [t.id for t in store.list_traces(owner="user:alice")] == ["t2", "t0"]
    assert [t.id for t in store.list_traces(failed_only=True)] == ["t1"]
    assert store.get_trace("missing") is None


def test_settings_and_access_data_live_in_the_store(store: Store) -> None:
    store.save_settings({"top_k": 12, "reranker": "learned"})
    store.save_settings({"top_k": 14}, remove=["reranker"])
    assert store.stored_settings() == {"top_k": 14}
    secret = store.secret()
    assert len(secret) == 32 and store.secret() == secret
    key = ApiKey(id="k1", user="alice", key_hash="h" * 64, groups=("eng",), role="writer")
    store.add_api_key(key)
    found = store.find_api_key("h" * 64)
    assert found is not None and found.user == "alice" and found.groups == ("eng",) and found.active
    assert store.revoke_api_key("k1") and not store.revoke_api_key("k1")
    revoked = store.find_api_key("h" * 64)
    assert revoked is not None and not revoked.active
    assert [k.id for k in store.api_keys()] == ["k1"]


def test_a_batch_is_written_whole_or_not_at_all(store: Store) -> None:
    from citeline.errors import CitelineError
    from citeline.index.base import DocumentWrite

    first = put(store, "a.md", ["kept as it was"], seed=1)
    docs = []
    for i, name in enumerate(["b.md", "c.md"]):
        doc_id = document_id_for("default", name)
        chunk = Chunk(
            f"{doc_id[:12]}-{0:012d}", doc_id, 0, 0, 4, "text", f"{name} > text", ("H",), "paragraph"
        )
        doc = Document(doc_id, name, name, "markdown", f"h{i}", 4, 1.0, None, added_at=5.0, updated_at=6.0)
        docs.append((doc, chunk))
    good = DocumentWrite(
        docs[0][0], "text", [docs[0][1]], {text_hash(docs[0][1].index_text): _vector(1)}, keep_times=True
    )
    bad = DocumentWrite(docs[1][0], "text", [docs[1][1]], {})  # no vector for its chunk
    with pytest.raises(CitelineError):
        store.replace_documents([good, bad])
    assert store.count_documents(ADMIN) == 1 and store.get_document(docs[0][0].id) is None
    store.replace_documents([good])
    got = store.get_document(docs[0][0].id)
    assert got is not None and (got.added_at, got.updated_at) == (5.0, 6.0)  # kept as given
    assert store.get_document(first.id) is not None and store.count_chunks(ADMIN) == 2


def test_a_write_says_which_documents_were_there(store: Store) -> None:
    """Two adds of one folder at once both find a document absent; the write itself tells the
    second that it replaced one (issue 35: both said "added")."""
    from citeline.index.base import DocumentWrite

    writes = {}
    for name in ("b.md", "c.md"):
        doc_id = document_id_for("default", name)
        chunk = Chunk(
            f"{doc_id[:12]}-{0:012d}", doc_id, 0, 0, 4, "text", f"{name} > text", ("H",), "paragraph"
        )
        doc = Document(doc_id, name, name, "markdown", f"h-{name}", 4, 1.0, None)
        writes[name] = DocumentWrite(doc, "text", [chunk], {text_hash(chunk.index_text): _vector(2)})
    b, c = writes["b.md"], writes["c.md"]
    assert store.replace_documents([b]) == frozenset()
    assert store.replace_documents([b, c]) == frozenset({b.document.id})
    assert store.replace_document(c.document, c.text, c.chunks, c.vectors) is True
    store.remove_document(c.document.id)
    assert store.replace_document(c.document, c.text, c.chunks, c.vectors) is False


def test_an_adopted_secret_replaces_the_index_own(store: Store) -> None:
    store.secret()
    store.adopt_secret(b"\x01" * 32)
    assert store.secret() == b"\x01" * 32


FAST = "fast-embedder"


def test_progressive_writes_leave_chunks_pending_until_their_full_vectors_come(store: Store) -> None:
    """Progressive indexing: a write with the fast embedder's vectors (``vectors_from``) makes its
    chunks searchable by those vectors only, in their own search; the full vectors added later take
    each chunk out of it, and once none is pending the fast vectors go. A text that already has
    its full vector is never pending (one embedding per text)."""
    full = put(store, "full.md", ["shared paragraph"], seed=1)
    doc_id = document_id_for("default", "fast.md")
    paragraphs = ["shared paragraph", "fresh one", "restricted one"]
    chunks, fast, pos = [], {}, 0
    for i, para in enumerate(paragraphs):
        index_text = f"full.md > {para}" if i == 0 else f"fast.md > {para}"
        chunks.append(
            Chunk(
                f"{doc_id[:12]}-{i:012d}",
                doc_id,
                i,
                pos,
                pos + len(para),
                para,
                index_text,
                ("H",),
                "paragraph",
            )
        )
        fast[text_hash(index_text)] = _vector(500 + i)
        pos += len(para) + 2
    doc = Document(doc_id, "fast.md", "fast.md", "markdown", "hash-fast", pos, 1.0, None, acl=("group:eng",))
    write = DocumentWrite(doc, "\n\n".join(paragraphs), tuple(chunks), fast, vectors_from=FAST)
    assert store.replace_documents([write]) == frozenset()
    fresh = [text_hash(c.index_text) for c in chunks[1:]]

    assert store.pending_embedder() == FAST
    assert sorted(store.unembedded(10)) == sorted(
        (h, c.index_text) for h, c in zip(fresh, chunks[1:], strict=True)
    )
    stats = store.stats()
    assert stats["full_vectors"] == 2 and stats["pending_vectors"] == {"chunks": 2, "embedder": FAST}
    assert store.check() == []  # pending is not missing
    # each chunk in one space: the full search has the shared text's chunks, the fast one the rest
    full_ids = {c for c, _ in store.vector_search(_vector(0), ADMIN, 10)}
    assert full_ids == set(store.document_chunks(full.id)) | {chunks[0].id}
    found = store.pending_vector_search(fast[fresh[0]], ADMIN, 10)
    assert found[0][0] == chunks[1].id and {c for c, _ in found} == {chunks[1].id, chunks[2].id}
    assert found[0][1] == pytest.approx(1.0, abs=1e-5)
    assert store.pending_vector_search(fast[fresh[0]], Filter(principal=BOB), 10) == []  # ACL first
    assert len(store.pending_vector_search(fast[fresh[0]], Filter(principal=ALICE), 10)) == 2

    assert not store.finish_pending()  # still pending: nothing changes
    store.add_vectors("test-embedder", {fresh[0]: _vector(900)})
    assert [h for h, _ in store.unembedded(10)] == [fresh[1]]
    assert [c for c, _ in store.pending_vector_search(fast[fresh[0]], ADMIN, 10)] == [chunks[2].id]
    assert chunks[1].id in {c for c, _ in store.vector_search(_vector(900), ADMIN, 10)}
    store.add_vectors("test-embedder", {fresh[1]: _vector(901)})
    assert store.unembedded(10) == [] and store.finish_pending()
    assert store.pending_embedder() is None and store.cached_vectors(fresh, embedder=FAST) == {}
    assert store.stats()["full_vectors"] == 4 and store.stats()["pending_vectors"] is None
    assert store.check() == []
    assert chunks[2].id in {c for c, _ in store.vector_search(_vector(901), ADMIN, 10)}
