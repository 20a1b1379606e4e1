"""The HTTP API's protective edges through a real server on loopback: response headers, throttled
key guessing, download and upload names, spans past the end, key expiry."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from urllib.parse import unquote

import httpx
import pytest

from citeline.access import create_key

from .conftest import Corpus, bearer
from .live import serving, variant


@pytest.fixture(scope="module")
def url(corpus: Corpus) -> Iterator[str]:
    with serving(corpus.kb) as base:
        yield base


def client(url: str, key: str | None = None, address: str | None = None) -> httpx.Client:
    transport = httpx.HTTPTransport(local_address=address) if address else None
    return httpx.Client(base_url=url, headers=bearer(key) if key else {}, timeout=120, transport=transport)


def error_message(response: httpx.Response) -> str:
    message: str = response.json()["error"]["message"]
    return message


# -- headers ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/docs", "/redoc"])
def test_api_documentation_pages_have_a_csp_with_a_nonce_for_their_one_script(url: str, path: str) -> None:
    with client(url) as c:
        r = c.get(path)
    assert r.status_code == 200
    policy = r.headers["content-security-policy"]
    nonce = re.search(r"'nonce-([^']+)'", policy)
    assert nonce and "'unsafe-inline'" not in policy.split("script-src", 1)[1].split(";")[0]
    assert "frame-ancestors 'none'" in policy and "default-src 'none'" in policy
    scripts = re.findall(r"<script[^>]*>", r.text)
    assert scripts and all(f'nonce="{nonce.group(1)}"' in s for s in scripts)
    assert r.headers["x-content-type-options"] == "nosniff"
    with client(url) as c:
        again = re.search(r"'nonce-([^']+)'", c.get(path).headers["content-security-policy"])
    assert again and again.group(1) != nonce.group(1)  # a new nonce for every response


def test_nosniff_everywhere_and_no_store_for_what_a_key_opens(url: str, corpus: Corpus) -> None:
    with client(url, corpus.reader_key) as c:
        pdf = next(d for d in c.get("/v1/documents?limit=500").json()["documents"] if d["format"] == "pdf")
        private = [
            c.get("/v1/me"),
            c.get("/v1/documents"),
            c.get(f"/v1/documents/{pdf['id']}/text?start=0&end=10"),
            c.get(f"/v1/documents/{pdf['id']}/pages/1.png?scale=0.5"),
            c.post("/v1/search", json={"query": "kettle"}),
            c.get("/v1/documents/0123456789abcdef01234567"),  # a 404 of a keyed route
        ]
        with c.stream(
            "POST",
            "/v1/ask",
            json={"question": "How often should the office kettle be descaled?", "stream": True},
        ) as streamed:
            streamed.read()
            private.append(streamed)
        public = [c.get("/static/app.js"), c.get("/static/app.css"), c.get("/"), c.get("/healthz")]
    with client(url) as anonymous:
        private.append(anonymous.get("/v1/me"))  # 401
    for r in private:
        assert r.headers["x-content-type-options"] == "nosniff", r.url
        assert r.headers["cache-control"] == "no-store", r.url
    for r in public:
        assert r.status_code == 200 and r.headers["x-content-type-options"] == "nosniff", r.url


def test_too_large_refusals_carry_the_headers_too(url: str, corpus: Corpus) -> None:
    with client(url, corpus.reader_key) as c:
        r = c.post(
            "/v1/ask", content=b"{" + b" " * 200_000 + b"}", headers={"Content-Type": "application/json"}
        )
    assert r.status_code == 413 and r.headers["x-content-type-options"] == "nosniff"


# -- guessing keys ---------------------------------------------------------------------------------


def test_wrong_keys_from_one_address_are_throttled(corpus: Corpus) -> None:
    kb = variant(corpus.kb, server_key_failures=5)
    with serving(kb) as url, client(url, address="127.0.0.1") as guesser:
        codes = [guesser.get("/v1/me", headers=bearer(f"cl_guess_{i}")).status_code for i in range(5)]
        assert codes == [401] * 5
        r = guesser.get("/v1/me", headers=bearer("cl_guess_6"))
        assert r.status_code == 429 and int(r.headers["retry-after"]) >= 1
        assert "Too many wrong API keys" in error_message(r)
        # while it waits, the right key does not get through either (or guesses could be tested)
        assert guesser.get("/v1/me", headers=bearer(corpus.reader_key)).status_code == 429
        mcp = guesser.post("/mcp", headers=bearer(corpus.reader_key), json={})
        assert mcp.status_code == 429 and mcp.headers["retry-after"]
        # another address is not held back
        with client(url, corpus.reader_key, address="127.0.0.2") as other:
            assert other.get("/v1/me").status_code == 200
    kb.close()


# -- names and spans -------------------------------------------------------------------------------


def test_download_names_keep_non_ascii_letters(url: str, corpus: Corpus) -> None:
    name = "naïve café 東京.md"
    with client(url, corpus.writer_key) as alice:
        up = alice.post("/v1/documents", files={"file": (name, b"# Cafe\n\nThe naive cafe opens at nine.\n")})
        assert up.status_code == 201, up.text
        doc = up.json()["document"]
        r = alice.get(f"/v1/documents/{doc['id']}/file")
        assert alice.delete(f"/v1/documents/{doc['id']}").status_code == 204
    disposition = r.headers["content-disposition"]
    assert disposition.startswith("attachment; ")
    encoded = re.search(r"filename\*=UTF-8''([^;]+)", disposition)
    assert encoded and unquote(encoded.group(1)) == name
    plain = re.search(r'filename="([^"]*)"', disposition)
    assert plain and plain.group(1).isascii() and plain.group(1).endswith(".md")


def _upload_raw(c: httpx.Client, filename: str) -> httpx.Response:
    # multipart by hand: the name's characters reach the server exactly as written
    body = (
        b'--XyZ\r\nContent-Disposition: form-data; name="file"; filename="'
        + filename.encode("utf-8")
        + b'"\r\nContent-Type: text/markdown\r\n\r\n# T\n\nText.\n\r\n--XyZ--\r\n'
    )
    return c.post(
        "/v1/documents", content=body, headers={"Content-Type": "multipart/form-data; boundary=XyZ"}
    )


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("invoice\u202egnp.md", "bidirectional control character (U+202E)"),
        ("\u2066notes\u2069.md", "bidirectional control character (U+2066)"),
        ("report\u200f.md", "bidirectional control character (U+200F)"),
        ("next\x85line.md", "control character"),
        ("para\u2029graph.md", "control character"),
    ],
    ids=["rlo", "isolate", "rlm", "c1-control", "separator"],
)
def test_upload_names_with_bidi_or_control_characters_are_refused(
    url: str, corpus: Corpus, name: str, reason: str
) -> None:
    with client(url, corpus.writer_key) as c:
        r = _upload_raw(c, name)
    assert r.status_code == 400 and reason in error_message(r), r.text


def test_text_spans_past_the_end_stop_at_it(url: str, corpus: Corpus) -> None:
    with client(url, corpus.reader_key) as c:
        doc = next(
            d for d in c.get("/v1/documents?limit=500").json()["documents"] if d["format"] == "markdown"
        )
        whole = c.get(f"/v1/documents/{doc['id']}/text").json()
        n = whole["length"]
        r = c.get(f"/v1/documents/{doc['id']}/text?start=10&end=999999")
        assert r.status_code == 200
        assert (r.json()["start"], r.json()["end"], r.json()["text"]) == (10, n, whole["text"][10:])
        beyond = c.get(f"/v1/documents/{doc['id']}/text?start={n + 5}&end={n + 50}").json()
        assert (beyond["start"], beyond["end"], beyond["text"]) == (n, n, "")
        reversed_span = c.get(f"/v1/documents/{doc['id']}/text?start=40&end=10")
        assert reversed_span.status_code == 400 and "reversed" in error_message(reversed_span)


# -- key expiry ------------------------------------------------------------------------------------


def test_a_key_stops_working_when_it_expires(url: str, corpus: Corpus) -> None:
    key, record = create_key(corpus.kb.store, "dora", (), "reader", expires_at=time.time() + 2.0)
    with client(url, key) as dora:
        assert dora.get("/v1/me").status_code == 200
        time.sleep(max(0.0, (record.expires_at or 0) - time.time()) + 0.1)
        r = dora.get("/v1/me")
    assert r.status_code == 401 and "expired on" in error_message(r)


def test_admins_create_keys_with_an_expiry(url: str, corpus: Corpus) -> None:
    with client(url, corpus.admin_key) as root:
        made = root.post("/v1/keys", json={"user": "erin", "expires": "30d"})
        assert made.status_code == 201, made.text
        assert abs(made.json()["expires_at"] - (time.time() + 30 * 86400)) < 120
        listed = {k["id"]: k for k in root.get("/v1/keys").json()["keys"]}
        assert listed[made.json()["id"]]["expires_at"] == made.json()["expires_at"]
        past = root.post("/v1/keys", json={"user": "erin", "expires": "2001-01-01"})
        assert past.status_code == 400 and "already past" in error_message(past)
        nonsense = root.post("/v1/keys", json={"user": "erin", "expires": "soon"})
        assert nonsense.status_code == 400 and "duration" in error_message(nonsense)
        assert root.delete(f"/v1/keys/{made.json()['id']}").status_code == 204
