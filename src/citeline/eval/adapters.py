"""Public datasets as answer-evaluation sets: a folder of documents plus golden rows.

Each adapter reads a shared dataset folder (never copied into the repository), writes the
documents it needs under ``work_dir/docs`` and returns golden rows in the format of
:mod:`citeline.eval.answers` with ``source`` paths relative to that folder. ``limit`` and
``seed`` pick a fixed, stratified slice: strata (e.g. answerable / unanswerable) are shuffled with
a seeded ``random.random()`` stream over sorted ids and each gets its share of the limit, so the
same (limit, seed) always gives the same questions and the same sub-corpus.

* **rgb**: RGB ``en_fact.json``, negative-rejection protocol. Only the ``negative`` snippets are
  written, one Markdown file per snippet in a folder per question (``q019/neg1.md``); every
  question expects the refusal and is asked over its own folder only (the row's ``scope``), as
  RGB gives each question its own snippets. A "negative" snippet that contains the question's
  own gold answer (RGB has a few) is left out, and so is a question left with no snippet (it
  would be refused for free); both are counted in ``notes``.
* **conditionalqa**: ConditionalQA ships no page text (``documents.json`` is missing). Each
  gov.uk page of the split is rebuilt from the evidence sentences that the split's questions
  cite (HTML turned into Markdown: headings, paragraphs, list items, table rows as ``a | b``),
  in an order merged from the questions' evidence lists. Answerable questions cite those
  sentences; ``not_answerable`` questions expect a refusal (their page is in the corpus but does
  not answer them); and ``test_no_answer`` questions, whose pages (disjoint from dev/train) are
  not in the corpus at all, expect a refusal too (stratum ``page_absent``). The question asked is
  the user's scenario followed by the question.
* **scifact**: claims from ``original/claims_dev.jsonl``; each abstract becomes a document (title
  in the front matter, sentences joined by one space, as BEIR does). Rationale sentences are the
  gold evidence quotes and also the ``reference`` answer; claims with no evidence (NEI) are
  unanswerable. The corpus is the abstracts the chosen claims cite plus ``distractors`` seeded
  random others (``None`` = the whole corpus).
"""

from __future__ import annotations

import gzip
import json
import random
import re
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from html import unescape
from pathlib import Path
from typing import Any, TypeVar

from citeline.eval.beir import _seeded_prefix
from citeline.eval.metrics import contains_any
from citeline.retrieval.filters import Filter

T = TypeVar("T")


@dataclass
class AdaptedDataset:
    """Documents written to ``docs_dir`` and golden rows whose sources are relative to it."""

    name: str
    docs_dir: Path
    rows: list[dict[str, Any]]
    notes: dict[str, Any] = field(default_factory=dict)


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------


def stratified(
    strata: Mapping[str, Sequence[T]],
    limit: int | None,
    seed: int,
    key: Callable[[T], str],
    shares: Mapping[str, float] | None = None,
) -> dict[str, list[T]]:
    """A seeded slice of each stratum: ``limit`` items split by ``shares`` (default: stratum sizes).

    Quotas use largest remainders, every non-empty stratum gets at least one item when the limit
    allows, and a stratum that runs short hands its spare quota to the others. ``limit=None``
    takes everything (in seeded order).
    """
    rng = random.Random(seed)
    shuffled = {
        name: _seeded_prefix(sorted(items, key=key), len(items), rng) for name, items in strata.items()
    }
    if limit is None:
        return shuffled
    if limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")
    names = [n for n in strata if strata[n]]
    weights = {n: (shares or {}).get(n, 0.0) if shares else float(len(strata[n])) for n in names}
    total = sum(weights.values()) or 1.0
    raw = {n: limit * weights[n] / total for n in names}
    quota = {n: int(raw[n]) for n in names}
    for n in sorted(names, key=lambda n: raw[n] - quota[n], reverse=True)[: limit - sum(quota.values())]:
        quota[n] += 1
    if limit >= len(names):
        for n in names:
            if quota[n] == 0:
                donor = max(names, key=lambda m: quota[m])
                quota[donor] -= 1
                quota[n] = 1
    spare = sum(max(0, quota[n] - len(strata[n])) for n in names)
    quota = {n: min(quota[n], len(strata[n])) for n in names}
    while spare:
        room = [n for n in names if quota[n] < len(strata[n])]
        if not room:
            break
        for n in room:
            if spare:
                quota[n] += 1
                spare -= 1
    return {n: shuffled[n][: quota.get(n, 0)] for n in strata}


def _fresh_docs(work_dir: str | Path) -> Path:
    docs = Path(work_dir) / "docs"
    if docs.exists():
        shutil.rmtree(docs)
    docs.mkdir(parents=True)
    return docs


def _markdown(title: str, body: str, **front: str) -> str:
    # JSON strings are valid YAML scalars, so any title survives the front matter.
    lines = [f"title: {json.dumps(title, ensure_ascii=False)}"]
    lines += [f"{k}: {json.dumps(v, ensure_ascii=False)}" for k, v in front.items()]
    return "---\n" + "\n".join(lines) + "\n---\n\n" + body.strip() + "\n"


def _flatten(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [s for v in value for s in _flatten(v)]
    return []


# --------------------------------------------------------------------------------------------
# RGB: negative rejection
# --------------------------------------------------------------------------------------------


def rgb(
    dataset_dir: str | Path, work_dir: str | Path, limit: int | None = None, seed: int = 13
) -> AdaptedDataset:
    """RGB en_fact.json, negative-rejection protocol: negative snippets only, every question refused."""
    records = [
        json.loads(line)
        for line in (Path(dataset_dir) / "en_fact.json").read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]

    def usable(r: dict[str, Any]) -> bool:  # some negative snippet that does not give the answer away
        return any(
            " ".join(str(n).split()) and not contains_any(str(n), _flatten(r["answer"]))
            for n in r.get("negative") or []
        )

    eligible = [r for r in records if usable(r)]
    chosen = stratified({"all": eligible}, limit, seed, key=lambda r: f"{int(r['id']):06d}")["all"]
    chosen.sort(key=lambda r: int(r["id"]))
    docs = _fresh_docs(work_dir)
    written = dropped = 0
    rows = []
    for r in chosen:
        qid = int(r["id"])
        folder = docs / f"q{qid:03d}"
        folder.mkdir()
        answers = _flatten(r["answer"])
        for j, snippet in enumerate(r.get("negative") or [], 1):
            text = " ".join(str(snippet).split())
            if not text:
                continue
            if contains_any(text, answers):
                dropped += 1
                continue
            (folder / f"neg{j}.md").write_text(_markdown("Web search result", text), encoding="utf-8")
            written += 1
        rows.append(
            {
                "id": f"rgb-{qid}",
                "question": r["query"],
                "answerable": False,
                "answers": [],
                "evidence": [],
                "scope": folder.name,
                "meta": {"stratum": "negative_rejection", "rgb_answer": answers},
            }
        )
    notes = {
        "protocol": "negative rejection: each question over its own negative snippets only",
        "questions": len(rows),
        "documents": written,
        "snippets_dropped_for_containing_the_answer": dropped,
        "questions_left_out_without_a_usable_snippet": len(records) - len(eligible),
    }
    return AdaptedDataset("rgb", docs, rows, notes)


# --------------------------------------------------------------------------------------------
# ConditionalQA: pages rebuilt from evidence sentences
# --------------------------------------------------------------------------------------------

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


# --------------------------------------------------------------------------------------------
# SciFact: claims, rationale sentences as citation gold
# --------------------------------------------------------------------------------------------


def _claim_label(claim: Mapping[str, Any]) -> str:
    labels = sorted({e["label"] for sets in claim.get("evidence", {}).values() for e in sets})
    return "/".join(labels) if labels else "NEI"


def scifact(
    dataset_dir: str | Path,
    work_dir: str | Path,
    limit: int | None = None,
    seed: int = 13,
    distractors: int | None = 200,
    split: str = "dev",
) -> AdaptedDataset:
    """SciFact claims (SUPPORT / CONTRADICT / NEI strata) over their abstracts and seeded distractors."""
    root = Path(dataset_dir) / "original"
    claims = [
        json.loads(line)
        for line in (root / f"claims_{split}.jsonl").read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    with gzip.open(root / "corpus.jsonl.gz", "rt", encoding="utf-8") as handle:
        corpus = {str(d["doc_id"]): d for d in (json.loads(line) for line in handle if line.strip())}
    strata: dict[str, list[dict[str, Any]]] = {}
    for c in claims:
        strata.setdefault(_claim_label(c), []).append(c)
    picked = stratified(dict(sorted(strata.items())), limit, seed, key=lambda c: f"{int(c['id']):08d}")
    chosen = sorted((c for items in picked.values() for c in items), key=lambda c: int(c["id"]))
    needed = {str(d) for c in chosen for d in c.get("cited_doc_ids", [])}
    needed |= {str(d) for c in chosen for d in c.get("evidence", {})}
    needed &= set(corpus)
    others = sorted(d for d in corpus if d not in needed)
    if distractors is None:
        keep = set(corpus)
    else:
        keep = needed | set(_seeded_prefix(others, distractors, random.Random(seed + 1)))
    docs = _fresh_docs(work_dir)
    for doc_id in sorted(keep, key=int):
        d = corpus[doc_id]
        body = " ".join(" ".join(s.split()) for s in d["abstract"])
        (docs / f"{doc_id}.md").write_text(
            _markdown(" ".join(str(d["title"]).split()), body, scifact_id=doc_id), encoding="utf-8"
        )
    rows = []
    for c in chosen:
        evidence: list[dict[str, Any]] = []
        for doc_id, sets in sorted(c.get("evidence", {}).items()):
            sentences = corpus[str(doc_id)]["abstract"] if str(doc_id) in corpus else []
            for idx in sorted({i for e in sets for i in e["sentences"]}):
                if idx < len(sentences):
                    quote = " ".join(sentences[idx].split())
                    evidence.append({"source": f"{doc_id}.md", "page": None, "quote": quote})
        answerable = bool(evidence)
        rows.append(
            {
                "id": f"scifact-{c['id']}",
                "question": c["claim"],
                "answerable": answerable,
                "reference": " ".join(str(e["quote"]) for e in evidence) if answerable else None,
                "evidence": evidence,
                "meta": {
                    "stratum": _claim_label(c),
                    "cited_doc_ids": [str(d) for d in c.get("cited_doc_ids", [])],
                },
            }
        )
    notes = {
        "split": split,
        "documents": len(keep),
        "distractors": len(keep - needed),
        "strata": {name: len(items) for name, items in picked.items()},
    }
    return AdaptedDataset("scifact", docs, rows, notes)


ADAPTERS: dict[str, Callable[..., AdaptedDataset]] = {
    "rgb": rgb,
    "conditionalqa": conditionalqa,
    "scifact": scifact,
}


def adapt(
    name: str,
    dataset_dir: str | Path,
    work_dir: str | Path,
    limit: int | None = None,
    seed: int = 13,
    **options: Any,
) -> AdaptedDataset:
    """Run the adapter `name` (one of ADAPTERS)."""
    try:
        adapter = ADAPTERS[name]
    except KeyError:
        raise ValueError(f"Unknown dataset '{name}'; choose one of {', '.join(ADAPTERS)}.") from None
    return adapter(dataset_dir, work_dir, limit=limit, seed=seed, **options)


def evaluate_dataset(
    name: str,
    dataset_dir: str | Path,
    work_dir: str | Path,
    limit: int | None = None,
    seed: int = 13,
    k: int = 5,
    generator: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    reuse_index: bool = False,
    **options: Any,
) -> dict[str, Any]:
    """Adapt dataset `name` into work_dir, index its documents, evaluate the answers.

    The adapter owns ``work_dir/docs`` and the index lives in ``work_dir/index``: fresh each time,
    or with ``reuse_index`` kept across runs (unchanged documents are not embedded again and
    documents no longer in the slice are removed). The report carries the adapter's notes and
    the indexing time under ``"dataset_notes"``.
    """
    import time

    from citeline.eval.answers import evaluate_answers
    from citeline.kb import open_kb

    adapted = adapt(name, dataset_dir, work_dir, limit=limit, seed=seed, **options)
    index = Path(work_dir) / "index"
    if index.exists() and not reuse_index:
        shutil.rmtree(index)
    with open_kb(index, generator=generator) as kb:
        started = time.perf_counter()
        report = kb.add([adapted.docs_dir])
        if report.failed:
            raise RuntimeError(f"{name}: could not index {report.failed[:3]}")
        # Documents of an earlier slice go after the add, so their cached vectors could be reused.
        current = {str(p.resolve()) for p in adapted.docs_dir.rglob("*.md")}
        stale = [
            d.source for d in kb.store.documents(Filter.admin()) if d.metadata.get("path") not in current
        ]
        if stale:
            kb.remove(stale)
        indexing_s = time.perf_counter() - started
        result = evaluate_answers(
            kb, adapted.rows, k, docs_root=adapted.docs_dir, dataset=name, progress=progress
        )
        chunks = kb.store.stats()["chunks"]
    result["dataset_notes"] = {
        **adapted.notes,
        "limit": limit,
        "seed": seed,
        "indexing_s": round(indexing_s, 2),
        "chunks": chunks,
        "chunks_embedded": report.chunks_embedded,
    }
    return result
