"""The HTTP API through a real server on loopback: keys, roles, limits, uploads, errors, concurrency."""

from __future__ import annotations

import hmac
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from citeline.access import key_hash
from citeline.filters import Principal
from citeline.index.sqlite import DB_NAME

from .conftest import SECRET, Corpus, bearer
from .live import serving, variant

Q_ERROR = "What does error LDG-4012 mean?"
Q_BUDGET = "How large is the 2031 marketing budget?"


@pytest.fixture(scope="module")
def url(corpus: Corpus) -> Iterator[str]:
    with serving(corpus.kb) as base:
        yield base


def client(url: str, key: str | None = None) -> httpx.Client:
    return httpx.Client(base_url=url, headers=bearer(key) if key else {}, timeout=120)


def error_message(response: httpx.Response) -> str:
    message: str = response.json()["error"]["message"]
    return message


# -- keys ------------------------------------------------------------------------------------------


def test_missing_wrong_and_revoked_keys_are_refused(url: str, corpus: Corpus) -> None:
    with client(url) as c:
        r = c.post("/v1/ask", json={"question": Q_ERROR})
        assert r.status_code == 401 and "No API key" in error_message(r)
        assert r.headers["www-authenticate"] == "Bearer"
        r = c.get("/v1/documents", headers=bearer(corpus.reader_key + "x"))
        assert r.status_code == 401 and "not valid" in error_message(r)
        r = c.get("/v1/documents", headers={"X-API-Key": "cl_nope_nope"})
        assert r.status_code == 401
        r = c.get("/v1/documents", headers=bearer(corpus.revoked_key))
        assert r.status_code == 401 and "revoked" in error_message(r)
        assert c.get("/healthz").json()["status"] == "ok"  # health needs no key


def test_keys_are_stored_only_as_keyed_hashes(corpus: Corpus) -> None:
    store = corpus.kb.store
    records = store.api_keys()
    assert records and all(corpus.writer_key not in json.dumps(r.__dict__, default=str) for r in records)
    digest = key_hash(store, corpus.writer_key)
    found = store.find_api_key(digest)
    assert found is not None and found.user == "alice" and hmac.compare_digest(found.key_hash, digest)
    # Read the raw file in another process: opening and closing it here would drop this process's
    # SQLite (POSIX) locks on it, and another process could then delete the live WAL index.
    probe = (
        "import sys; raw = open(sys.argv[1], 'rb').read()\n"
        "sys.exit(int(sys.argv[2].encode() in raw or sys.argv[3].encode() in raw))"
    )
    # "cl_<id>_<secret>": the secret is base64url and may hold "_" itself (split at the last one,
    # a key's tail could be one letter, found in any file)
    secret_part = corpus.writer_key.split("_", 2)[2]
    found_in_file = subprocess.run(
        [sys.executable, "-c", probe, str(corpus.index / DB_NAME), corpus.writer_key, secret_part], timeout=60
    )
    assert found_in_file.returncode == 0


def test_roles(url: str, corpus: Corpus) -> None:
    with client(url, corpus.reader_key) as reader, client(url, corpus.admin_key) as admin:
        r = reader.post("/v1/documents", files={"file": ("a.md", b"# A\n\nText.\n")})
        assert r.status_code == 403 and "writer role" in error_message(r)
        assert reader.get("/metrics").status_code == 403
        assert reader.get("/v1/keys").status_code == 403
        metrics = admin.get("/metrics")
        assert metrics.status_code == 200
        assert "citeline_http_requests_total" in metrics.text and "citeline_documents" in metrics.text
        assert "citeline_refusal_rate" in metrics.text and "citeline_removed_sentence_share" in metrics.text
        assert reader.get("/v1/me").json() == {
            "user": "bob",
            "groups": [],
            "role": "reader",
            "label": "user:bob",
            "anonymous": False,
        }


def test_traces_are_read_by_their_owner_or_an_admin(url: str, corpus: Corpus) -> None:
    with client(url, corpus.writer_key) as alice, client(url, corpus.reader_key) as bob:
        answer = alice.post("/v1/ask", json={"question": Q_ERROR}).json()
        trace_id = answer["trace_id"]
        assert alice.get(f"/v1/traces/{trace_id}").json()["owner"] == "user:alice"
        assert bob.get(f"/v1/traces/{trace_id}").status_code == 404
        with client(url, corpus.admin_key) as admin:
            assert admin.get(f"/v1/traces/{trace_id}").status_code == 200
        assert bob.get("/v1/traces/not-a-trace").status_code == 404


def test_an_admin_reads_a_traces_shape_but_not_documents_it_may_not_read(url: str, corpus: Corpus) -> None:
    """root is an admin without groups: it opens alice's trace of the finance-only budget, with its
    stages and timings, but nothing of budget.md (not its passages, name, quotes or answer)."""
    with client(url, corpus.writer_key) as alice, client(url, corpus.admin_key) as root:
        answer = alice.post("/v1/ask", json={"question": Q_BUDGET}).json()
        assert not answer["refused"] and SECRET in answer["answer"]
        own = alice.get(f"/v1/traces/{answer['trace_id']}")
        assert own.status_code == 200 and SECRET in own.text and own.json()["redacted"] is False
        r = root.get(f"/v1/traces/{answer['trace_id']}")
        assert r.status_code == 200
        assert SECRET not in r.text and "budget.md" not in r.text and "4.2 million" not in r.text
        seen, full = r.json(), own.json()
        assert seen["redacted"] is True and seen["question"] == Q_BUDGET
        assert seen["timings_ms"] == full["timings_ms"] and len(seen["context"]) == len(full["context"])
        assert [h["score"] for h in seen["context"]] == [h["score"] for h in full["context"]]
        assert any(h.get("redacted") for h in seen["context"])
        assert all(h["source"] != "restricted/budget.md" for h in seen["candidates"]["fused"])
        assert [c["supported"] for c in seen["verification"]] == [
            c["supported"] for c in full["verification"]
        ]
    # a trace of documents the admin may read is shown whole (bob, like root, has no groups)
    with client(url, corpus.reader_key) as bob, client(url, corpus.admin_key) as root:
        other = bob.post("/v1/ask", json={"question": Q_ERROR}).json()
        whole = root.get(f"/v1/traces/{other['trace_id']}").json()
        assert whole["redacted"] is False and whole["answer"] == other["answer"]


# -- answers ---------------------------------------------------------------------------------------


def test_ask_returns_the_cli_json_contract(url: str, corpus: Corpus) -> None:
    with client(url, corpus.reader_key) as c:
        r = c.post("/v1/ask", json={"question": Q_ERROR})
    assert r.status_code == 200
    data = r.json()
    expected = corpus.kb.ask(Q_ERROR, Principal(user="bob")).to_json()
    for key in ("answer", "refused", "citations", "sentences", "generator"):
        assert data[key] == expected[key]
    assert data["citations"][0]["source"] == "docs/error-codes.md"


def test_restricted_document_is_invisible_without_the_group(url: str, corpus: Corpus) -> None:
    with client(url, corpus.reader_key) as bob, client(url, corpus.writer_key) as alice:
        refused = bob.post("/v1/ask", json={"question": Q_BUDGET}).json()
        assert SECRET not in json.dumps(refused)
        assert all(
            SECRET not in h["text"]
            for h in bob.post("/v1/search", json={"query": Q_BUDGET}).json()["results"]
        )
        bob_docs = bob.get("/v1/documents?limit=500").json()["documents"]
        assert "restricted/budget.md" not in {d["source"] for d in bob_docs}
        answered = alice.post("/v1/ask", json={"question": Q_BUDGET}).json()
        assert not answered["refused"] and "4.2 million" in answered["answer"]
        doc_id = answered["citations"][0]["document_id"]
        for path in (
            f"/v1/documents/{doc_id}",
            f"/v1/documents/{doc_id}/text",
            f"/v1/documents/{doc_id}/file",
        ):
            assert alice.get(path).status_code == 200
            r = bob.get(path)
            assert r.status_code == 404 and SECRET not in r.text


def test_bad_json_unknown_ids_and_bad_spans(url: str, corpus: Corpus) -> None:
    with client(url, corpus.reader_key) as c:
        r = c.post("/v1/ask", content=b'{"question": ', headers={"Content-Type": "application/json"})
        assert r.status_code == 400 and error_message(r) == "The request body is not valid JSON."
        r = c.post("/v1/ask", json={"question": Q_ERROR, "colour": "red"})
        assert r.status_code == 422 and "colour" in error_message(r)
        r = c.post("/v1/ask", json={"question": ""})
        assert r.status_code == 422 and "question" in error_message(r)
        r = c.post("/v1/ask", json={"question": "x" * 3000})
        assert r.status_code == 400 and "max_question_chars" in error_message(r)
        assert c.get("/v1/documents/0123456789abcdef01234567").status_code == 404
        assert (
            c.delete("/v1/documents/0123456789abcdef01234567").status_code == 403
        )  # a reader deletes nothing
        assert c.get("/v1/jobs/nope").status_code == 404
        assert c.get("/v1/nothing-here").status_code == 404
        doc = next(
            d for d in c.get("/v1/documents?limit=500").json()["documents"] if d["format"] == "markdown"
        )
        r = c.get(f"/v1/documents/{doc['id']}/text?start=30&end=20")
        assert r.status_code == 400 and "reversed" in error_message(r)
        r = c.get(f"/v1/documents/{doc['id']}/pages/1.png")
        assert r.status_code == 400 and "not a PDF" in error_message(r)


def test_request_body_limit(url: str, corpus: Corpus) -> None:
    with client(url, corpus.reader_key) as c:
        r = c.post(
            "/v1/ask",
            content=json.dumps({"question": "a" * 100_000}).encode(),
            headers={"Content-Type": "application/json"},
        )
        assert r.status_code == 413 and "limit" in error_message(r)


def test_eight_concurrent_asks(url: str, corpus: Corpus) -> None:
    questions = [
        Q_ERROR,
        "How long are audit logs kept?",
        "How often is the gateway token rotated?",
        "How often should the office kettle be descaled?",
    ] * 2

    def one(q: str) -> dict[str, object]:
        with client(url, corpus.reader_key) as c:
            r = c.post("/v1/ask", json={"question": q})
            assert r.status_code == 200, r.text
            data: dict[str, object] = r.json()
            return data

    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(one, questions))
    for a, b in zip(answers[:4], answers[4:], strict=True):
        assert a["answer"] == b["answer"] and a["citations"] == b["citations"]
    assert not answers[0]["refused"]


def test_search(url: str, corpus: Corpus) -> None:
    with client(url, corpus.reader_key) as c:
        results = c.post("/v1/search", json={"query": "LDG-4012", "k": 3}).json()["results"]
        assert len(results) == 3 and results[0]["source"] == "docs/error-codes.md"
        assert c.post("/v1/search", json={"query": "x", "k": 1000}).status_code == 422


# -- PDFs ------------------------------------------------------------------------------------------


def test_pdf_page_and_span_boxes(url: str, corpus: Corpus) -> None:
    with client(url, corpus.reader_key) as c:
        answer = c.post("/v1/ask", json={"question": "How often does the gateway token rotate?"}).json()
        cite = next(x for x in answer["citations"] if x["source"] == "docs/manual.pdf")
        assert cite["page"] == 1
        png = c.get(f"/v1/documents/{cite['document_id']}/pages/1.png?scale=1")
        assert png.status_code == 200 and png.content.startswith(b"\x89PNG")
        info = c.get(
            f"/v1/documents/{cite['document_id']}/pages/1/boxes",
            params={"start": cite["quote_start"], "end": cite["quote_end"]},
        ).json()
        assert info["positions"] is True and info["boxes"]
        for box in info["boxes"]:
            assert 0 <= box["x"] < 1 and 0 <= box["y"] < 1 and 0 < box["w"] <= 1 and 0 < box["h"] < 0.1
        assert c.get(f"/v1/documents/{cite['document_id']}/pages/9.png").status_code == 400


# -- uploads ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("../escape.md", "outside its folder"),
        ("/etc/passwd.md", "absolute path"),
        ("sub/dir.md", "has folders"),
        ("notes.exe", "Unsupported file type"),
    ],
)
def test_upload_names_that_try_to_escape(url: str, corpus: Corpus, name: str, reason: str) -> None:
    with client(url, corpus.writer_key) as c:
        r = c.post("/v1/documents", files={"file": (name, b"# Title\n\nSome text here.\n")})
    assert r.status_code in (400, 415), r.text
    assert reason in error_message(r)


def test_upload_name_with_a_raw_nul_byte(url: str, corpus: Corpus) -> None:
    # httpx escapes control characters in file names: send the multipart body by hand
    body = (
        b'--XyZ\r\nContent-Disposition: form-data; name="file"; filename="evil\x00.md"\r\n'
        b"Content-Type: text/markdown\r\n\r\n# T\n\nText.\n\r\n--XyZ--\r\n"
    )
    with client(url, corpus.writer_key) as c:
        r = c.post(
            "/v1/documents", content=body, headers={"Content-Type": "multipart/form-data; boundary=XyZ"}
        )
    assert r.status_code == 400 and "NUL" in error_message(r), r.text


def test_upload_names_with_nul_or_a_drive_are_refused() -> None:
    # (multipart parsers already cut a Windows path to its last part: checked here directly)
    from citeline.server.uploads import UploadError, check_name

    with pytest.raises(UploadError, match="NUL"):
        check_name("report\x00.md")
    with pytest.raises(UploadError, match="absolute path"):
        check_name("C:\\x\\evil.md")
    with pytest.raises(UploadError, match="outside its folder"):
        check_name("..\\evil.md")
    assert check_name("report 2031 (final).md") == "report 2031 (final).md"


def test_upload_type_is_checked_by_content(url: str, corpus: Corpus) -> None:
    with client(url, corpus.writer_key) as c:
        r = c.post("/v1/documents", files={"file": ("fake.pdf", b"# not a pdf\n\ntext\n")})
        assert r.status_code == 415 and "not a PDF" in error_message(r)
        r = c.post("/v1/documents", files={"file": ("fake.md", b"%PDF-1.7\n...binary...")})
        assert r.status_code == 415 and "binary" in error_message(r)
        r = c.post("/v1/documents", files={"file": ("empty.md", b"   ")})
        assert r.status_code == 400 and "empty" in error_message(r)


def test_uploads_are_namespaced_private_and_answerable(url: str, corpus: Corpus) -> None:
    report_a = b"# Report\n\n## Harvest\n\nThe plumquat harvest yielded 940 crates in the northern orchard.\n"
    report_b = b"# Report\n\n## Harvest\n\nThe plumquat harvest in the southern orchard was lost to frost.\n"
    with client(url, corpus.writer_key) as alice, client(url, corpus.admin_key) as root:
        a = alice.post("/v1/documents", files={"file": ("report.md", report_a)})
        assert a.status_code == 201, a.text
        b = root.post("/v1/documents", files={"file": ("report.md", report_b)}, data={"share": "public"})
        assert b.status_code == 201, b.text
        doc_a, doc_b = a.json()["document"], b.json()["document"]
        assert doc_a["collection"] == "uploads/alice" and doc_b["collection"] == "uploads/root"
        assert doc_a["id"] != doc_b["id"] and doc_a["acl"] == ["user:alice"]
        assert set(doc_b["acl"]) == {"public", "user:root"}
        answer = alice.post(
            "/v1/ask", json={"question": "How many crates did the plumquat harvest yield?"}
        ).json()
        assert not answer["refused"] and "940 crates" in answer["answer"]
        assert answer["citations"][0]["document_id"] == doc_a["id"]
        with client(url, corpus.reader_key) as bob:
            assert bob.get(f"/v1/documents/{doc_a['id']}").status_code == 404
            assert bob.get(f"/v1/documents/{doc_b['id']}").status_code == 200
            assert bob.delete(f"/v1/documents/{doc_b['id']}").status_code == 403
        # alice may not delete a document that is neither hers nor her group's
        other = next(
            d
            for d in alice.get("/v1/documents?limit=500").json()["documents"]
            if d["collection"] == "default" and not d["acl"]
        )
        r = alice.delete(f"/v1/documents/{other['id']}")
        assert r.status_code == 403 and "own uploads" in error_message(r)
        assert alice.delete(f"/v1/documents/{doc_a['id']}").status_code == 204
        assert alice.get(f"/v1/documents/{doc_a['id']}").status_code == 404
        assert root.delete(f"/v1/documents/{doc_b['id']}").status_code == 204


def test_large_upload_becomes_a_job(corpus: Corpus) -> None:
    kb = variant(corpus.kb, server_async_upload_kb=1)
    paragraphs = "".join(
        f"## Part {i}\n\nThe glimmerfen sensor {i} reads {i * 7} lux at noon.\n\n" for i in range(60)
    )
    body = f"# Glimmerfen Sensors\n\n{paragraphs}".encode()
    with serving(kb) as url, client(url, corpus.writer_key) as c:
        r = c.post("/v1/documents", files={"file": ("sensors.md", body)})
        assert r.status_code == 202, r.text
        poll = r.json()["poll"]
        deadline = time.monotonic() + 60
        while (job := c.get(poll).json())["state"] not in ("done", "failed"):
            assert time.monotonic() < deadline
            time.sleep(0.2)
        assert job["state"] == "done", job
        with client(url, corpus.reader_key) as bob:
            assert bob.get(poll).status_code == 404  # another key's job
        assert c.delete(f"/v1/documents/{job['result']['document']['id']}").status_code == 204
    kb.close()


def test_oversized_upload(corpus: Corpus) -> None:
    kb = variant(corpus.kb, server_max_upload_mb=0.01)
    with serving(kb) as url, client(url, corpus.writer_key) as c:
        r = c.post("/v1/documents", files={"file": ("big.md", b"# Big\n\n" + b"word " * 40_000)})
        assert r.status_code == 413 and "limit" in error_message(r)
        r = c.post("/v1/documents", files={"file": ("small-big.md", b"# Big\n\n" + b"word " * 2_100)})
        assert r.status_code == 413 and "0.01 MB" in error_message(r)
    kb.close()


# -- limits and CORS --------------------------------------------------------------------------------


def test_rate_limit_per_key(corpus: Corpus) -> None:
    kb = variant(corpus.kb, server_rate_limit=3)
    with serving(kb) as url, client(url, corpus.reader_key) as bob, client(url, corpus.writer_key) as alice:
        codes = [bob.get("/v1/me").status_code for _ in range(5)]
        assert codes[:3] == [200, 200, 200] and codes[3:] == [429, 429]
        r = bob.get("/v1/me")
        assert int(r.headers["retry-after"]) >= 1 and "Rate limit" in error_message(r)
        assert alice.get("/v1/me").status_code == 200  # per key
    kb.close()


def test_cors_is_off_by_default(url: str, corpus: Corpus) -> None:
    with client(url, corpus.reader_key) as c:
        r = c.get("/v1/me", headers={"Origin": "https://evil.example"})
        assert "access-control-allow-origin" not in r.headers
        pre = c.options(
            "/v1/ask", headers={"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"}
        )
        assert "access-control-allow-origin" not in pre.headers
    kb = variant(corpus.kb, server_cors_origins="https://app.example")
    with serving(kb, mcp=False) as url2, client(url2, corpus.reader_key) as c:
        r = c.get("/v1/me", headers={"Origin": "https://app.example"})
        assert r.headers["access-control-allow-origin"] == "https://app.example"
    kb.close()


def test_anonymous_access_is_off_unless_allowed(corpus: Corpus) -> None:
    public = b"# Ferry Timetable\n\n## Winter\n\nThe winter ferry to Skellig leaves at 07:40 every Tuesday.\n"
    with serving(corpus.kb, allow_anonymous=True, mcp=False) as url, client(url) as anon:
        with client(url, corpus.writer_key) as alice:
            up = alice.post(
                "/v1/documents", files={"file": ("ferry.md", public)}, data={"share": "public"}
            ).json()
        docs = anon.get("/v1/documents?limit=500").json()["documents"]
        assert [d["source"] for d in docs] == ["ferry.md"]  # public documents only
        assert anon.post("/v1/documents", files={"file": ("x.md", b"# X\n\ny\n")}).status_code == 403
        anon.post("/v1/ask", json={"question": "When does the winter ferry to Skellig leave?"})
        assert anon.get("/v1/traces").json() == {"traces": []}  # anonymous callers share one label
        with client(url, corpus.writer_key) as alice:
            assert alice.delete(f"/v1/documents/{up['document']['id']}").status_code == 204


def test_openapi_and_web_page(url: str) -> None:
    with client(url) as c:
        spec = c.get("/openapi.json").json()
        assert {
            "/v1/ask",
            "/v1/search",
            "/v1/documents",
            "/v1/documents/{document_id}/pages/{page}.png",
        } <= set(spec["paths"])
        page = c.get("/")
        assert page.status_code == 200 and "default-src 'self'" in page.headers["content-security-policy"]
        assert c.get("/static/app.js").status_code == 200
