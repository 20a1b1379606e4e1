"""`citeline eval ...`: measurement commands. Each subcommand is one function on ``eval_group``.

New subcommands (``answers``, ``compare``...) register with ``@eval_group.command(...)`` here or
from their own module via ``eval_group.add_command``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from citeline.cli.output import json_option
from citeline.errors import CitelineError

eval_group = click.Group("eval", help="Measure retrieval and answer quality on evaluation datasets.")

_METRIC_LABELS = {
    "ndcg@10": "nDCG@10",
    "recall@10": "R@10",
    "recall@100": "R@100",
    "mrr@10": "MRR@10",
    "hit_rate@5": "Hit@5",
}


def retrieval_table(report: dict[str, Any]) -> Table:
    """A rich table of a retrieval report (the JSON form, so saved reports print the same way)."""
    stages: dict[str, Any] = report["stages"]
    metric_names = list(next(iter(stages.values()))["metrics"]) if stages else []
    title = (
        f"{report['dataset']} [{report['split']}]: {report['queries']} queries, "
        f"{report['documents']} documents, {report['chunks']} chunks"
    )
    table = Table(title=title, title_justify="left")
    table.add_column("stage")
    for name in metric_names:
        table.add_column(_METRIC_LABELS.get(name, name), justify="right")
    table.add_column("p50 ms", justify="right")
    table.add_column("p95 ms", justify="right")
    for stage, data in stages.items():
        label = stage
        if stage == "fused":
            label = f"fused ({report['fusion']}" + (
                f", alpha={report['alpha']:g})" if report["fusion"] == "convex" else ")"
            )
        elif stage == "fused_convex":
            label = f"fused (convex, alpha={report['alpha']:g})"
        elif stage == "fused_rrf":
            label = "fused (rrf)"
        elif stage == "reranked":
            label = f"reranked ({report['reranker']}, top {report['rerank_depth']})"
        row = [label, *(f"{data['metrics'][m]:.3f}" for m in metric_names)]
        row += [f"{data['latency_ms']['p50']:.1f}", f"{data['latency_ms']['p95']:.1f}"]
        table.add_row(*row)
    return table


def degraded_note(report: dict[str, Any]) -> str | None:
    """How many queries were keyword-only (the dense side failed or overran dense_timeout_ms), and why."""
    if not report.get("degraded_queries"):
        return None
    reasons = "; ".join(f"{why} ({n})" for why, n in report.get("degraded", {}).items())
    return (
        f"note: {report['degraded_queries']} of {report['queries']} queries were keyword-only, "
        f"their dense lists empty (the dense side degraded: {reasons})"
    )


@eval_group.command("retrieval")
@click.option(
    "--beir",
    "beir",
    required=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="A BEIR dataset folder (corpus.jsonl[.gz], queries.jsonl, qrels/<split>.tsv); the shared "
    "PubMedQA and Climate-FEVER folders are converted on the fly.",
)
@click.option("--split", default="test", show_default=True, help="Which qrels/<split>.tsv to evaluate.")
@click.option("--limit-queries", type=click.IntRange(min=1), help="Only the first N queries.")
@click.option(
    "--index",
    "index",
    type=click.Path(file_okay=False, path_type=Path),
    help="Index folder to build or reuse (default: a cache folder keyed by dataset and embedder).",
)
@click.option("--embedder", default=None, help="Embedder for a new index (default: the settings' embedder).")
@click.option(
    "--fusion",
    type=click.Choice(["rrf", "convex"]),
    default=None,
    help="Fusion behind the 'fused' and 'reranked' stages (the other one is reported too).",
)
@click.option(
    "--alpha", type=click.FloatRange(0.0, 1.0), default=None, help="Convex weight of the dense side."
)
@click.option("--reranker", default=None, help="Reranker for the 'reranked' stage ('none' to skip it).")
@click.option(
    "--rerank-depth", type=click.IntRange(min=1), default=None, help="Chunks the reranker reorders."
)
@click.option(
    "--depth",
    type=click.IntRange(min=10),
    default=None,
    help="Chunks each stage retrieves (enough for 100 documents by default).",
)
@json_option("Print the report as JSON.")
def retrieval_command(
    beir: Path,
    split: str,
    limit_queries: int | None,
    index: Path | None,
    embedder: str | None,
    fusion: str | None,
    alpha: float | None,
    reranker: str | None,
    rerank_depth: int | None,
    depth: int | None,
    as_json: bool,
) -> None:
    """nDCG@10, Recall@10/100, MRR@10 and hit-rate@5 per stage, with p50/p95 latency per query."""
    from citeline.eval import datasets
    from citeline.eval import retrieval_run as ev
    from citeline.rerank import DEFAULT_RERANKER
    from citeline.settings import load_settings

    settings = load_settings(index if index is not None else ev.default_cache_root() / "_defaults")
    chosen_reranker = reranker or (settings.reranker if settings.reranker != "none" else DEFAULT_RERANKER)
    if reranker is None and chosen_reranker == "late-interaction":
        from citeline.embedding import make_embedder

        if not hasattr(make_embedder(embedder or settings.embedder), "token_vectors"):
            chosen_reranker = "learned"  # MaxSim needs a transformer's token vectors
    err = Console(stderr=True)
    try:
        dataset = datasets.limit_queries(datasets.load_dataset(beir, split), limit_queries)
        with err.status("Opening the evaluation index (the first run embeds the corpus)...") as status:
            done: dict[str, int] = {}

            def progress(event: str, amount: int) -> None:
                done[event] = done.get(event, 0) + amount
                if event == "documents":
                    status.update(f"Indexing {done[event]}/{len(dataset.corpus)} documents...")
                else:
                    status.update(f"Running queries {done[event]}/{len(dataset.queries)}...")

            report = ev.evaluate_retrieval(
                dataset,
                beir,
                split=split,
                embedder=embedder or settings.embedder,
                index=index,
                fusion=fusion or settings.fusion,
                alpha=settings.alpha if alpha is None else alpha,
                reranker=chosen_reranker,
                rerank_depth=rerank_depth or settings.rerank_depth,
                depth=depth or ev.DEFAULT_DEPTH,
                progress=progress if sys.stderr.isatty() else None,
            )
    except CitelineError as exc:
        raise click.ClickException(str(exc)) from exc
    data = report.to_json()
    if as_json:
        click.echo(json.dumps(data, indent=2))
    else:
        Console().print(retrieval_table(data))
        note = degraded_note(data)
        if note:
            Console().print(note, markup=False, highlight=False)
