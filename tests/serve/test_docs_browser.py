"""The OpenAPI pages (/docs: Swagger UI, /redoc: ReDoc) in a real browser, offline: Playwright driving
Debian's Chromium against a real server on loopback. Each page renders the API's operations with
every request answered by this server (anything else is aborted and fails the test) and no CSP
violation. Skips like test_browser.py without Chromium or Playwright (fails under CI=true)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import citeline

from .live import serving


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    kb = citeline.open(tmp_path_factory.mktemp("docs-ui") / "index", embedder="hashing")
    try:
        with serving(kb) as base:
            yield base
    finally:
        kb.close()


class Offline:
    """A tab in which every request that would leave ``url`` is aborted and recorded."""

    def __init__(self, browser: Any, url: str) -> None:
        self.context = browser.new_context(viewport={"width": 1280, "height": 900})
        self.outside: list[str] = []
        self.problems: list[str] = []
        self.served: list[str] = []

        def route(r: Any) -> None:
            target = r.request.url
            if target.startswith((url + "/", "data:", "blob:")):
                self.served.append(target)
                r.continue_()
            else:
                self.outside.append(target)
                r.abort()

        self.context.route("**/*", route)
        self.page = self.context.new_page()
        self.page.on("console", self._console)
        self.page.on("pageerror", lambda e: self.problems.append(str(e)))
        self.page.set_default_timeout(60_000)

    def _console(self, message: Any) -> None:
        if message.type == "error":
            self.problems.append(message.text)

    def close(self) -> None:
        self.context.close()


def _shot(page: Any, name: str) -> None:
    folder = os.environ.get("CITELINE_TEST_ARTIFACTS")
    if folder:
        out = Path(folder) / "browser"
        out.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(out / name), full_page=False)


def test_swagger_ui_renders_the_operations_offline(browser: Any, url: str) -> None:
    tab = Offline(browser, url)
    try:
        tab.page.goto(url + "/docs")
        tab.page.wait_for_selector(".swagger-ui .opblock-summary-path")
        paths = tab.page.locator(".opblock-summary-path").all_inner_texts()
        assert {"/v1/ask", "/v1/search", "/v1/documents", "/healthz"} <= {p.strip() for p in paths}, paths
        assert "citeline" in tab.page.locator(".swagger-ui .info .title").inner_text()
        # the stylesheet applied (served from this server): a POST block is drawn green-bordered
        border = tab.page.eval_on_selector(".opblock-post", "e => getComputedStyle(e).borderTopColor")
        assert border == "rgb(73, 204, 144)", border
        _shot(tab.page, "docs-swagger.png")
        assert any(u.endswith("/docs/assets/swagger-ui-bundle.js") for u in tab.served)
        assert tab.outside == [] and tab.problems == [], (tab.outside, tab.problems)
    finally:
        tab.close()


def test_redoc_renders_the_operations_offline(browser: Any, url: str) -> None:
    tab = Offline(browser, url)
    try:
        tab.page.goto(url + "/redoc")
        tab.page.wait_for_selector("[data-section-id^='operation/']")
        text = tab.page.locator(".api-content").inner_text()
        for summary in ("Who this key is", "Liveness: the index opens and answers a query"):
            assert summary in text
        _shot(tab.page, "docs-redoc.png")
        assert any(u.endswith("/docs/assets/redoc.standalone.js") for u in tab.served)
        assert tab.outside == [] and tab.problems == [], (tab.outside, tab.problems)
    finally:
        tab.close()
