"""The answer-evaluation report: one self-contained HTML file (inline CSS and SVG, no scripts, no
external assets) plus the JSON of the same numbers.

Every string that comes from documents, questions or answers is untrusted and goes through
:func:`html.escape` (attributes included); nothing is ever inserted as markup.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from html import escape
from pathlib import Path
from typing import Any

from citeline.eval.answers import STAGES, QuestionRow, higher_is_better
from citeline.eval.report_metrics import DEFINITIONS, LABELS, UNITS, group_metrics, metric_label
from citeline.eval.report_style import REPORT_CSS


def _e(value: Any) -> str:
    return escape("" if value is None else str(value), quote=True)


def _pct(value: float | None, digits: int = 1) -> str:
    return "n/a" if value is None else f"{100 * value:.{digits}f}%"


def _num(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def bar_chart(
    names: Sequence[str],
    values: Mapping[str, float | None],
    counts: Mapping[str, int] | None = None,
    baseline: Mapping[str, float | None] | None = None,
    notes: Mapping[str, str] | None = None,
) -> str:
    """An inline SVG of horizontal bars on a 0..1 scale, one per metric, with an optional baseline tick."""
    label_w, track_w, value_w, row_h, top = 200, 230, 170, 30, 8
    width = label_w + track_w + value_w
    height = top + row_h * len(names) + 18
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="100%" viewBox="0 0 {width} {height}" '
        f'style="max-width:{width}px" role="img" aria-label="metric bar chart">'
    ]
    for frac in (0.0, 0.5, 1.0):
        x = label_w + frac * track_w
        parts.append(
            f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{height - 16}" stroke="#dde2ea" stroke-width="1"/>'
            f'<text x="{x:.1f}" y="{height - 3}" font-size="10" fill="#5d6677" text-anchor="middle">{frac:g}</text>'
        )
    for i, name in enumerate(names):
        y = top + i * row_h
        value = values.get(name)
        lower_better = higher_is_better(name) is False
        colour = "#c2410c" if lower_better else "#2f6fdb"
        parts.append(
            f'<text x="{label_w - 10}" y="{y + 19}" font-size="12.5" fill="#1d2330" text-anchor="end">'
            f"{_e(metric_label(name))}</text>"
            f'<rect x="{label_w}" y="{y + 7}" width="{track_w}" height="16" rx="3" fill="#e9edf3"/>'
        )
        if value is not None:
            w = max(0.0, min(1.0, float(value))) * track_w
            parts.append(
                f'<rect x="{label_w}" y="{y + 7}" width="{w:.1f}" height="16" rx="3" fill="{colour}"/>'
            )
        text = _num(value) if value is not None else "n/a"
        old = baseline.get(name) if baseline else None
        if counts and counts.get(name) is not None and value is not None and old is None:
            text += f"  ({counts[name]} {UNITS.get(name.split('@')[0], 'questions')})"
        if value is None and notes and notes.get(name):
            text = "n/a (see note)"
        if old is not None:
            bx = label_w + max(0.0, min(1.0, float(old))) * track_w
            parts.append(
                f'<line x1="{bx:.1f}" y1="{y + 3}" x2="{bx:.1f}" y2="{y + 27}" stroke="#111827" '
                f'stroke-width="2"><title>baseline {old:.3f}</title></line>'
            )
            if value is not None:
                delta = float(value) - float(old)
                good = (delta >= 0) != lower_better or abs(delta) < 1e-12
                text += f"  {delta:+.3f}"
                colour_text = "#15803d" if good else "#c2410c"
                parts.append(
                    f'<text x="{label_w + track_w + 8}" y="{y + 19}" font-size="12" fill="{colour_text}">'
                    f"{_e(text)}</text>"
                )
                continue
        parts.append(
            f'<text x="{label_w + track_w + 8}" y="{y + 19}" font-size="12" fill="#1d2330">{_e(text)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def stage_chart(failures: Mapping[str, int], total: int) -> str:
    """An inline SVG of how many questions failed at each stage."""
    names = [s for s in STAGES if s != "error" or failures.get("error")]
    label_w, track_w, row_h, top = 250, 330, 28, 6
    width, height = label_w + track_w + 110, top + row_h * len(names) + 4
    most = max([failures.get(s, 0) for s in names] + [1])
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="100%" viewBox="0 0 {width} {height}" '
        f'style="max-width:{width}px" role="img" aria-label="failures by stage">'
    ]
    for i, stage in enumerate(names):
        y = top + i * row_h
        count = failures.get(stage, 0)
        w = count / most * track_w
        share = f"{count}  ({100 * count / total:.0f}%)" if total else str(count)
        parts.append(
            f'<text x="{label_w - 10}" y="{y + 18}" font-size="12.5" fill="#1d2330" text-anchor="end">'
            f"{_e(STAGES[stage])}</text>"
            f'<rect x="{label_w}" y="{y + 6}" width="{track_w}" height="16" rx="3" fill="#e9edf3"/>'
            f'<rect x="{label_w}" y="{y + 6}" width="{w:.1f}" height="16" rx="3" fill="#c2410c"/>'
            f'<text x="{label_w + track_w + 8}" y="{y + 18}" font-size="12" fill="#1d2330">{_e(share)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _cards(report: Mapping[str, Any]) -> str:
    m, c, lat, cost = report["metrics"], report["counts"], report["latency_ms"], report["cost"]
    tokens = cost.get("prompt_tokens")
    cards = [
        ("Questions", str(c["questions"]), f"{c['answerable']} answerable, {c['unanswerable']} unanswerable"),
        ("Failures", str(c["failures"]), f"{c['answered']} answered, {c['refused']} refused"),
        ("Citation precision", _pct(m.get("citation_precision")), f"recall {_pct(m.get('citation_recall'))}"),
        ("Refusal recall", _pct(m.get("refusal_recall")), f"precision {_pct(m.get('refusal_precision'))}"),
        ("False refusals", _pct(m.get("false_refusal_rate")), "of answerable questions"),
        ("Faithfulness", _pct(m.get("faithfulness")), f"verifier: {report.get('pipeline_verifier')}"),
        (
            "Latency p50",
            "n/a" if lat.get("p50") is None else f"{lat['p50']:.0f} ms",
            "p95 n/a" if lat.get("p95") is None else f"p95 {lat['p95']:.0f} ms",
        ),
        (
            "Tokens",
            "n/a" if tokens is None else f"{tokens + (cost.get('completion_tokens') or 0):,}",
            "no token counts"
            if tokens is None
            else f"{tokens:,} prompt, {cost['completion_tokens']:,} completion",
        ),
    ]
    return (
        '<section class="cards">'
        + "".join(
            f'<div class="card"><div class="k">{_e(k)}</div><div class="v">{_e(v)}</div><div class="d">{_e(d)}</div></div>'
            for k, v, d in cards
        )
        + "</section>"
    )


def _evidence_html(row: QuestionRow) -> str:
    items = row.gold_evidence
    if not items:
        return (
            '<span class="muted">none (the expected output is the refusal)</span>'
            if not row.answerable
            else ('<span class="muted">none given</span>')
        )
    out = []
    for e in items:
        where = e.source + (f", page {e.page}" if e.page else "")
        note = f" · {e.note}" if e.note else ""
        quote = e.quote or "(the whole document or page)"
        out.append(
            f'<blockquote class="good"><div class="src">{_e(where)}{_e(note)}</div>{_e(quote)}</blockquote>'
        )
    return "".join(out)


def common_root(rows: Sequence[QuestionRow]) -> str:
    """The folder that every cited or retrieved source shares (shown once, not on every line)."""
    import os

    sources: list[str] = [str(c.source) for r in rows for c in r.citations]
    sources += [str(s) for r in rows if r.retrieval is not None for s in r.retrieval.top_documents]
    if len(sources) < 2:
        return ""
    try:
        root = os.path.commonpath(sources)
    except ValueError:  # mixed absolute and relative paths
        return ""
    if not root or root in sources:
        return ""
    return root if root.endswith(os.sep) else root + os.sep


def _short(source: str, root: str) -> str:
    return source[len(root) :] if root and source.startswith(root) else source


def _citations_html(row: QuestionRow, root: str = "") -> str:
    cits = row.citations
    if not cits:
        return '<span class="muted">none</span>'
    out = []
    for c in cits:
        cls = "" if c.correct is None else ("good" if c.correct else "badq")
        verdict = {True: "overlaps gold", False: "no gold overlap", None: ""}[c.correct]
        where = f"[{c.n}] {_short(c.source, root)}" + (f", page {c.page}" if c.page else "")
        where += f" · chars {c.span[0]}–{c.span[1]}" + (f" · {verdict}" if verdict else "")
        out.append(f'<blockquote class="{cls}"><div class="src">{_e(where)}</div>{_e(c.quote)}</blockquote>')
    return "".join(out)


def _failure_html(row: QuestionRow, root: str = "") -> str:
    stage = row.stage or ""
    expected = " | ".join(row.expected) if isinstance(row.expected, tuple) else row.expected
    retrieved = row.retrieval.top_documents if row.retrieval is not None else ()
    answer = row.answer if row.error is None else f"error: {row.error}"
    reason = row.refusal_reason
    parts = [
        '<article class="failure">',
        f'<div class="head"><span class="badge fail">{_e(STAGES.get(stage, stage))}</span>'
        f'<span class="id">{_e(row.id)}</span>'
        f'<span class="muted">{"answerable" if row.answerable else "unanswerable"}</span></div>',
        "<dl>",
        f"<dt>Question</dt><dd>{_e(row.question)}</dd>",
        f"<dt>Answer</dt><dd>{_e(answer)}"
        + (f' <span class="muted">({_e(reason)})</span>' if reason else "")
        + "</dd>",
    ]
    if expected:
        parts.append(f"<dt>Expected</dt><dd>{_e(expected)}</dd>")
    parts.append(f"<dt>Cited quotes</dt><dd>{_citations_html(row, root)}</dd>")
    parts.append(f"<dt>Gold evidence</dt><dd>{_evidence_html(row)}</dd>")
    if retrieved:
        parts.append(
            "<dt>Top documents</dt><dd>"
            + "<br>".join(f'<span class="src">{_e(_short(s, root))}</span>' for s in retrieved)
            + "</dd>"
        )
    parts.append("</dl></article>")
    return "".join(parts)


def _row_html(row: QuestionRow) -> str:
    stage = row.stage
    badge = (
        f'<span class="badge fail">{_e(STAGES.get(stage, stage))}</span>'
        if stage
        else '<span class="badge ok">ok</span>'
    )
    corr = row.correctness
    outcome = "error" if row.error else ("refused" if row.refused else "answered")
    question = row.question
    short = question if len(question) <= 160 else question[:157] + "…"
    return (
        f"<tr><td class='src'>{_e(row.id)}</td><td class='q' title=\"{_e(question)}\">{_e(short)}</td>"
        f"<td>{'answerable' if row.answerable else 'unanswerable'}</td><td>{outcome}</td><td>{badge}</td>"
        f"<td class='num'>{_num(corr.token_f1 if corr else None, 2)}</td>"
        f"<td class='num'>{_num(corr.contains if corr else None, 0)}</td>"
        f"<td class='num'>{_num(row.citation_precision, 2)}</td>"
        f"<td class='num'>{_num(row.citation_recall, 2)}</td>"
        f"<td class='num'>{row.latency_ms:.0f}</td></tr>"
    )


def summary_json(report: Mapping[str, Any]) -> dict[str, Any]:
    """The report's numbers without the per-question rows."""
    return {k: v for k, v in report.items() if k != "rows"}


def render_html(
    report: Mapping[str, Any], baseline: Mapping[str, Any] | None = None, max_failures: int = 300
) -> str:
    """The whole report as one HTML document (no scripts, no external assets)."""
    metrics: Mapping[str, Any] = report["metrics"]
    counts_n: Mapping[str, int] = report.get("n", {})
    judge = report.get("judge") or {}
    notes = {"judge_support": judge.get("reason") or ""} if judge.get("reason") else {}
    base_metrics = baseline.get("metrics") if baseline else None
    title = f"Answer quality: {report.get('dataset') or 'golden set'}"
    generated = report.get("generated_at") or datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    settings = report.get("settings", {})
    sub = (
        f"generator <b>{_e(report.get('generator'))}</b> · verifier <b>{_e(report.get('pipeline_verifier'))}</b>"
        f" · judge <b>{_e(report.get('judge_name') or 'none')}</b> · embedder <b>{_e(settings.get('embedder'))}</b>"
        f" · reranker <b>{_e(settings.get('reranker'))}</b> · k = {_e(report.get('k'))}"
        f" · {_e(report.get('documents'))} documents · {_e(generated)}"
    )
    if baseline is not None:
        sub += f" · compared with baseline <b>{_e(baseline.get('dataset') or '')}</b> (black ticks)"
    body = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(title)}</title><style>{REPORT_CSS}</style></head><body><main>",
        f"<header><h1>{_e(title)}</h1><p class='sub'>{sub}</p></header>",
        _cards(report),
    ]
    warnings = list(report.get("warnings") or [])
    if report["counts"].get("refusal_text_errors"):
        warnings.insert(
            0, f"{report['counts']['refusal_text_errors']} refusals did not use the exact refusal text"
        )
    dataset_notes = report.get("dataset_notes")
    if warnings:
        shown = warnings[:20]
        more = f"<li>… and {len(warnings) - 20} more (see the JSON)</li>" if len(warnings) > 20 else ""
        body.append(
            "<div class='warn'><b>Warnings</b><ul>"
            + "".join(f"<li>{_e(w)}</li>" for w in shown)
            + more
            + "</ul></div>"
        )
    body.append("<h2>Metrics</h2><div class='charts'>")
    empty = [g for g, names in group_metrics(metrics) if all(metrics.get(m) is None for m in names)]
    for group, names in group_metrics(metrics):
        if group in empty:
            continue
        body.append(
            f"<div class='panel'><h3>{_e(group)}</h3>"
            + bar_chart(names, metrics, counts_n, base_metrics, notes)
            + "</div>"
        )
    body.append("</div>")
    if empty:
        body.append(
            f"<p class='muted'>Not applicable to this set (no question to measure them on): {_e(', '.join(empty))}.</p>"
        )
    if judge.get("reason"):
        body.append(
            f"<p class='muted'>Judge-rated support: n/a ({_e(judge['reason'])}). "
            f"Pipeline verifier: {_e(judge.get('pipeline_verifier'))}.</p>"
        )
    failures: Mapping[str, int] = report.get("failures", {})
    total = report["counts"]["questions"]
    body.append(
        "<h2>Where questions failed</h2><div class='panel'>" + stage_chart(failures, total) + "</div>"
    )
    rows = [QuestionRow.from_json(r) for r in report.get("rows", [])]
    order = {stage: i for i, stage in enumerate(STAGES)}
    failed = sorted((r for r in rows if r.stage), key=lambda r: order.get(r.stage or "", len(order)))
    body.append(f"<h2>Failures ({len(failed)})</h2>")
    if not failed:
        body.append("<p class='muted'>No question failed.</p>")
    root = common_root(rows)
    if root and failed:
        body.append(
            f"<p class='muted'>Cited and retrieved paths are relative to <span class='src'>{_e(root)}</span>.</p>"
        )
    for row in failed[:max_failures]:
        body.append(_failure_html(row, root))
    if len(failed) > max_failures:
        body.append(
            f"<p class='muted'>{len(failed) - max_failures} more failures are in the table below and the JSON.</p>"
        )
    body.append(
        "<h2>All questions</h2><div class='tablewrap'><table><thead><tr><th>id</th><th>question</th><th>expected</th><th>outcome</th>"
        "<th>stage</th><th class='num'>F1</th><th class='num'>contains</th><th class='num'>cit. P</th>"
        "<th class='num'>cit. R</th><th class='num'>ms</th></tr></thead><tbody>"
    )
    body.extend(_row_html(r) for r in rows)
    body.append("</tbody></table></div>")
    body.append("<h2>How to read this</h2><dl class='defs'>")
    for key, text in DEFINITIONS.items():
        body.append(f"<dt>{_e(LABELS[key])}</dt><dd>{_e(text)}</dd>")
    for stage, label in STAGES.items():
        body.append(f"<dt>Stage: {_e(label)}</dt><dd>{_e(_STAGE_HELP.get(stage, ''))}</dd>")
    body.append("</dl>")
    if dataset_notes:
        body.append(
            "<h2>Dataset</h2><pre>" + _e(json.dumps(dataset_notes, indent=2, ensure_ascii=False)) + "</pre>"
        )
    body.append(
        "<details><summary>The numbers as JSON</summary><pre>"
        + _e(json.dumps(summary_json(report), indent=2, ensure_ascii=False, default=str))
        + "</pre></details>"
    )
    body.append("<footer>citeline eval answers · self-contained report</footer></main></body></html>")
    return "\n".join(body)


_STAGE_HELP = {
    "not_retrieved": "no retrieved chunk overlaps any gold evidence span",
    "not_in_context": "a retrieved chunk held the evidence, but it was not among the passages given to the generator",
    "refused_wrongly": "the evidence reached the generator and the pipeline refused anyway",
    "cited_wrongly": "answered, but no citation overlaps a gold evidence span",
    "answered_should_refuse": "the documents do not hold the answer and the pipeline answered anyway",
    "error": "asking raised an error (shown as the answer)",
}


def write_reports(
    report: Mapping[str, Any],
    json_path: str | Path | None = None,
    html_path: str | Path | None = None,
    baseline: Mapping[str, Any] | None = None,
) -> None:
    """Write the JSON (the full report, rows included) and/or the HTML report."""
    if json_path is not None:
        Path(json_path).write_text(
            json.dumps(report, indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8"
        )
    if html_path is not None:
        Path(html_path).write_text(render_html(report, baseline), encoding="utf-8")
