"""The HTML report in a real headless browser: it renders, logs nothing, and escapes document text.

Needs Debian's `chromium` (apt-get install -y chromium); skipped without it, except under CI=true.
"""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
from pathlib import Path
from typing import Any

import pytest

from citeline.eval.answers import (
    CitedQuote,
    GoldEvidence,
    Observation,
    QuestionRow,
    RetrievalOutcome,
    Retrieved,
    score_question,
    summarize,
)
from citeline.eval.report import common_root, render_html, write_reports
from citeline.types import REFUSAL, Answer, AnswerSentence, Citation
from datasets import in_ci

HOSTILE = (
    '<script>document.title="PWNED"</script><img src=x onerror="document.title=\'PWNED\'">"\'</td></tr>&amp;'
)


def _chromium() -> str:
    found = (
        os.environ.get("CITELINE_TEST_CHROMIUM")
        or shutil.which("chromium")
        or shutil.which("chromium-browser")
    )
    if found:
        return found
    reason = (
        "chromium not installed (apt-get install -y chromium); the browser check of the report is skipped"
    )
    if in_ci():
        pytest.fail(reason + " (CI=true, so this is an error)", pytrace=False)
    pytest.skip(reason)


def _run(url: Path, tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    profile = tmp / f"profile-{len(list(tmp.glob('profile-*')))}"
    cmd = [
        _chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={profile}",
        "--enable-logging=stderr",
        "--v=0",
        *args,
        url.resolve().as_uri(),
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)


# Console output of the page (any message: the report has no scripts) and failed loads.
_PAGE_PROBLEMS = re.compile(r":CONSOLE[(:]|Uncaught|console error|Failed to load resource|net::ERR_", re.I)


def _page_problems(log: str) -> list[str]:
    return [line for line in log.splitlines() if _PAGE_PROBLEMS.search(line)]


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def _report() -> dict[str, Any]:
    """A small report whose every text field carries markup that must not run or render."""
    cit = Citation(
        n=1,
        document_id="d1",
        source=f"docs/{HOSTILE}.md",
        title=HOSTILE,
        page=2,
        page_end=2,
        heading=HOSTILE,
        start=0,
        end=200,
        quote=HOSTILE * 3,
        chunk_id="c1",
        quote_start=10,
        quote_end=60,
    )
    good = Answer(
        "q",
        f"The queue holds 900 jobs {HOSTILE}. [1]",
        False,
        (cit,),
        (AnswerSentence("s", (1,), True, False, 0.9),),
    )
    gold = (GoldEvidence(f"docs/{HOSTILE}.md", 2, f"gold {HOSTILE}", "d1", ((120, 180),)),)
    hits = (Retrieved("d1", f"docs/{HOSTILE}.md", 0, 200),)
    rows = []
    for i in range(12):
        g = {
            "id": f"q{i}-{HOSTILE}",
            "question": f"Question {i} about {HOSTILE}?",
            "answerable": i % 3 != 0,
            "answers": [f"900 jobs {HOSTILE}"],
            "evidence": [],
        }
        answer = good if i % 2 else Answer("q", REFUSAL, True, (), refusal_reason=HOSTILE)
        rows.append(
            score_question(
                Observation(
                    g,
                    answer,
                    gold if g["answerable"] else (),
                    hits,
                    hits,
                    40.0 + 7 * i,
                    {"prompt": 0, "completion": 0},
                    quote_text=lambda d, s, e: HOSTILE,
                ),
                k=5,
            )
        )
    return {
        "format": "citeline-answers/1",
        "dataset": f"browser-test {HOSTILE}",
        "k": 5,
        "generator": "extractive",
        "pipeline_verifier": "heuristic",
        "judge_name": None,
        "settings": {"embedder": "minilm-int8", "reranker": "none"},
        "documents": 3,
        **summarize(rows, 5, pipeline_verifier="heuristic"),
        "warnings": [f"q1: evidence in {HOSTILE}: quote not found"],
        "dataset_notes": {"note": HOSTILE},
        "rows": [r.to_json() for r in rows],
    }


def test_report_html_is_self_contained_and_escaped(tmp_path: Path) -> None:
    html = render_html(_report(), baseline={"dataset": HOSTILE, "metrics": {"citation_precision": 0.9}})
    assert "<script" not in html.lower()  # neither ours (there are none) nor the documents'
    assert "<img" not in html.lower()
    assert "&lt;script&gt;" in html
    assert not re.search(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//""", html, re.I)  # no external assets
    assert "@import" not in html and "url(" not in html
    assert html.count("<svg") >= 6  # the metric groups and the stage chart
    write_reports(_report(), tmp_path / "r.json", tmp_path / "r.html")
    assert (tmp_path / "r.json").stat().st_size > 0 and (tmp_path / "r.html").read_text(encoding="utf-8")


def test_report_renders_in_headless_chromium(tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    write_reports(
        _report(), None, page, baseline={"metrics": {"citation_precision": 0.9, "refusal_recall": 0.2}}
    )
    blank = tmp_path / "blank.html"
    blank.write_text("<!doctype html><html><body></body></html>", encoding="utf-8")

    shot = tmp_path / "report.png"
    run = _run(page, tmp_path, f"--screenshot={shot}", "--window-size=1280,2000")
    assert shot.is_file(), run.stderr[-2000:]
    assert _page_problems(run.stderr) == []
    assert _png_size(shot) == (1280, 2000)
    empty = tmp_path / "blank.png"
    _run(blank, tmp_path, f"--screenshot={empty}", "--window-size=1280,2000")
    # A page of charts, cards and text compresses far worse than an empty page.
    assert shot.stat().st_size > 4 * empty.stat().st_size, (shot.stat().st_size, empty.stat().st_size)

    dom = _run(page, tmp_path, "--dump-dom").stdout
    title = re.search(r"<title>(.*?)</title>", dom, re.S)
    assert title is not None and title.group(1).startswith("Answer quality: browser-test")
    assert "&lt;img src=x" in title.group(1)  # still the escaped text: no injected handler set it to PWNED
    assert "<img" not in dom.lower() and dom.lower().count("<script") == 0
    assert dom.count("<svg") >= 6 and dom.count('class="failure"') >= 1
    assert "&lt;/td&gt;&lt;/tr&gt;" in dom  # the untrusted text shows as text


def test_the_console_check_catches_page_errors(tmp_path: Path) -> None:
    """Control: the same harness does flag a page that logs an error."""
    bad = tmp_path / "bad.html"
    bad.write_text("<!doctype html><html><body><script>notDefined()</script></body></html>", encoding="utf-8")
    run = _run(bad, tmp_path, f"--screenshot={tmp_path / 'bad.png'}", "--window-size=400,300")
    assert any("Uncaught" in line for line in _page_problems(run.stderr)), run.stderr[-2000:]


def _row(cited: tuple[str, ...], top: tuple[str, ...] | None = None) -> QuestionRow:
    citations = tuple(CitedQuote(n, s, None, (0, 1), "q", None) for n, s in enumerate(cited, 1))
    retrieval = None if top is None else RetrievalOutcome(1.0, 1.0, top, True, True)
    return QuestionRow("q", "Q?", True, citations=citations, retrieval=retrieval)


def test_paths_are_shown_relative_to_their_common_folder() -> None:
    rows = [_row(("/data/docs/a/x.md",), ("/data/docs/b/y.md",)), _row(())]
    assert common_root(rows) == "/data/docs/"
    assert common_root([*rows[:1], _row(("/data/docs/a/x.md",))]) == "/data/docs/"
    assert common_root([_row(("x.md",))]) == ""


def test_metric_groups_without_any_value_are_named_not_drawn() -> None:
    report = _report()
    for name in report["metrics"]:
        if name.startswith(("hit_rate", "recall", "context", "citation")):
            report["metrics"][name] = None
    html = render_html(report)
    assert "<h3>Retrieval</h3>" not in html and "<h3>Citations</h3>" not in html
    assert "Not applicable to this set (no question to measure them on): Retrieval, Citations." in html
