"""One-shot commands timed from outside: a whole `citeline search -k 5` and `citeline ask` process.

    python benchmarks/bench_oneshot.py                          # SciFact + the Docker manual (15,941 chunks)
    python benchmarks/bench_oneshot.py --index DIR --runs 7     # any index

Without ``--index``, SciFact's corpus and the Docker 20.10 manual (evalsets/docker/fetch.sh; 152
Markdown pages) are indexed once into ~/.cache/citeline/bench/oneshot-mixed (minutes of MiniLM):
today's chunker cuts the manual into 2,478 chunks, so the manual alone is no 14k-chunk index.
Each command runs ``--runs`` times after one warm-up run (the page cache, the dense matrix file
and the word list a first process writes); reported: the median and the spread of wall time,
CPU time (user + system, all threads, from wait4) and peak memory (max RSS). The load average
before and after is printed beside them: on a shared machine the CPU column is the steadier one.
Sources are compiled first (compileall), as `make run` does: PYTHONDONTWRITEBYTECODE would
otherwise make every process compile citeline again.

Then ``--questions`` (default 30 Docker dev questions) are asked in ONE process on the same index,
after one warm-up question (the models' loading, reported apart): wall p50/p95, CPU p50 and the
trace's stage timings (``timings_ms``; the read stage is the reader's prefilter and model). Issue 34
asks for ``ask`` p50 <= 1.5 s with the read stage <= 300 ms on a 14k-chunk index.
Writes benchmarks/results/oneshot.{json,md}.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
CACHE = Path(os.environ.get("CITELINE_CACHE", Path.home() / ".cache" / "citeline"))
SEARCH = "how do I limit the memory of a container"
ASK = "How do I limit the memory a container may use?"
TARGETS = {"search": 0.4, "ask": 1.0}
IN_PROCESS_TARGETS_MS = {"ask": 1500.0, "read": 300.0}
QUESTIONS = ROOT / "evalsets" / "docker" / "dev.jsonl"
SCIFACT = str(Path(os.environ.get("CITELINE_DATASETS", ROOT.parent / "shared" / "datasets")) / "scifact")


def bench_index() -> Path:
    """SciFact's 5,183 abstracts (13,463 chunks, staged as `citeline eval retrieval` stages them)
    and the Docker manual (152 pages, 2,478 chunks) in one index: 15,941 chunks, over the 14k of
    issues 34 and 37, asked Docker questions. Built once (minutes of MiniLM) and kept."""
    folder = CACHE / "bench" / "oneshot-mixed"
    if (folder / "citeline.db").is_file() and (folder / ".complete").is_file():
        return folder
    from citeline.eval.beir import load_beir
    from citeline.eval.retrieval_run import open_eval_index

    open_eval_index(load_beir(SCIFACT, "test"), SCIFACT, index=folder).kb.close()
    docs = subprocess.run(
        ["bash", str(ROOT / "evalsets" / "docker" / "fetch.sh")], check=True, capture_output=True, text=True
    ).stdout.strip()
    subprocess.run([sys.executable, "-m", "citeline", "--index", str(folder), "add", docs], check=True)
    (folder / ".complete").write_text(f"{SCIFACT}\n{docs}\n")
    return folder


def run_once(argv: list[str], env: dict[str, str] | None = None) -> tuple[dict[str, float], str]:
    # output to files, not pipes: a process writing more than a pipe holds would wait for a reader
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        process = subprocess.Popen(argv, stdout=out, stderr=err, env=env)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - started
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {stderr.decode(errors='replace')[-2000:]}")
    metrics = {"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime, "max_rss_mb": usage.ru_maxrss / 1024}
    return metrics, stdout.decode(errors="replace")


def measure(argv: list[str], runs: int, against: str | None = None) -> dict[str, Any]:
    """The command's runs; with ``against`` (another source tree), each run is followed by one
    from that tree, so that both see the same load; its summary is under "against"."""
    here = {**os.environ, "PYTHONPATH": str(ROOT / "src")}  # this tree, whatever is installed
    return summarise(argv, runs, here, {**os.environ, "PYTHONPATH": against} if against else None)


def summarise(
    argv: list[str], runs: int, env: dict[str, str], interleave: dict[str, str] | None
) -> dict[str, Any]:
    outputs = {run_once(argv, env)[1]}  # the warm-up run
    if interleave is not None:
        run_once(argv, interleave)
    samples: list[dict[str, float]] = []
    other: list[dict[str, float]] = []
    other_outputs: set[str] = set()
    for _ in range(runs):
        metrics, output = run_once(argv, env)
        samples.append(metrics)
        outputs.add(output)
        if interleave is not None:
            metrics, output = run_once(argv, interleave)
            other.append(metrics)
            other_outputs.add(output)
    summary = statistics_of(samples, outputs, runs)
    if interleave is not None:
        summary["against"] = statistics_of(other, other_outputs, runs)
        summary["same_output_as_against"] = outputs == other_outputs
    return summary


def statistics_of(samples: list[dict[str, float]], outputs: set[str], runs: int) -> dict[str, Any]:
    summary: dict[str, Any] = {"runs": runs, "same_output_every_run": len(outputs) == 1}
    for key in ("wall_s", "cpu_s", "max_rss_mb"):
        values = sorted(s[key] for s in samples)
        summary[key] = {
            "median": round(statistics.median(values), 3),
            "min": round(values[0], 3),
            "max": round(values[-1], 3),
        }
    summary["output"] = sorted(outputs)[0]
    return summary


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def ask_in_process(index: Path, questions: Path, count: int) -> dict[str, Any]:
    """``count`` questions asked one after another in one process (this tree's sources, like the
    one-shot runs): the warm-up question apart, then wall, CPU (all threads) and the trace's stages."""
    done = subprocess.run(
        [
            sys.executable,
            __file__,
            "--loop",
            str(index),
            "--questions",
            str(questions),
            "--count",
            str(count),
        ],
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise SystemExit(f"the in-process run failed: {done.stderr[-2000:]}")
    rows: list[dict[str, Any]] = json.loads(done.stdout)
    warm_up, timed = rows[0], rows[1:]
    stages = sorted({k for r in timed for k in r["timings_ms"]} - {"total"})
    summary: dict[str, Any] = {
        "questions": len(timed),
        "source": str(questions.relative_to(ROOT) if questions.is_relative_to(ROOT) else questions),
        "warm_up_ms": round(warm_up["wall_ms"], 1),
        "refused": sum(r["refused"] for r in timed),
    }
    for key in ("wall_ms", "cpu_ms"):
        values = [r[key] for r in timed]
        summary[key] = {"p50": round(percentile(values, 50), 1), "p95": round(percentile(values, 95), 1)}
    summary["stages_ms"] = {
        stage: {
            "p50": round(percentile([r["timings_ms"].get(stage, 0.0) for r in timed], 50), 1),
            "p95": round(percentile([r["timings_ms"].get(stage, 0.0) for r in timed], 95), 1),
        }
        for stage in stages
    }
    return summary


def loop(index: Path, questions: Path, count: int) -> None:
    """The in-process run's own process: a warm-up question, then ``count`` questions; JSON rows on stdout."""
    import citeline
    from citeline.filters import Principal

    asked = [json.loads(line)["question"] for line in questions.read_text().splitlines() if line.strip()]
    kb = citeline.open(index, create=False)
    rows = []
    # the warm-up question is one not timed: a timed one asked twice would find its reading remembered
    for question in [asked[-1], *asked[: min(count, len(asked) - 1)]]:
        started, cpu = time.perf_counter(), time.process_time()  # process time: every thread
        answer = kb.ask(question, Principal.local_admin())
        wall_ms, cpu_ms = (time.perf_counter() - started) * 1000, (time.process_time() - cpu) * 1000
        rows.append(
            {"wall_ms": wall_ms, "cpu_ms": cpu_ms, "timings_ms": answer.timings_ms, "refused": answer.refused}
        )
    print(json.dumps(rows))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--index", type=Path, help="an index folder (default: the Docker manual, built once)")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--search", default=SEARCH)
    ap.add_argument("--ask", default=ASK)
    ap.add_argument("--out", default=str(RESULTS / "oneshot"))
    ap.add_argument(
        "--against",
        metavar="SRC",
        help="another source tree (e.g. the src of a `git worktree` of an earlier commit): its runs "
        "alternate with this tree's, so that both see the same load",
    )
    ap.add_argument("--questions", type=Path, default=QUESTIONS, help="JSON lines with a question each")
    ap.add_argument("--count", type=int, default=30, help="questions asked in one process (0: none)")
    ap.add_argument("--loop", type=Path, help=argparse.SUPPRESS)  # the in-process run's own process
    args = ap.parse_args()
    if args.loop is not None:
        loop(args.loop, args.questions, args.count)
        return
    compileall.compile_dir(str(ROOT / "src" / "citeline"), quiet=1)
    index = args.index or bench_index()
    citeline = [sys.executable, "-m", "citeline", "--index", str(index)]
    load_before = os.getloadavg()
    result: dict[str, Any] = {
        "index": str(index),
        "commands": {
            "search": measure([*citeline, "search", "-k", "5", args.search], args.runs, args.against),
            "ask": measure([*citeline, "ask", args.ask], args.runs, args.against),
        },
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "cpus": len(os.sched_getaffinity(0)),
        "python": sys.version.split()[0],
    }
    chunks = subprocess.run([*citeline, "status", "--json"], capture_output=True, text=True)
    if chunks.returncode == 0:
        result["status"] = json.loads(chunks.stdout)
    if args.count > 0:
        result["in_process"] = ask_in_process(index, args.questions.resolve(), args.count)
        result["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    for name, command in result["commands"].items():
        for label, r in [(name, command)] + ([("against", command["against"])] if args.against else []):
            print(
                f"{label:<7} wall {r['wall_s']['median']:.3f} s (min {r['wall_s']['min']:.3f}, target "
                f"{TARGETS[name]}), CPU {r['cpu_s']['median']:.3f} s, max RSS {r['max_rss_mb']['median']:.0f} MB"
            )
    if "in_process" in result:
        r = result["in_process"]
        read = r["stages_ms"].get("read", {"p50": 0.0})
        print(
            f"ask in one process, {r['questions']} questions: p50 {r['wall_ms']['p50']:.0f} ms, p95 "
            f"{r['wall_ms']['p95']:.0f} ms (target {IN_PROCESS_TARGETS_MS['ask']:.0f}), CPU p50 "
            f"{r['cpu_ms']['p50']:.0f} ms; read stage p50 {read['p50']:.0f} ms (target {IN_PROCESS_TARGETS_MS['read']:.0f})"
        )
    print(f"load average {result['load_average_before']} before, {result['load_average_after']} after")
    out = Path(args.out)
    out.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n")
    out.with_suffix(".md").write_text(markdown(result, args) + "\n")


def markdown(result: dict[str, Any], args: argparse.Namespace) -> str:
    lines = [
        "# One-shot commands (benchmarks/bench_oneshot.py)",
        "",
        f"Index {result['index']}; {args.runs} runs after a warm-up, {result['cpus']} CPUs, Python "
        f"{result['python']}, load average {result['load_average_before'][0]} before and "
        f"{result['load_average_after'][0]} after (2 cores: above ~1 other jobs share them; then read CPU).",
        "",
        "| command | wall s median (min-max) | target s | CPU s median | max RSS MB |",
        "|---|---|---|---|---|",
    ]
    for name, command in result["commands"].items():
        rows = [(name, command)]
        if "against" in command:  # the other tree's runs, alternating with these
            rows.append((f"{name}, {args.against}", command["against"]))
        for label, r in rows:
            w = r["wall_s"]
            lines.append(
                f"| {label} | {w['median']} ({w['min']}-{w['max']}) | {TARGETS[name]} | {r['cpu_s']['median']} "
                f"| {r['max_rss_mb']['median']:.0f} |"
            )
    lines += ["", f'search: `citeline search -k 5 "{args.search}"`; ask: `citeline ask "{args.ask}"`.']
    if args.against:
        same = all(c.get("same_output_as_against") for c in result["commands"].values())
        lines.append(f"Each run alternated with one of {args.against}; the same output: {same}.")
    if "in_process" in result:
        lines += ["", *in_process_markdown(result)]
    return "\n".join(lines)


def in_process_markdown(result: dict[str, Any]) -> list[str]:
    r = result["in_process"]
    chunks = (result.get("status") or {}).get("chunks", "?")
    lines = [
        f"## `ask` in one process ({r['questions']} questions of {r['source']}, {chunks} chunks)",
        "",
        f"After one warm-up question ({r['warm_up_ms']:.0f} ms: the models load); {r['refused']} refused. "
        f"Targets (issue 34): p50 <= {IN_PROCESS_TARGETS_MS['ask']:.0f} ms, read stage <= "
        f"{IN_PROCESS_TARGETS_MS['read']:.0f} ms.",
        "",
        "| | p50 ms | p95 ms |",
        "|---|---|---|",
        f"| ask, wall | {r['wall_ms']['p50']} | {r['wall_ms']['p95']} |",
        f"| ask, CPU (all threads) | {r['cpu_ms']['p50']} | {r['cpu_ms']['p95']} |",
    ]
    lines += [f"| stage: {name} | {v['p50']} | {v['p95']} |" for name, v in r["stages_ms"].items()]
    return lines


if __name__ == "__main__":
    main()
