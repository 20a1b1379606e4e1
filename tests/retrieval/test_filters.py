"""Filters and ACLs on real indexes: every engine pre-filters, and nothing forbidden leaks.

The hashing embedder keeps these fast; the model is not what is being tested. Every test runs
against each store (the ``open_index`` fixture: an embedded folder, and a PostgreSQL database).
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import numpy as np
import pytest

from citeline.filters import Filter, Principal
from citeline.kb import KnowledgeBase
from citeline.types import text_hash
from conftest import ADMIN, OpenIndex

ALICE = Principal(user="alice", groups=("engineering",))
FINANCE = Principal(user="bob", groups=("finance",))

# The forbidden document is the best match for the question below; none of its distinctive
# strings (the amount, the code name) occurs in the question, so any trace of them is a leak.
SECRET = (
    "# Executive pay\n\n"
    "The CEO salary for 2024 is 9,870,000 euros, paid through the ledger account QX-7731-PAYROLL. "
    "The CEO salary is reviewed by the remuneration committee each March.\n"
)
SECRET_MARKERS = ("9,870,000", "QX-7731", "remuneration", "salaries.md", "Executive pay")
PUBLIC = {
    "handbook/pay.md": "# Pay days\n\nSalary is paid on the last working day of each month by bank transfer.\n",
    "handbook/leave.md": "# Leave\n\nEvery employee has 25 days of paid leave per year, booked in the HR portal.\n",
    "handbook/ceo.md": "# Leadership\n\nThe CEO chairs the leadership team and reports to the board.\n",
}
QUESTION = "What is the CEO salary for 2024?"


def write(root: Path, files: dict[str, str]) -> list[Path]:
    paths = []
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    return paths


def build(open_index: OpenIndex, name: str, docs: Path, with_secret: bool) -> KnowledgeBase:
    kb = open_index(name, embedder="hashing")
    kb.add(write(docs, PUBLIC))
    if with_secret:
        kb.add(write(docs, {"finance/salaries.md": SECRET}), acl=["group:finance"])
    return kb


@pytest.fixture
def kbs(tmp_path: Path, open_index: OpenIndex) -> tuple[KnowledgeBase, KnowledgeBase]:
    """The same public documents (same paths, so same chunk ids), with and without the secret."""
    docs = tmp_path / "docs"
    with_secret = build(open_index, "with", docs, True)
    without = build(open_index, "without", docs, False)
    return with_secret, without


def assert_no_secret(blob: str) -> None:
    for marker in SECRET_MARKERS:
        assert marker not in blob, f"forbidden content leaked: {marker!r}"


def test_forbidden_best_match_is_invisible_to_search(kbs: tuple[KnowledgeBase, KnowledgeBase]) -> None:
    kb, _ = kbs
    admin_hits = kb.search(QUESTION, ADMIN, k=3)
    assert admin_hits[0].source.endswith("salaries.md")  # it really is the best match
    hits = kb.search(QUESTION, k=10, flt=Filter(principal=ALICE))
    assert hits and all(not h.source.endswith("salaries.md") for h in hits)
    assert_no_secret(json.dumps([[h.chunk.text, h.chunk.index_text, h.source, h.title] for h in hits]))
    retrieval = kb.retrieve(QUESTION, Filter(principal=ALICE), k=10)
    secret_doc = next(d for d in kb.store.documents(Filter.admin()) if d.source.endswith("salaries.md"))
    secret_chunks = set(kb.store.document_chunks(secret_doc.id))
    assert not secret_chunks & {c for c, _ in retrieval.lexical}
    assert not secret_chunks & {c for c, _ in retrieval.dense}
    # The finance group does see it, first.
    assert kb.search(QUESTION, k=3, flt=Filter(principal=FINANCE))[0].source.endswith("salaries.md")


def test_ask_and_trace_hold_nothing_forbidden(kbs: tuple[KnowledgeBase, KnowledgeBase]) -> None:
    kb, clean = kbs
    flt = Filter(principal=ALICE)
    answer = kb.ask(QUESTION, flt=flt)
    reference = clean.ask(QUESTION, flt=flt)
    answer_json = json.dumps(answer.to_json(), ensure_ascii=False)
    assert_no_secret(answer_json)
    assert answer.trace_id is not None
    traced = kb.trace(answer.trace_id)
    assert traced is not None
    trace = traced.to_json()
    trace_json = json.dumps(trace, ensure_ascii=False)
    assert_no_secret(trace_json)
    secret_doc = next(d for d in kb.store.documents(Filter.admin()) if d.source.endswith("salaries.md"))
    secret_chunks = kb.store.document_chunks(secret_doc.id)
    assert secret_chunks  # else the loop below checks nothing
    for chunk_id in secret_chunks:
        assert chunk_id not in trace_json and chunk_id not in answer_json
    assert secret_doc.id not in trace_json and secret_doc.id not in answer_json
    # Counts and decisions are those of an index that never had the document: same candidates,
    # same context, same refusal decision and relevance, same answer.
    ref_traced = clean.trace(reference.trace_id or "")
    assert ref_traced is not None
    ref_trace = ref_traced.to_json()
    for stage in ("bm25", "dense", "fused"):
        assert [c["chunk_id"] for c in trace["candidates"][stage]] == [
            c["chunk_id"] for c in ref_trace["candidates"][stage]
        ]
    assert [c["chunk_id"] for c in trace["context"]] == [c["chunk_id"] for c in ref_trace["context"]]
    assert answer.refused == reference.refused
    assert answer.answer == reference.answer
    assert answer.relevance == pytest.approx(reference.relevance)
    assert kb.store.count_chunks(flt) == clean.store.count_chunks(flt)
    assert [d.source for d in kb.store.documents(flt)] == [d.source for d in clean.store.documents(flt)]


def test_acl_by_user_group_anonymous_and_admin(tmp_path: Path, open_index: OpenIndex) -> None:
    kb = open_index("index", embedder="hashing")
    docs = tmp_path / "docs"
    kb.add(write(docs, {"open.md": "# Open\n\nThe cafeteria opens at eight.\n"}))
    kb.add(
        write(docs, {"alice.md": "# Mine\n\nThe cafeteria key code is in the blue box.\n"}),
        acl=["user:alice"],
    )
    kb.add(
        write(docs, {"eng.md": "# Eng\n\nThe cafeteria runs on a Raspberry Pi.\n"}), acl=["group:engineering"]
    )

    def sources(principal: Principal) -> set[str]:
        return {Path(h.source).name for h in kb.search("cafeteria", k=10, flt=Filter(principal=principal))}

    assert sources(Principal.local_admin()) == {"open.md", "alice.md", "eng.md"}
    assert sources(Principal.anonymous()) == set()  # anonymous readers see public documents only
    assert sources(Principal(user="alice")) == {"open.md", "alice.md"}
    assert sources(Principal(user="carol", groups=("engineering",))) == {"open.md", "eng.md"}
    assert sources(ALICE) == {"open.md", "alice.md", "eng.md"}
    # A group named like a user entry grants nothing: "group:alice" is not "user:alice".
    assert sources(Principal(user=None, groups=("alice",))) == {"open.md"}
    kb.add(write(docs, {"menu.md": "# Menu\n\nThe cafeteria serves soup on Fridays.\n"}), acl=["public"])
    assert sources(Principal.anonymous()) == {"menu.md"}
    assert sources(Principal(user="alice")) == {"open.md", "alice.md", "menu.md"}


def test_acl_changes_apply_at_once(tmp_path: Path, open_index: OpenIndex) -> None:
    kb = open_index("index", embedder="hashing")
    paths = write(tmp_path / "docs", {"memo.md": "# Memo\n\nThe quarterly plan moves the launch to May.\n"})
    flt = Filter(principal=ALICE)
    kb.add(paths)
    assert kb.search("quarterly launch", flt=flt)  # public, and the dense matrix is now cached
    kb.add(paths, acl=["group:finance"])  # same content: only the ACL changes
    assert kb.search("quarterly launch", flt=flt) == []
    assert kb.search("quarterly launch", flt=Filter(principal=FINANCE))
    kb.add(paths)  # public again
    assert kb.search("quarterly launch", flt=flt)


def test_tags_prefix_format_and_time_range(tmp_path: Path, open_index: OpenIndex) -> None:
    kb = open_index("index", embedder="hashing")
    root = tmp_path / "docs"
    texts = {
        "team-a/alpha.md": "# Alpha\n\nThe deployment pipeline runs nightly.\n",
        "team-a/beta.txt": "The deployment pipeline has three stages.\n",
        "team-b/gamma.md": "# Gamma\n\nThe deployment pipeline is owned by team B.\n",
        "team-b/delta.html": "<html><body><h1>Delta</h1><p>The deployment pipeline was rewritten.</p></body></html>",
    }
    paths = write(root, texts)
    for i, p in enumerate(paths):
        os.utime(p, (1_700_000_000 + i * 86_400, 1_700_000_000 + i * 86_400))  # one day apart
    kb.add(paths[:2], tags={"team": "a"})
    kb.add(paths[2:], tags={"team": "b", "tier": "gold"})

    def names(flt: Filter) -> set[str]:
        return {Path(h.source).name for h in kb.search("deployment pipeline", k=10, flt=flt)}

    everything = {"alpha.md", "beta.txt", "gamma.md", "delta.html"}
    assert names(Filter.admin()) == everything
    assert names(Filter(principal=ADMIN, tags={"team": "a"})) == {"alpha.md", "beta.txt"}
    assert names(Filter(principal=ADMIN, tags={"team": "b", "tier": "gold"})) == {"gamma.md", "delta.html"}
    assert names(Filter(principal=ADMIN, tags={"team": "a", "tier": "gold"})) == set()
    assert names(Filter(principal=ADMIN, source_prefix=str(root / "team-b") + os.sep)) == {
        "gamma.md",
        "delta.html",
    }
    # LIKE wildcards in a prefix are literal.
    assert names(Filter(principal=ADMIN, source_prefix=str(root / "team_%"))) == set()
    assert names(Filter(principal=ADMIN, formats=("markdown",))) == {"alpha.md", "gamma.md"}
    assert names(Filter(principal=ADMIN, formats=("text", "html"))) == {"beta.txt", "delta.html"}
    assert names(Filter(principal=ADMIN, modified_after=1_700_000_000 + 86_400)) == {
        "beta.txt",
        "gamma.md",
        "delta.html",
    }
    assert names(Filter(principal=ADMIN, modified_before=1_700_000_000 + 2 * 86_400)) == {
        "alpha.md",
        "beta.txt",
    }
    assert names(
        Filter(
            principal=ADMIN, modified_after=1_700_000_000 + 86_400, modified_before=1_700_000_000 + 3 * 86_400
        )
    ) == {"beta.txt", "gamma.md"}
    assert names(Filter(tags={"team": "b"}, formats=("markdown",), principal=ALICE)) == {"gamma.md"}


def test_selective_filter_returns_k_exact_results(tmp_path: Path, open_index: OpenIndex) -> None:
    """A filter matching ~1% of chunks still gives k results, equal to brute force over the allowed chunks."""
    rng = random.Random(5)
    words = [f"w{i}" for i in range(60)] + ["turbine", "blade", "rotor", "gearbox", "pitch"]
    kb = open_index("index", embedder="hashing")
    root = tmp_path / "docs"
    n_docs, n_allowed, k = 1200, 12, 5
    texts = {f"d{i:04d}.txt": " ".join(rng.choice(words) for _ in range(25)) + ".\n" for i in range(n_docs)}
    paths = write(root, texts)
    allowed_paths = set(rng.sample(paths, n_allowed))
    kb.add([p for p in paths if p not in allowed_paths])
    kb.add(sorted(allowed_paths), tags={"site": "north"})
    flt = Filter(principal=ADMIN, tags={"site": "north"})
    total, allowed = kb.store.count_chunks(Filter.admin()), kb.store.count_chunks(flt)
    assert total == n_docs and allowed == n_allowed  # ~1% of the chunks

    query = "turbine blade rotor gearbox pitch"
    vector = kb.embedder.embed([query])[0]
    dense = kb.store.vector_search(vector, flt, k)
    lexical = kb.store.keyword_search(query, flt, k)
    assert len(dense) == k and len(lexical) == k

    # Brute force, dense: cosine against every allowed chunk's stored vector.
    allowed_chunks = [
        (c.id, c.index_text)
        for c, _ in kb.store.chunks(
            [cid for d in kb.store.documents(flt) for cid in kb.store.document_chunks(d.id)]
        ).values()
    ]
    vectors = kb.store.cached_vectors(text_hash(t) for _, t in allowed_chunks)
    brute = sorted(
        ((cid, float(vectors[text_hash(t)] @ vector)) for cid, t in allowed_chunks), key=lambda x: -x[1]
    )[:k]
    assert [c for c, _ in dense] == [c for c, _ in brute]
    assert np.allclose([s for _, s in dense], [s for _, s in brute], atol=1e-6)

    # Brute force, BM25: the unfiltered ranking over the whole index, restricted afterwards.
    everything = kb.store.keyword_search(query, Filter.admin(), total)
    allowed_ids = {cid for cid, _ in allowed_chunks}
    assert lexical == [(c, s) for c, s in everything if c in allowed_ids][:k]

    # And through the public API: k hits, all allowed.
    hits = kb.search(query, k=k, flt=flt)
    assert len(hits) == k and {h.chunk.id for h in hits} <= allowed_ids
