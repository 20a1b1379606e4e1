"""Isolation: a document bob may not read changes nothing bob sees.

Two indexes hold the same public documents; one of them also holds documents only group:finance
may read, full of the very words bob searches for. Everything bob gets is compared between the two
(volatile fields such as ids of traces, timings and timestamps aside) on every surface: the Python
API, the CLI (--as), the HTTP API, traces, counts, error messages, evaluation reports and the MCP
tools. Any difference is a leak: a count, a score (BM25 statistics, IDF term weights, relevance,
confidence) or an order that depends on what bob may not read. Also: one user's traces are
unreadable by another, and API keys never appear in logs or responses.

Every test runs on both stores (two index folders, or two databases on the test session's
PostgreSQL server), but for the two that look inside SQLite files (FTS5's global bm25, a copy of
the index folder).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

import citeline
from citeline.access import create_key, revoke
from citeline.errors import DocumentNotFoundError
from citeline.filters import Filter, Principal
from citeline.kb import KnowledgeBase
from conftest import STORES
from serve.live import serving

from .util import cli, report_figures

BOB = Principal(user="bob", groups=("eng",))
ALICE = Principal(user="alice", groups=("finance",))
PUBLIC = {
    "ops.md": "# Operations\n\n## Dashboard\n\nThe Zephyr dashboard shows the quarterly budget of each team. "
    "Approval requests go to the team lead.\n\n## Rota\n\nThe on-call rota changes every Monday at 09:00.\n",
    "travel.md": "# Travel policy\n\n## Budget\n\nEach trip needs a budget line and the approval of a "
    "manager. Economy class for flights under six hours.\n\n## Committee\n\nThe travel committee "
    "meets monthly to review exceptions.\n",
    "kitchen.md": "# Kitchen\n\nThe kettle is descaled every 30 days. The committee for the summer party "
    "is chosen in May.\n",
}
SECRET = {
    "zephyr.md": "# Zephyr committee\n\n"
    + "\n\n".join(
        f"## Session {i}\n\nThe Zephyr committee approved budget line {i}: zephyr zephyr budget approval "
        f"committee committee reserve {i * 1000} euros."
        for i in range(12)
    )
    + "\n",
    "merger.md": "# Project Kestrel\n\nKestrel budget approval: the committee approved the acquisition of "
    "Zephyr Dynamics for 42 million euros. Dashboard access is restricted.\n",
}
QUERIES = [
    "zephyr budget approval",
    "Which committee meets monthly?",
    "How is the quarterly budget shown on the dashboard?",
    "kestrel acquisition",
]
VOLATILE = {
    "trace_id",
    "timings_ms",
    "created_at",
    "generated_at",
    "added_at",
    "updated_at",
    "latency_ms",
    "id",
}
LEAKS: dict[str, int] = {}


def stable(value: Any) -> Any:
    """The value without what differs between any two runs (ids of traces, times)."""
    if isinstance(value, dict):
        return {k: stable(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [stable(v) for v in value]
    if isinstance(value, float):
        return round(value, 9)
    return value


def same(surface: str, plain: Any, mixed: Any) -> None:
    LEAKS.setdefault(surface, 0)
    if stable(plain) != stable(mixed):
        LEAKS[surface] += 1
    assert stable(plain) == stable(mixed), (
        f"{surface}: bob sees a difference made by documents he may not read"
    )


@pytest.fixture(scope="module", autouse=True)
def figures() -> Iterator[None]:
    yield
    report_figures("isolation", {"surfaces_compared": sorted(LEAKS), "leaks_found": sum(LEAKS.values())})


@pytest.fixture(scope="module", params=STORES)
def indexes(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, KnowledgeBase]]:
    base = tmp_path_factory.mktemp("isolation")
    for folder, docs in (("docs", PUBLIC), ("finance", SECRET)):
        (base / folder).mkdir()
        for name, text in docs.items():
            (base / folder / name).write_text(text, encoding="utf-8")
    server = request.getfixturevalue("pg_server") if request.param == "postgresql" else None
    databases = [f"t_isolation_{name}_{os.getpid()}" for name in ("plain", "mixed")]
    kbs = {}
    for i, name in enumerate(("plain", "mixed")):
        location = str(base / name) if server is None else server.create_database(databases[i])
        kb = citeline.open(location, embedder="hashing")
        # answer whatever is found, so answers, citations, relevance and confidence are all compared
        kb.save_settings({"embedder": "hashing", "refusal_threshold": 0.0, "min_answer_score": 0.0})
        assert not kb.add([base / "docs"], root=base).failed
        if name == "mixed":
            assert not kb.add([base / "finance"], root=base, acl=["group:finance"]).failed
        kbs[name] = kb
    yield kbs
    for kb in kbs.values():
        kb.close()
    if server is not None:
        for database in databases:
            server.drop_database(database)


def on_sqlite_only(kb: KnowledgeBase) -> None:
    if kb.store.location.startswith("postgres"):
        pytest.skip("looks inside the embedded store's files")


def test_the_restricted_documents_are_really_there(indexes: dict[str, KnowledgeBase]) -> None:
    mixed = indexes["mixed"]
    assert mixed.store.count_documents(Filter(principal=ALICE)) == 5
    assert mixed.store.count_documents(Filter(principal=BOB)) == 3
    hits = mixed.search("zephyr budget approval", ALICE, k=5)
    assert hits[0].source.startswith("finance/")


def test_global_bm25_statistics_would_leak(indexes: dict[str, KnowledgeBase]) -> None:
    """FTS5's bm25() over the whole table (what keyword search did for everyone): bob's scores
    change with the restricted documents. The slice scorer exists because of this."""
    on_sqlite_only(indexes["plain"])
    from citeline.index.sql.dialect import SQLITE
    from citeline.index.sql.filters import filter_sql

    def global_scores(kb: KnowledgeBase, query: str) -> list[tuple[str, float]]:
        cond, params = filter_sql(Filter(principal=BOB), "c.document_id", SQLITE)
        sql = (
            "SELECT c.id, -bm25(chunks_fts) FROM chunks_fts JOIN chunks c ON c.rowid = chunks_fts.rowid "
            f"WHERE chunks_fts MATCH ? AND {cond} ORDER BY bm25(chunks_fts), c.rowid"
        )
        return [(r[0], round(r[1], 9)) for r in kb.store.conn.execute(sql, ['"zephyr" OR "budget"', *params])]  # type: ignore[attr-defined]

    assert global_scores(indexes["plain"], "q") != global_scores(indexes["mixed"], "q")


def test_slice_bm25_is_fts5_bm25_when_everything_is_readable(indexes: dict[str, KnowledgeBase]) -> None:
    kb = indexes["plain"]  # no ACL at all: bob's slice is the whole index
    for query in QUERIES:
        admin = kb.store.keyword_search(query, Filter.admin(), 30)
        sliced = kb.store.keyword_search(query, Filter(principal=BOB), 30)
        assert [c for c, _ in admin] == [c for c, _ in sliced]
        assert all(abs(a - b) < 1e-9 for (_, a), (_, b) in zip(admin, sliced, strict=True))


def test_python_api(indexes: dict[str, KnowledgeBase]) -> None:
    plain, mixed = indexes["plain"], indexes["mixed"]
    for query in QUERIES:
        same(
            "api.keyword_search",
            plain.store.keyword_search(query, Filter(principal=BOB), 30),
            mixed.store.keyword_search(query, Filter(principal=BOB), 30),
        )
        same(
            "api.search",
            [
                (h.chunk.id, h.score, {k: (v.score, v.rank) for k, v in h.stages.items()})
                for h in plain.search(query, BOB)
            ],
            [
                (h.chunk.id, h.score, {k: (v.score, v.rank) for k, v in h.stages.items()})
                for h in mixed.search(query, BOB)
            ],
        )
        same("api.ask", plain.ask(query, BOB).to_json(), mixed.ask(query, BOB).to_json())
        terms = ["zephyr", "budget", "committee", "kestrel"]
        same(
            "api.term_weights",
            plain.store.term_weights(terms, Filter(principal=BOB)),
            mixed.store.term_weights(terms, Filter(principal=BOB)),
        )
    same("api.documents", [d.source for d in plain.documents(BOB)], [d.source for d in mixed.documents(BOB)])
    same(
        "api.count_documents",
        plain.store.count_documents(Filter(principal=BOB)),
        mixed.store.count_documents(Filter(principal=BOB)),
    )
    same(
        "api.count_chunks",
        plain.store.count_chunks(Filter(principal=BOB)),
        mixed.store.count_chunks(Filter(principal=BOB)),
    )
    secret = mixed.store.find_document("finance/merger.md")
    assert secret is not None
    messages = []
    for kb, ref in (
        (mixed, secret.id),
        (plain, secret.id),
        (mixed, "finance/merger.md"),
        (plain, "finance/merger.md"),
    ):
        with pytest.raises(DocumentNotFoundError) as caught:
            kb.document(ref, BOB)
        messages.append(str(caught.value))
    same("api.error_messages", messages[0::2], messages[1::2])


def test_traces(indexes: dict[str, KnowledgeBase]) -> None:
    plain, mixed = indexes["plain"], indexes["mixed"]
    for query in QUERIES:
        a, b = plain.ask(query, BOB), mixed.ask(query, BOB)
        ta, tb = plain.trace(a.trace_id or "", BOB), mixed.trace(b.trace_id or "", BOB)
        assert ta is not None and tb is not None
        same("traces.content", ta.to_json(), tb.to_json())
    theirs = mixed.ask("zephyr budget approval", ALICE)
    assert theirs.citations and mixed.trace(theirs.trace_id or "", BOB) is None  # not bob's to read
    assert all(t.owner == "user:bob" for t in mixed.traces(BOB, limit=100))
    same(
        "traces.list",
        [t.question for t in plain.traces(BOB, limit=100)],
        [t.question for t in mixed.traces(BOB, limit=100)],
    )


def test_cli(indexes: dict[str, KnowledgeBase]) -> None:
    plain, mixed = (indexes[n].settings.index for n in ("plain", "mixed"))
    who = ("--as", "user:bob", "--groups", "eng")
    commands = [
        ("search", "--json", QUERIES[0], *who),
        ("ask", "--json", QUERIES[0], *who),
        ("documents", "--json", *who),
    ]
    if plain.startswith("postgres"):  # the command line above the store is the same: one command
        commands = commands[1:2]
    for args in commands:
        a, b = cli(plain, *args), cli(mixed, *args)
        assert a.returncode == b.returncode == 0, (a.stderr, b.stderr)
        same(f"cli.{args[0]}", json.loads(a.stdout), json.loads(b.stdout))


def test_evaluation_report(indexes: dict[str, KnowledgeBase], tmp_path: Path) -> None:
    from citeline.eval.answers import evaluate_answers

    rows = [
        {"id": "q1", "question": QUERIES[2], "answerable": True, "evidence": [{"source": "docs/ops.md"}]},
        {
            "id": "q2",
            "question": QUERIES[3],
            "answerable": True,
            "evidence": [{"source": "finance/merger.md"}],
        },
        {"id": "q3", "question": QUERIES[0], "answerable": False},
    ]
    reports = [evaluate_answers(indexes[n], rows, principal=BOB) for n in ("plain", "mixed")]
    same("eval.report", reports[0], reports[1])
    assert reports[1]["documents"] == 3  # what bob may read, not what the index holds


@pytest.fixture(scope="module")
def servers(indexes: dict[str, KnowledgeBase]) -> Iterator[dict[str, tuple[str, str]]]:
    pytest.importorskip("fastapi")
    out = {}
    with serving(indexes["plain"]) as plain_url, serving(indexes["mixed"]) as mixed_url:
        for name, url in (("plain", plain_url), ("mixed", mixed_url)):
            key, _ = create_key(indexes[name].store, "bob", ("eng",), "writer")
            out[name] = (url, key)
        yield out


def _get(server: tuple[str, str], method: str, path: str, **kwargs: Any) -> httpx.Response:
    url, key = server
    return httpx.request(
        method, f"{url}{path}", headers={"Authorization": f"Bearer {key}"}, timeout=120, **kwargs
    )


def test_http_api(indexes: dict[str, KnowledgeBase], servers: dict[str, tuple[str, str]]) -> None:
    secret = indexes["mixed"].store.find_document("finance/merger.md")
    assert secret is not None
    for query in QUERIES:
        for path, body in (("/v1/search", {"query": query, "k": 20}), ("/v1/ask", {"question": query})):
            a, b = (_get(servers[n], "POST", path, json=body) for n in ("plain", "mixed"))
            assert a.status_code == b.status_code == 200
            same(f"http.{path}", a.json(), b.json())
    a, b = (_get(servers[n], "GET", "/v1/documents?limit=500") for n in ("plain", "mixed"))
    same("http.documents", a.json(), b.json())
    for suffix in ("", "/text", "/file", "/pages/1.png", "/pages/1/boxes?start=0&end=5"):
        a, b = (_get(servers[n], "GET", f"/v1/documents/{secret.id}{suffix}") for n in ("plain", "mixed"))
        same(f"http.document{suffix or ''}.error", (a.status_code, a.json()), (b.status_code, b.json()))
    a, b = (_get(servers[n], "DELETE", f"/v1/documents/{secret.id}") for n in ("plain", "mixed"))
    same("http.delete.error", (a.status_code, a.json()), (b.status_code, b.json()))
    a, b = (httpx.get(f"{servers[n][0]}/healthz", timeout=60) for n in ("plain", "mixed"))
    same("http.healthz", a.json(), b.json())
    a, b = (_get(servers[n], "GET", "/metrics") for n in ("plain", "mixed"))
    assert a.status_code == b.status_code == 403  # counts are for admins
    alice_trace = indexes["mixed"].ask("zephyr budget approval", ALICE).trace_id
    r = _get(servers["mixed"], "GET", f"/v1/traces/{alice_trace}")
    assert r.status_code == 404 and "zephyr" not in r.text.lower()
    listed = _get(servers["mixed"], "GET", "/v1/traces").json()["traces"]
    assert listed and all(t["owner"] == "user:bob" for t in listed)


def test_mcp_tools(indexes: dict[str, KnowledgeBase], servers: dict[str, tuple[str, str]]) -> None:
    httpx2 = pytest.importorskip("httpx2")
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    secret = indexes["mixed"].store.find_document("finance/merger.md")
    assert secret is not None
    calls: list[tuple[str, dict[str, Any]]] = [
        ("search", {"query": QUERIES[0], "k": 20}),
        ("ask", {"question": QUERIES[0]}),
        ("list_documents", {"limit": 500}),
        ("show", {"document_id": secret.id, "start": 0, "end": 40}),
    ]

    async def run(server: tuple[str, str]) -> list[Any]:
        url, key = server
        out: list[Any] = []
        with anyio.fail_after(120):
            async with (
                httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=60) as http,
                Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client,
            ):
                for name, args in calls:
                    result = await client.call_tool(name, args)
                    content = result.structured_content
                    if content is None:
                        content = [getattr(c, "text", None) for c in result.content]
                    out.append((name, bool(result.is_error), content))
        return out

    plain, mixed = anyio.run(run, servers["plain"]), anyio.run(run, servers["mixed"])
    for (name, *a), (_, *b) in zip(plain, mixed, strict=True):
        same(f"mcp.{name}", a, b)


def test_api_keys_are_never_logged_or_echoed(
    indexes: dict[str, KnowledgeBase], caplog: pytest.LogCaptureFixture
) -> None:
    kb = indexes["mixed"]
    key, record = create_key(kb.store, "carol", (), "reader")
    gone, gone_record = create_key(kb.store, "dave", (), "reader")
    revoke(kb.store, gone_record.id)
    caplog.set_level(logging.DEBUG)
    for name in ("uvicorn", "uvicorn.access", "uvicorn.error", "fastapi", "citeline", "httpx", "mcp"):
        logging.getLogger(name).setLevel(logging.DEBUG)
    bodies: list[str] = []
    with serving(kb) as url:
        for headers in (
            {"Authorization": f"Bearer {key}"},
            {"X-API-Key": key},
            {"Authorization": f"Bearer {gone}"},
            {"Authorization": f"Bearer {key}x"},
            {"Authorization": f"Bearer {key[:-3]}"},
        ):
            with httpx.Client(base_url=url, headers=headers, timeout=120) as c:
                for method, path, extra in (
                    ("POST", "/v1/ask", {"json": {"question": "zephyr?"}}),
                    ("POST", "/v1/search", {"json": {"query": "x", "k": 0}}),  # a validation error
                    ("GET", "/v1/documents/nope", {}),
                    ("GET", "/v1/keys", {}),
                    ("POST", "/mcp", {"json": {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}}),
                ):
                    bodies.append(c.request(method, path, **extra).text)
    logged = "\n".join(r.getMessage() + " " + json.dumps(r.args, default=str) for r in caplog.records)
    for secret in (key, gone, key[:-3]):
        assert secret not in logged
        assert not any(secret in b for b in bodies)
    listed = cli(kb.settings.index, "keys", "list", "--json")
    assert key not in listed.stdout and record.key_hash not in listed.stdout
    stored = json.dumps([t.to_json() for t in kb.traces(limit=100)])
    assert key not in stored
    if kb.store.location.startswith("postgres"):
        import psycopg

        with psycopg.connect(kb.settings.index) as conn:
            db = json.dumps(conn.execute("SELECT * FROM api_keys").fetchall()).encode()
    else:
        db = (Path(kb.settings.index) / "citeline.db").read_bytes()
    assert key.encode() not in db  # only the keyed hash is stored


def test_readers_of_one_index_folder_copy_see_no_other_users_data(
    indexes: dict[str, KnowledgeBase], tmp_path: Path
) -> None:
    """A copy of the index folder: bob's view through the copy is the same as through the original."""
    on_sqlite_only(indexes["mixed"])
    original = Path(indexes["mixed"].settings.index)
    copy = tmp_path / "copy"
    shutil.copytree(original, copy)
    kb = citeline.open(copy, create=False)
    try:
        same("copy.ask", indexes["plain"].ask(QUERIES[0], BOB).to_json(), kb.ask(QUERIES[0], BOB).to_json())
    finally:
        kb.close()
