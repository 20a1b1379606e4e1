"""The answer on the web page in a real browser (Debian's Chromium through Playwright, a real server
on loopback): each sentence's own supporting quote, only supporting citations, the trace's numbering
and tables, focus after Escape, and progress while the answer is made.

A scripted generator stands in for an LLM that cites too much (an external model); retrieval, the
claim checker, the server and the page are the real ones. Skips like test_browser.py without
chromium or playwright (fails under CI=true).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from citeline.answer.units import passage_units
from citeline.types import Draft, DraftSentence, Passage

from .conftest import Corpus
from .live import serving, variant
from .test_browser import Session, wait_until

Q_TOKEN = "How often does the gateway token rotate?"
#: records, in order, each status text and each sentence the page shows (the page's CSP allows no
#: injected script tags; an init script is the browser's own)
RECORDER = """
window.__log = [];
document.addEventListener("DOMContentLoaded", () => {
  new MutationObserver((records) => {
    for (const r of records) {
      for (const n of r.addedNodes) {
        if (r.target.id === "ask-status") window.__log.push("status:" + n.textContent);
        else if (r.target.id === "answer" && n.classList && n.classList.contains("sentence-wrap"))
          window.__log.push("sentence:" + n.querySelector(".sentence").textContent);
      }
    }
  }).observe(document.getElementById("ask-view"), { childList: true, subtree: true });
});
"""


def sentences_of(p: Passage) -> list[str]:
    return [u.text for u in passage_units(p.chunk.text, p.chunk.start) if u.kind == "sentence"]


class CitesTooMuch:
    """An 'LLM': a sentence of passage 2 citing [2], then two sentences of passage 1, the first
    citing every passage and the second citing [1]."""

    name = "cites-too-much"
    context_tokens = 4000

    def generate(self, question: Any, passages: Sequence[Passage]) -> Draft:
        first, second = sentences_of(passages[0])[:2]
        other = sentences_of(passages[1])[0]
        every = tuple(p.number for p in passages)
        lines = ((other, (2,)), (first, every), (second, (1,)))
        return Draft(tuple(DraftSentence(t, c) for t, c in lines), raw=" ".join(t for t, _ in lines))

    def stream(self, question: Any, passages: Sequence[Passage]) -> Iterator[str]:
        yield self.generate(question, passages).raw


@pytest.fixture(scope="module")
def url(corpus: Corpus) -> Iterator[str]:
    with serving(corpus.kb) as base:
        yield base


@pytest.fixture(scope="module")
def scripted_url(corpus: Corpus) -> Iterator[str]:
    kb = variant(corpus.kb)
    kb.use_generator(CitesTooMuch())
    with serving(kb, mcp=False) as base:
        yield base
    kb.close()


def squash(text: str) -> str:
    return " ".join(text.split())


def test_each_sentence_opens_its_own_supporting_quote(
    browser: Any, scripted_url: str, corpus: Corpus
) -> None:
    s = Session(browser, scripted_url, corpus.reader_key)
    page = s.page
    s.ask(Q_TOKEN)
    sentences = page.locator("#answer .sentence-wrap")
    assert sentences.count() == 3
    # the sentence that cited every passage keeps the one that supports it
    assert [sentences.nth(i).locator(".cite").all_text_contents() for i in range(3)] == [
        ["[1]"],
        ["[2]"],
        ["[2]"],
    ]
    for i in (1, 2):
        sentences.nth(i).locator(".cite").click()
        page.wait_for_selector("#source-panel:not([hidden]) mark.support")
        wait_until(page, "document.querySelector('#source-text mark.support') !== null")
        said = squash(sentences.nth(i).locator(".sentence").text_content() or "")
        assert squash(page.text_content("#source-text mark.support") or "") == said
        assert squash(page.text_content("#source-quote") or "") == said
    assert not s.problems, s.problems
    s.close()


def test_claim_checks_number_passages_as_the_answer_does(
    browser: Any, scripted_url: str, corpus: Corpus
) -> None:
    s = Session(browser, scripted_url, corpus.reader_key)
    page = s.page
    s.ask(Q_TOKEN)
    page.click("#trace-panel summary")
    page.wait_for_selector("#trace-body table")
    checks = page.locator("#trace-body table").nth(3).locator("tbody tr")
    assert [checks.nth(i).locator("td").nth(1).text_content() for i in range(checks.count())] == [
        "[1]",
        "[2]",
        "[2]",
    ]
    passages = page.locator("#trace-body table").nth(1).locator("tbody td:first-child").all_text_contents()
    assert {"[1]", "[2]"} <= set(passages)
    s.close()


@pytest.mark.parametrize(
    ("width", "with_source"),
    [(1280, True), (1280, False), (375, False)],
    ids=["source-open", "wide", "375px"],
)
def test_trace_headers_stay_whole_and_every_column_shows(
    browser: Any, url: str, corpus: Corpus, width: int, with_source: bool
) -> None:
    s = Session(browser, url, corpus.reader_key, width=width)
    page = s.page
    s.ask("What does error LDG-4012 mean?")
    if with_source:
        s.open_citation(1)
    page.click("#trace-panel summary")
    page.wait_for_selector("#trace-body table")
    broken = page.evaluate(
        """[...document.querySelectorAll('#trace-body th')].filter((th) => {
             const r = document.createRange(); r.selectNodeContents(th); return r.getClientRects().length !== 1;
           }).map((th) => th.textContent)"""
    )
    assert broken == [], f"headers broken over lines: {broken}"
    hidden = page.evaluate(
        """[...document.querySelectorAll('#trace-body .scroll')].filter((box) => box.scrollWidth > box.clientWidth + 1)
             .map((box) => box.getAttribute('aria-label'))"""
    )
    assert hidden == [], f"tables wider than the panel (columns scrolled out of view): {hidden}"
    s.close()


def test_escape_returns_focus_to_the_citation_that_opened_the_panel(
    browser: Any, url: str, corpus: Corpus
) -> None:
    s = Session(browser, url, corpus.reader_key)
    page = s.page
    s.ask("What does error LDG-4012 mean?")
    button = page.locator("#answer .cite").last
    button.focus()
    page.keyboard.press("Enter")
    page.wait_for_selector("#source-panel:not([hidden]) mark.cited")
    assert page.evaluate("document.activeElement.id") == "source-title"
    page.keyboard.press("Escape")
    assert page.is_hidden("#source-panel")
    assert page.evaluate("document.activeElement === [...document.querySelectorAll('#answer .cite')].pop()")
    assert not s.problems, s.problems
    s.close()


def test_progress_then_each_sentence_as_it_is_checked(
    browser: Any, scripted_url: str, corpus: Corpus
) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.add_init_script(RECORDER)
    page = context.new_page()
    page.set_default_timeout(60_000)
    page.goto(scripted_url + "/")
    page.fill("#key-input", corpus.reader_key)
    page.click("#key-form button[type=submit]")
    page.wait_for_selector("#ask-view:not([hidden])")
    page.fill("#question", Q_TOKEN)
    page.click("#ask-button")
    wait_until(page, "document.querySelector('#ask-status').textContent.startsWith('Answered')")
    log: list[str] = page.evaluate("window.__log")
    statuses = [x for x in log if x.startswith("status:")]
    assert any(x.startswith("status:Found ") for x in statuses), statuses
    first = log.index("status:Checking sentence 1 of 3…")
    second = log.index("status:Checking sentence 2 of 3…")
    third = log.index("status:Checking sentence 3 of 3…")
    # each sentence is on the page before the next one is checked
    assert [x.startswith("sentence:") for x in log[first + 1 : second]] == [True]
    assert [x.startswith("sentence:") for x in log[second + 1 : third]] == [True]
    context.close()


def test_the_trace_says_what_the_question_asked_for(browser: Any, url: str, corpus: Corpus) -> None:
    """ "How was this answered" names the asked slot: the attribute, its subject, the answer's kind."""
    s = Session(browser, url, corpus.reader_key)
    page = s.page
    s.ask("What does error LDG-4012 mean?")
    page.click("#trace-panel summary")
    page.wait_for_selector("#trace-body p.slot")
    assert page.text_content("#trace-body p.slot") == (
        "Asked for: what it means of LDG-4012 (answered by a definition)"
    )
    assert not s.problems, s.problems
    s.close()


class FindsNothing:
    """An 'LLM' that finds no answer in passages that hold one (a small model's false refusal)."""

    name = "finds-nothing"
    context_tokens = 4000

    def generate(self, question: Any, passages: Sequence[Passage]) -> Draft:
        return Draft((), refused=True, raw="")

    def stream(self, question: Any, passages: Sequence[Passage]) -> Iterator[str]:
        yield ""


def test_the_trace_says_which_answer_replaced_a_refused_model_answer(browser: Any, corpus: Corpus) -> None:
    """The model found nothing where the reader says the context answers: the page shows the
    extractive answer with its citations, and "How was this answered" says why (answer/fallback.py)."""
    kb = variant(corpus.kb)
    kb.use_generator(FindsNothing())
    with serving(kb, mcp=False) as base:
        s = Session(browser, base, corpus.reader_key)
        page = s.page
        s.ask(Q_TOKEN)
        assert page.locator("#answer .sentence-wrap").count() > 0
        page.click("#trace-panel summary")
        page.wait_for_selector("#trace-body p.fallback")
        assert squash(page.text_content("#trace-body p.fallback") or "") == (
            "The model's answer (finds-nothing) was refused: the generator found no answer in the sources. "
            "This answer quotes the same passages instead."
        )
        assert not s.problems, s.problems
        s.close()
    kb.close()
