"""ConditionalQA: gov.uk pages rebuilt from the evidence sentences of a split (documents.json is not shipped)."""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Sequence
from html import unescape
from pathlib import Path
from typing import Any

from citeline.eval.adapters.common import AdaptedDataset, _fresh_docs, _markdown, stratified

_TAG = re.compile(r"^\s*<(\w+)")


def evidence_markdown(html_sentence: str) -> tuple[str, str]:
    """(Markdown line, quote) for one ConditionalQA evidence sentence (an HTML element)."""
    from lxml import html as lxml_html

    match = _TAG.match(html_sentence)
    tag = match.group(1).lower() if match else "p"
    try:
        element = lxml_html.fragment_fromstring(html_sentence, create_parent="div")
    except Exception:  # malformed markup: fall back to stripping tags
        element = None
    if tag == "tr" and element is not None:
        cells = [" ".join(c.text_content().split()) for c in element.iter("td", "th")]
        quote = " | ".join(c for c in cells if c)
    elif element is not None:
        quote = " ".join(element.text_content().split())
    else:
        quote = " ".join(unescape(re.sub(r"<[^>]+>", " ", html_sentence)).split())
    if tag in ("h1", "h2", "h3", "h4"):
        return "#" * min(int(tag[1]) + 1, 4) + " " + quote, quote
    if tag == "li":
        return "- " + quote, quote
    return quote, quote


def _merge_order(pages: dict[str, list[str]], sentences: Sequence[str], url: str) -> None:
    """Insert a question's evidence list into its page, keeping the list's own order."""
    page = pages.setdefault(url, [])
    previous: str | None = None
    for s in sentences:
        if s not in page:
            at = page.index(previous) + 1 if previous is not None else len(page)
            page.insert(at, s)
        previous = s


def _page_name(url: str) -> str:
    slug = url.rstrip("/").rsplit("/", 1)[-1] or "page"
    return re.sub(r"[^A-Za-z0-9._-]+", "-", slug)


def _page_title(url: str) -> str:
    slug = url.rstrip("/").rsplit("/", 1)[-1]
    return slug.replace("-", " ").capitalize() or url


def _read_json_gz(path: Path) -> list[dict[str, Any]]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        data = json.load(handle)
    return list(data)


def conditionalqa(
    dataset_dir: str | Path,
    work_dir: str | Path,
    limit: int | None = None,
    seed: int = 13,
    split: str = "dev",
    page_absent_share: float = 0.2,
    flagged_share: float = 0.2,
) -> AdaptedDataset:
    """ConditionalQA `split` over pages rebuilt from evidence; refusals for not_answerable and absent pages.

    With a ``limit`` the slice takes about ``flagged_share`` not_answerable questions,
    ``page_absent_share`` test_no_answer questions and the rest answerable ones. Without one it
    takes every question of the split plus ``page_absent_share`` of the total from test_no_answer.
    """
    root = Path(dataset_dir)
    questions = _read_json_gz(root / f"{split}.json.gz")
    absent = _read_json_gz(root / "test_no_answer.json.gz")
    pages: dict[str, list[str]] = {}
    for q in questions:
        if q.get("evidences"):
            _merge_order(pages, q["evidences"], q["url"])
    strata = {
        "answerable": [q for q in questions if not q.get("not_answerable") and q.get("evidences")],
        "not_answerable": [q for q in questions if q.get("not_answerable")],
        "page_absent": [q for q in absent if q["url"] not in pages],
    }
    if limit is None:
        base = len(strata["answerable"]) + len(strata["not_answerable"])
        n_absent = round(base * page_absent_share / (1 - page_absent_share))
        picked = stratified(strata, None, seed, key=lambda q: str(q["id"]))
        picked["page_absent"] = picked["page_absent"][:n_absent]
    else:
        shares = {
            "answerable": 1.0 - page_absent_share - flagged_share,
            "not_answerable": flagged_share,
            "page_absent": page_absent_share,
        }
        picked = stratified(strata, limit, seed, key=lambda q: str(q["id"]), shares=shares)
    chosen_pages = {q["url"] for name in ("answerable", "not_answerable") for q in picked[name]}
    if limit is None:
        chosen_pages = set(pages)
    docs = _fresh_docs(work_dir)
    names: dict[str, str] = {}
    for url in sorted(chosen_pages & set(pages)):
        name = _page_name(url) + ".md"
        names[url] = name
        lines = [f"# {_page_title(url)}"] + [evidence_markdown(s)[0] for s in pages[url]]
        (docs / name).write_text(
            _markdown(_page_title(url), "\n\n".join(lines), source_url=url), encoding="utf-8"
        )
    rows: list[dict[str, Any]] = []
    for stratum, items in picked.items():
        for q in items:
            answerable = stratum == "answerable"
            evidence = []
            if answerable:
                for s in q["evidences"]:
                    quote = evidence_markdown(s)[1]
                    if quote:
                        evidence.append({"source": names[q["url"]], "page": None, "quote": quote})
            scenario = " ".join(str(q.get("scenario") or "").split())
            rows.append(
                {
                    "id": f"cqa-{q['id']}",
                    "question": f"{scenario} {q['question']}".strip(),
                    "answerable": answerable,
                    "answers": [str(a[0]) for a in q.get("answers") or [] if a and a[0]]
                    if answerable
                    else [],
                    "evidence": evidence,
                    "meta": {
                        "stratum": stratum,
                        "url": q["url"],
                        "conditions": [
                            c for a in q.get("answers") or [] for c in (a[1] if len(a) > 1 else [])
                        ],
                    },
                }
            )
    notes = {
        "split": split,
        "pages": len(names),
        "strata": {name: len(items) for name, items in picked.items()},
        "page_text": "rebuilt from the split's evidence sentences (documents.json is not shipped)",
    }
    return AdaptedDataset("conditionalqa", docs, rows, notes)
