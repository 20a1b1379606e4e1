"""`citeline eval answers` and `citeline eval compare`: answer quality on every change.

Both are plain click commands; the ``eval`` group registers them
(``eval_group.add_command(answers_command)``, ``eval_group.add_command(compare_command)``, or
``register(eval_group)``).
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from citeline.errors import CitelineError

DATASETS = ("rgb", "rgb-positive", "conditionalqa", "scifact")
#: adapters that read another adapter's folder
DATASET_FOLDERS = {"rgb-positive": "rgb"}


def _global_index() -> Path | None:
    """`citeline --index DIR eval answers ...`: the index named before the command, if it was."""
    root = click.get_current_context().find_root()
    source = root.get_parameter_source("index")
    if source in (click.core.ParameterSource.COMMANDLINE, click.core.ParameterSource.ENVIRONMENT):
        return Path(root.params["index"])
    return None


def find_dataset(name: str) -> Path | None:
    """shared/datasets/<name>: under the ``datasets`` setting, else beside the checkout or a parent of cwd."""
    from citeline.settings import load_settings

    configured = load_settings().datasets
    roots = [Path(configured).expanduser()] if configured else []
    here = Path.cwd().resolve()
    roots += [p / "shared" / "datasets" for p in (here, *here.parents[:3])]
    roots.append(Path(__file__).resolve().parents[3].parent / "shared" / "datasets")
    folder = DATASET_FOLDERS.get(name, name)
    for root in roots:
        if (root / folder).is_dir():
            return root / folder
    return None


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def metrics_table(report: dict[str, Any]) -> Table:
    """The headline numbers of an answers report as a rich table."""
    from citeline.eval.report_metrics import UNITS, metric_label

    c = report["counts"]
    title = (
        f"{report.get('dataset') or 'golden set'}: {c['questions']} questions "
        f"({c['answerable']} answerable, {c['unanswerable']} unanswerable), generator {report.get('generator')}, "
        f"verifier {report.get('pipeline_verifier')}"
    )
    table = Table(title=title, title_justify="left")
    table.add_column("metric")
    table.add_column("value", justify="right")
    table.add_column("n", justify="right")
    n = report.get("n", {})
    for name, value in report["metrics"].items():
        unit = UNITS.get(name.split("@")[0], "questions")
        note = ""
        if name == "judge_support" and value is None:
            note = f" ({report['judge'].get('reason')})"
        table.add_row(metric_label(name) + note, _fmt(value), f"{n.get(name, '')} {unit}")
    lat = report["latency_ms"]
    table.add_row("latency p50 / p95 (ms)", f"{_fmt(lat['p50'], 0)} / {_fmt(lat['p95'], 0)}", "")
    cost = report["cost"]
    table.add_row(
        "prompt / completion tokens", f"{_fmt(cost['prompt_tokens'])} / {_fmt(cost['completion_tokens'])}", ""
    )
    stages = ", ".join(f"{k} {v}" for k, v in report["failures"].items() if v) or "none"
    table.add_row("failures by stage", stages, f"{c['failures']} questions")
    return table


MARKER = ".citeline-eval-docs"


def _replace_docs(source: Path, target: Path) -> None:
    """Move adapted documents to --docs; only an empty folder or one written here before is replaced."""
    if target.exists():
        if not target.is_dir():
            raise click.ClickException(f"--docs {target} is not a folder.")
        if any(target.iterdir()) and not (target / MARKER).exists():
            raise click.ClickException(
                f"--docs {target} already holds files that this command did not write; give an empty or new folder."
            )
        shutil.rmtree(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(source), target)
    (target / MARKER).write_text("documents written by `citeline eval answers --dataset`\n", encoding="utf-8")


def _progress(err: Console) -> Any:
    def show(done: int, total: int) -> None:
        if err.is_terminal:
            err.print(f"\rAsked {done}/{total}", end="")

    return show


@click.command("answers")
@click.argument("golden", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--docs",
    type=click.Path(file_okay=False, path_type=Path),
    help="Documents folder: indexed before asking; golden sources are relative to it. With --dataset, "
    "where the adapter writes the documents (default: a temporary folder).",
)
@click.option("--dataset", type=click.Choice(DATASETS), help="Build the golden set from a shared dataset.")
@click.option(
    "--dataset-dir",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="The dataset folder (default: shared/datasets/<name> beside the checkout, or $CITELINE_DATASETS).",
)
@click.option(
    "--limit", type=click.IntRange(min=1), help="With --dataset: a fixed stratified slice of N questions."
)
@click.option("--seed", type=int, default=13, show_default=True, help="With --dataset: the slice's seed.")
@click.option(
    "--split",
    type=click.Choice(["train", "dev"]),
    help="With --dataset conditionalqa: the split to ask (default: dev). Tune on train, report on dev.",
)
@click.option(
    "--index",
    type=click.Path(file_okay=False, path_type=Path),
    help="Index folder to use (default: a fresh temporary one, removed afterwards).",
)
@click.option(
    "-k",
    "k",
    type=click.IntRange(min=1),
    default=5,
    show_default=True,
    help="Cutoff for hit rate and recall.",
)
@click.option(
    "--json", "json_out", type=click.Path(dir_okay=False, path_type=Path), help="Write the JSON report here."
)
@click.option(
    "--html", "html_out", type=click.Path(dir_okay=False, path_type=Path), help="Write the HTML report here."
)
@click.option(
    "--baseline",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A previous JSON report: exit 1 if a tracked metric got worse by more than --max-drop.",
)
@click.option("--max-drop", type=click.FloatRange(min=0.0), default=0.02, show_default=True)
@click.option(
    "--generator", default=None, help="Generator to answer with (default: the settings' generator)."
)
@click.option("--as", "as_user", metavar="user:NAME", help="Evaluate what this principal sees (ACLs apply).")
@click.option("--groups", default="", help="Comma-separated groups of the --as principal.")
def answers_command(
    golden: Path | None,
    docs: Path | None,
    dataset: str | None,
    dataset_dir: Path | None,
    limit: int | None,
    seed: int,
    split: str | None,
    index: Path | None,
    k: int,
    json_out: Path | None,
    html_out: Path | None,
    baseline: Path | None,
    max_drop: float,
    generator: str | None,
    as_user: str | None,
    groups: str,
) -> None:
    """Ask every question of GOLDEN.jsonl and report retrieval, correctness, citations, refusals,
    faithfulness, latency and cost. With --dataset, GOLDEN.jsonl (optional) receives the generated
    golden set."""
    from citeline.eval.adapters import adapt
    from citeline.eval.answers import evaluate_answers, load_golden, regressions, validate_row, write_golden
    from citeline.eval.report import write_reports
    from citeline.kb import open_kb

    err = Console(stderr=True)
    if dataset is None and golden is None:
        raise click.UsageError("Give GOLDEN.jsonl, or --dataset to build one from a shared dataset.")
    if dataset is None and (limit is not None):
        raise click.UsageError("--limit applies to --dataset only.")
    if split is not None and dataset != "conditionalqa":
        raise click.UsageError("--split applies to --dataset conditionalqa only (the others have one split).")
    index = index or _global_index()
    scratch = Path(tempfile.mkdtemp(prefix="citeline-eval-"))
    notes: dict[str, Any] | None = None
    try:
        if dataset is not None:
            root = dataset_dir or find_dataset(dataset)
            if root is None:
                raise click.ClickException(
                    f"Dataset '{dataset}' not found; pass --dataset-dir or set CITELINE_DATASETS to shared/datasets."
                )
            options = {"split": split} if split is not None else {}
            adapted = adapt(dataset, root, scratch, limit=limit, seed=seed, **options)
            if docs is not None:
                _replace_docs(adapted.docs_dir, docs)
                adapted.docs_dir = docs
            rows = [validate_row(r) for r in adapted.rows]
            docs_dir: Path | None = adapted.docs_dir
            notes = {**adapted.notes, "limit": limit, "seed": seed, **options}
            if golden is not None:
                write_golden(rows, golden)
        else:
            assert golden is not None
            if not golden.is_file():
                raise click.ClickException(f"No golden set at {golden}.")
            rows = load_golden(golden)
            docs_dir = docs
        with open_kb(index or scratch / "index", generator=generator) as kb:
            if docs_dir is not None:
                report = kb.add([docs_dir], root=docs_dir)  # sources relative to the documents folder
                if report.failed:
                    err.print(
                        f"[yellow]{len(report.failed)} documents could not be indexed[/]: {report.failed[:3]}"
                    )
            elif index is None:
                raise click.UsageError(
                    "Give --docs (the documents to index) or --index (an index that has them)."
                )
            label = dataset or (golden.stem if golden is not None else None)
            principal = None
            if as_user is not None:
                from citeline.filters import Principal

                principal = Principal(
                    user=as_user.removeprefix("user:") or None,
                    groups=tuple(g.strip() for g in groups.split(",") if g.strip()),
                )
            result = evaluate_answers(
                kb, rows, k, docs_root=docs_dir, dataset=label, progress=_progress(err), principal=principal
            )
        if err.is_terminal:
            err.print()
        if notes is not None:
            result["dataset_notes"] = notes
    except CitelineError as exc:
        raise click.ClickException(str(exc)) from exc
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    base = json.loads(baseline.read_text(encoding="utf-8")) if baseline else None
    write_reports(result, json_out, html_out, base)
    Console().print(metrics_table(result))
    if json_out:
        err.print(f"JSON report: {json_out}")
    if html_out:
        err.print(f"HTML report: {html_out}")
    if base is not None:
        worse = regressions(result, base, max_drop)
        if worse:
            for w in worse:
                err.print(
                    f"[red]regression[/]: {w['metric']} {w['baseline']:.3f} -> {w['current']:.3f} "
                    f"(worse by {w['drop']:.3f} > {max_drop:g})"
                )
            sys.exit(1)
        err.print(f"No tracked metric got worse by more than {max_drop:g} against {baseline}.")


@click.command("compare")
@click.argument("a", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("b", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--max-drop",
    type=click.FloatRange(min=0.0),
    default=None,
    help="Exit 1 if a tracked metric of B is worse than A's by more than this.",
)
def compare_command(a: Path, b: Path, max_drop: float | None) -> None:
    """Print two answers reports (JSON) side by side with the change from A to B."""
    from citeline.eval.answers import regressions

    ra, rb = (json.loads(p.read_text(encoding="utf-8")) for p in (a, b))
    for name, r in ((a, ra), (b, rb)):
        if "metrics" not in r:
            raise click.ClickException(f"{name} is not an answers report (no 'metrics').")
    print_comparison(ra, rb, f"A = {a}   B = {b}")
    if max_drop is not None:
        worse = regressions(rb, ra, max_drop)
        if worse:
            Console(stderr=True).print(
                "[red]worse[/]: " + ", ".join(f"{w['metric']} by {w['drop']:.3f}" for w in worse)
            )
            sys.exit(1)


def print_comparison(ra: dict[str, Any], rb: dict[str, Any], title: str) -> None:
    """Two answers reports side by side (metric, A, B, B - A), then the per-question pairing."""
    Console().print(comparison_table(ra, rb, title))
    Console().print(paired_table(ra.get("rows") or [], rb.get("rows") or []))


def comparison_table(ra: dict[str, Any], rb: dict[str, Any], title: str) -> Table:
    from citeline.eval.answers import deltas
    from citeline.eval.report_metrics import metric_label

    table = Table(title=title, title_justify="left")
    table.add_column("metric")
    table.add_column("A", justify="right")
    table.add_column("B", justify="right")
    table.add_column("B - A", justify="right")
    for d in deltas(ra, rb):
        digits = 0 if d["metric"].startswith("latency") else 3
        if d["delta"] is None:
            change = "n/a"
        else:
            change = f"{d['delta']:+.{digits}f}"
            if d["better"] is not None:
                change = (
                    f"[{'green' if d['better'] else 'red'}]{change} {'better' if d['better'] else 'worse'}[/]"
                )
        name = d["metric"]
        label = name if name.startswith("latency") else metric_label(name)
        table.add_row(label, _fmt(d["a"], digits), _fmt(d["b"], digits), change)
    for key in ("questions", "answerable", "unanswerable", "failures"):
        table.add_row(f"{key} (count)", str(ra["counts"].get(key)), str(rb["counts"].get(key)), "")
    return table


def paired_table(rows_a: list[dict[str, Any]], rows_b: list[dict[str, Any]]) -> Table:
    """Per question: how many got better and worse from A to B, and the sign test's p-value."""
    from citeline.eval.answers.paired import paired_outcomes

    table = Table(
        title="Per question, paired by id (p: exact sign test; above 0.05 the change may be chance)",
        title_justify="left",
    )
    for column in ("outcome", "questions", "B better", "B worse", "p"):
        table.add_column(column, justify="left" if column == "outcome" else "right")
    for o in paired_outcomes(rows_a, rows_b):
        if o.paired:
            table.add_row(o.outcome, str(o.paired), str(o.b_better), str(o.b_worse), f"{o.p_value:.3f}")
    return table


COMMANDS = (answers_command, compare_command)


def register(group: click.Group) -> None:
    """Add `answers` and `compare` to a click group (the `eval` group)."""
    for command in COMMANDS:
        group.add_command(command)
