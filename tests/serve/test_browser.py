"""The web page in a real browser: Playwright driving Debian's Chromium (never a downloaded one)
against a real server on loopback.

Needs `apt-get install chromium`, the `playwright` Python package and, for the accessibility
check, `npm ci --prefix tests/serve/axe` (axe-core); without them these tests skip, except under
CI=true where they fail. Screenshots go to $CITELINE_TEST_ARTIFACTS (default: a temporary folder);
the folder is printed at the end of the run.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from .conftest import HOSTILE, SECRET, Corpus, bearer, missing
from .live import serving

AXE = Path(__file__).parent / "axe" / "node_modules" / "axe-core" / "axe.min.js"
Q_BUDGET = "How large is the 2031 marketing budget?"


@pytest.fixture(scope="module")
def url(corpus: Corpus) -> Iterator[str]:
    with serving(corpus.kb) as base:
        yield base


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[Path]:
    given = os.environ.get("CITELINE_TEST_ARTIFACTS")
    folder = Path(given) / "browser" if given else tmp_path_factory.mktemp("browser-artifacts")
    folder.mkdir(parents=True, exist_ok=True)
    yield folder
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(f"browser test screenshots: {folder}")


class Session:
    """One signed-in tab; collects console errors and failed requests."""

    def __init__(self, browser: Any, url: str, key: str, width: int = 1280, bypass_csp: bool = False) -> None:
        # bypass_csp: only to inject axe-core (the page's policy allows its own scripts only)
        self.context = browser.new_context(viewport={"width": width, "height": 900}, bypass_csp=bypass_csp)
        self.page = self.context.new_page()
        self.problems: list[str] = []
        self.page.on("console", self._console)
        self.page.on("pageerror", lambda e: self.problems.append(str(e)))
        self.page.set_default_timeout(60_000)
        self.url = url
        self.page.goto(url + "/")
        self.page.fill("#key-input", key)
        self.page.click("#key-form button[type=submit]")
        self.page.wait_for_selector("#ask-view:not([hidden])")

    def _console(self, message: Any) -> None:
        if message.type == "error":
            self.problems.append(message.text)

    def ask(self, question: str) -> None:
        self.page.fill("#question", question)
        self.page.click("#ask-button")
        wait_until(
            self.page,
            "document.querySelector('#ask-status').textContent.startsWith('Answered') || "
            "document.querySelector('#ask-status').textContent.startsWith('No answer')",
        )

    def open_citation(self, n: int) -> None:
        self.page.click(f'#answer .cite[data-n="{n}"] >> nth=0')
        self.page.wait_for_selector("#source-panel:not([hidden]) mark.cited")

    def close(self) -> None:
        self.context.close()


def wait_until(page: Any, expression: str, timeout: float = 60.0) -> None:
    """Poll a JavaScript expression (the page's CSP forbids the eval that wait_for_function uses)."""
    deadline = time.monotonic() + timeout
    while not page.evaluate(expression):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for: {expression}")
        time.sleep(0.05)


def api_answer(url: str, key: str, question: str) -> dict[str, Any]:
    with httpx.Client(base_url=url, headers=bearer(key), timeout=120) as c:
        data: dict[str, Any] = c.post("/v1/ask", json={"question": question}).json()
        return data


@pytest.mark.parametrize(
    ("question", "source"),
    [
        ("What does error LDG-4012 mean?", "docs/error-codes.md"),
        ("How often should the office kettle be descaled?", "docs/kettle.html"),
        ("How often does the gateway token rotate?", "docs/manual.pdf"),
        ("What is the zorbulator flux capacitance?", "docs/unicode.md"),
    ],
    ids=["markdown", "html", "pdf", "emoji-cjk"],
)
def test_citation_opens_its_source_highlighted(
    browser: Any, url: str, corpus: Corpus, artifacts: Path, question: str, source: str
) -> None:
    expected = api_answer(url, corpus.reader_key, question)
    cite = next(c for c in expected["citations"] if c["source"] == source)
    s = Session(browser, url, corpus.reader_key)
    s.ask(question)
    s.open_citation(cite["n"])
    page = s.page
    assert page.text_content("mark.cited") == cite["quote"]
    support = cite["quote"][cite["quote_start"] - cite["start"] : cite["quote_end"] - cite["start"]]
    assert page.text_content("mark.support") == support
    assert page.text_content("#source-doc") == source
    assert page.text_content("#source-heading") == (cite["heading"] or "—")
    if source.endswith(".pdf"):
        page.wait_for_selector(".page img")
        wait_until(page, "document.querySelector('.page img').naturalWidth > 0")
        assert page.locator(".page .box").count() >= 1
        assert page.text_content("#source-page") == "1"
    name = source.rsplit("/", 1)[-1].replace(".", "-")
    page.screenshot(path=str(artifacts / f"citation-{name}.png"), full_page=True)
    assert not s.problems, s.problems
    s.close()


def test_code_points_become_utf16_offsets(browser: Any, url: str, corpus: Corpus) -> None:
    s = Session(browser, url, corpus.reader_key)
    assert s.page.evaluate("cpToUtf16('a😀漢b🎉c', [0, 1, 2, 3, 4, 5, 6])") == [0, 1, 3, 4, 5, 7, 8]
    s.close()


def test_upload_then_answer_then_delete(browser: Any, url: str, corpus: Corpus, artifacts: Path) -> None:
    s = Session(browser, url, corpus.writer_key)
    page = s.page
    page.click("#nav-docs")
    page.wait_for_selector("#docs-view:not([hidden])")
    body = b"# Harbour Notes\n\n## Tides\n\nThe Quillon harbour gate opens two hours before high tide.\n"
    page.set_input_files(
        "#upload-file", files=[{"name": "harbour.md", "mimeType": "text/markdown", "buffer": body}]
    )
    page.select_option("#upload-share", "private")
    page.click("#upload-button")
    wait_until(page, "document.querySelector('#upload-status').textContent.startsWith('Indexed')")
    page.wait_for_selector('#docs-list li:has-text("harbour.md")')
    page.screenshot(path=str(artifacts / "documents.png"), full_page=True)
    page.click("#nav-ask")
    s.ask("How long before high tide does the Quillon harbour gate open?")
    assert "two hours before high tide" in page.text_content("#answer")
    assert "harbour.md" in page.text_content("#sources")
    s.open_citation(1)
    assert "Quillon harbour gate" in page.text_content("mark.cited")
    page.click("#nav-docs")
    page.once("dialog", lambda d: d.accept())
    page.click('#docs-list li:has-text("harbour.md") button')
    wait_until(page, "document.querySelector('#upload-status').textContent.startsWith('Deleted')")
    assert "harbour.md" not in page.text_content("#docs-list")
    assert not s.problems, s.problems
    s.close()


def test_restricted_document_never_appears_without_the_group(browser: Any, url: str, corpus: Corpus) -> None:
    bob = Session(browser, url, corpus.reader_key)
    bob.ask(Q_BUDGET)
    assert bob.page.is_visible("#refusal")
    bob.page.click("#trace-panel summary")
    bob.page.wait_for_selector("#trace-body table")
    html = bob.page.content()
    assert SECRET not in html and "budget.md" not in html
    bob.page.click("#nav-docs")
    wait_until(bob.page, "document.querySelector('#docs-count').textContent.length > 0")
    assert "budget" not in bob.page.text_content("#docs-list").lower()
    assert SECRET not in bob.page.content()
    bob.close()
    alice = Session(browser, url, corpus.writer_key)
    alice.ask(Q_BUDGET)
    assert "4.2 million" in alice.page.text_content("#answer")
    alice.close()


def test_keyboard_narrow_screen_and_trace(browser: Any, url: str, corpus: Corpus, artifacts: Path) -> None:
    s = Session(browser, url, corpus.reader_key, width=375)
    page = s.page
    s.ask("What does error LDG-4012 mean?")
    page.focus("#question")
    for _ in range(30):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.classList.contains('cite')"):
            break
    else:
        pytest.fail("Tab never reached a citation")
    page.keyboard.press("Enter")
    page.wait_for_selector("#source-panel:not([hidden]) mark.cited")
    page.click("#trace-panel summary")
    page.wait_for_selector("#trace-body table")
    assert page.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth")
    page.screenshot(path=str(artifacts / "narrow-375.png"), full_page=True)
    assert not s.problems, s.problems
    s.close()


def test_document_text_is_never_html(browser: Any, url: str, corpus: Corpus) -> None:
    s = Session(browser, url, corpus.reader_key)
    s.ask("What did the survey log near the jetty on Rottnest Island?")
    s.open_citation(1)
    assert s.page.title() == "citeline"
    assert s.page.locator("img[src='x'], #source-text script").count() == 0
    assert HOSTILE in s.page.text_content("#source-text")
    s.close()


HOSTILE_NAME = "<img src=x onerror=document.title='PWNED'>.md"
HOSTILE_UPLOAD = (
    b"# <img src=x onerror=\"document.title='PWNED'\"> Lighthouse\n\n"
    b"## <script>document.title='PWNED'</script> Lamps\n\n"
    b"The Gullrock lighthouse lamp turns every 12 seconds <b onmouseover=alert(1)>fast</b>.\n"
)


def test_hostile_names_titles_and_headings_stay_text(browser: Any, url: str, corpus: Corpus) -> None:
    """Markup in a file name, a title and a heading trail is shown as text everywhere the page
    shows them: the documents list, the answer's sources, the source panel and the trace."""
    s = Session(browser, url, corpus.writer_key)
    page = s.page
    page.click("#nav-docs")
    page.wait_for_selector("#docs-view:not([hidden])")
    page.set_input_files(
        "#upload-file", files=[{"name": HOSTILE_NAME, "mimeType": "text/markdown", "buffer": HOSTILE_UPLOAD}]
    )
    page.click("#upload-button")
    wait_until(page, "document.querySelector('#upload-status').textContent.startsWith('Indexed')")
    # the list is fetched again after the upload: wait for it rather than read it at once (a loaded
    # CI machine read it empty)
    wait_until(page, f"document.querySelector('#docs-list').textContent.includes({json.dumps(HOSTILE_NAME)})")
    assert HOSTILE_NAME in page.text_content("#docs-list")
    page.click("#nav-ask")
    s.ask("How often does the Gullrock lighthouse lamp turn?")
    assert "12 seconds" in page.text_content("#answer")
    s.open_citation(1)
    page.click("#trace-panel summary")
    page.wait_for_selector("#trace-body table")
    assert "<script>" in page.text_content("body") and "onerror" in page.text_content("body")
    assert page.title() == "citeline"
    assert page.locator("img[src='x'], b[onmouseover], #answer script, #sources script").count() == 0
    assert page.evaluate("document.querySelectorAll('script:not([src])').length") == 0
    page.click("#nav-docs")
    page.once("dialog", lambda d: d.accept())
    page.click(f'#docs-list li:has-text("{HOSTILE_NAME[:12]}") button')
    wait_until(page, "document.querySelector('#upload-status').textContent.startsWith('Deleted')")
    assert page.title() == "citeline" and not s.problems, s.problems
    s.close()


def test_no_serious_accessibility_violations(browser: Any, url: str, corpus: Corpus) -> None:
    if not AXE.is_file():
        missing(f"axe-core not installed at {AXE} (npm ci --prefix tests/serve/axe)")
    s = Session(browser, url, corpus.reader_key, bypass_csp=True)
    page = s.page
    found: list[str] = []

    def check(where: str) -> None:
        page.add_script_tag(path=str(AXE))
        result = page.evaluate("axe.run(document, {resultTypes: ['violations']})")
        for v in result["violations"]:
            if v["impact"] in ("serious", "critical"):
                found.append(
                    f"{where}: {v['id']} ({v['impact']}): {v['help']} {[n['target'] for n in v['nodes']]}"
                )

    s.ask("How often does the gateway token rotate?")
    s.open_citation(1)
    page.wait_for_selector(".page img")
    page.click("#trace-panel summary")
    page.wait_for_selector("#trace-body table")
    check("answer with source and trace")
    page.click("#nav-docs")
    wait_until(page, "document.querySelector('#docs-count').textContent.length > 0")
    check("documents")
    page.click("#sign-out")
    check("key form")
    assert not found, "\n".join(found)
    s.close()
