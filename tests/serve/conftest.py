"""One index for the server, MCP and browser tests: Markdown, HTML and PDF sources, a document only
the finance group may read, one with an emoji and CJK text before its cited span, one with hostile
markup in its text; keys for a writer in finance, a reader without groups, an admin and a revoked one."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import citeline
from citeline.access import create_key, revoke
from citeline.kb import KnowledgeBase
from datasets import in_ci
from ingest.pdfgen import Page, build_pdf, flow

ROOT = Path(__file__).resolve().parents[2]

#: only group:finance may read the document that says this
SECRET = "Zephyr committee"
HOSTILE = '<img src=x onerror="document.title=\'PWNED\'"><script>document.title="PWNED"</script>'

HTML = """<!doctype html><html><head><title>Kettle Care</title></head><body>
<h1>Kettle Care</h1><h2>Descaling</h2>
<p>Descale the office kettle every 30 days with citric acid. Rinse it twice before boiling water again.</p>
<h2>Cables</h2><p>Never wrap the kettle cable around the base while it is still warm.</p>
</body></html>"""

UNICODE_MD = """# 東京 Launch Notes 😀

The launch party 🎉 in 東京 had 120 guests and a 🍣 buffet.

## Flux readings

The zorbulator flux capacitance is 88 gigawatts at full load. It drops to 61 gigawatts when idle.
"""

BUDGET_MD = f"""# Marketing Budget 2031

## Approval

The 2031 marketing budget is 4.2 million euros, approved by the {SECRET} in March.
"""

HOSTILE_MD = f"""# Quokka Field Notes

## Behaviour

Quokkas on Rottnest Island greet visitors at dawn; the survey logged {HOSTILE} near the jetty.
"""


def manual_pdf() -> bytes:
    lines, _ = flow(
        [
            (18, ["Gateway Operations Manual"]),
            (
                11,
                "The gateway token rotates every ninety days. To rotate it early, run the rotate command "
                "from the admin console and confirm the prompt. Old tokens stop working after one hour of grace.",
            ),
            (11, "Gateway logs are kept for fourteen days and then deleted by the nightly cleanup job."),
        ]
    )
    return build_pdf([Page(lines)], title="Gateway Operations Manual")


@dataclass(frozen=True)
class Corpus:
    kb: KnowledgeBase
    index: Path
    docs: Path
    writer_key: str  # alice: writer, group finance
    reader_key: str  # bob: reader, no groups
    admin_key: str  # root: admin
    revoked_key: str


@pytest.fixture(scope="session")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Corpus]:
    base = tmp_path_factory.mktemp("serve")
    docs = base / "docs"
    docs.mkdir()
    for name in ("error-codes.md", "security-policy.md"):
        shutil.copy(ROOT / "samples" / name, docs / name)
    (docs / "kettle.html").write_text(HTML, encoding="utf-8")
    (docs / "unicode.md").write_text(UNICODE_MD, encoding="utf-8")
    (docs / "quokkas.md").write_text(HOSTILE_MD, encoding="utf-8")
    (docs / "manual.pdf").write_bytes(manual_pdf())
    restricted = base / "restricted"
    restricted.mkdir()
    (restricted / "budget.md").write_text(BUDGET_MD, encoding="utf-8")
    kb = citeline.open(base / "index")
    report = kb.add([docs], root=base)
    assert not report.failed, report.failed
    report = kb.add([restricted], acl=["group:finance"], root=base)
    assert not report.failed, report.failed
    store = kb.store
    writer, _ = create_key(store, "alice", ("finance",), "writer")
    reader, _ = create_key(store, "bob", (), "reader")
    admin, _ = create_key(store, "root", (), "admin")
    revoked, record = create_key(store, "carol", (), "reader")
    revoke(store, record.id)
    yield Corpus(kb, base / "index", docs, writer, reader, admin, revoked)
    kb.close()


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


# -- the browser of the page tests (test_browser*.py) ----------------------------------------------


def missing(reason: str) -> None:
    if in_ci():
        pytest.fail(reason + " (CI=true, so this is an error)", pytrace=False)
    pytest.skip(reason)


def _chromium() -> str:
    found = (
        os.environ.get("CITELINE_TEST_CHROMIUM")
        or shutil.which("chromium")
        or shutil.which("chromium-browser")
    )
    if not found:
        missing("chromium not installed (apt-get install -y chromium)")
    return str(found)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        missing("the playwright package is not installed (pip install 'citeline[dev]')")
    args = [
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--no-first-run",
    ]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        args.append("--no-sandbox")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=_chromium(), headless=True, args=args, timeout=60_000)
        yield b
        b.close()
