"""Re-add and one-file edit as a user runs them: a new process each time, from start to exit.

    python benchmarks/peers/updates.py --work DIR --out benchmarks/results/peers   # after run.py

run.py measures re-add and edit inside the process that built the index, where a peer's
in-memory index is already loaded. A user re-indexes in a new run: ``citeline add`` for citeline;
for a peer, a script that loads the index it saved (LlamaIndex: the persisted storage context;
Haystack: the in-memory store's ``save_to_disk`` file), adds the corpus again and saves it when
something changed (``update_saved`` in each peer's config). Here each is timed from process start
to exit (interpreter, imports, embedder, index opened), wall and CPU (``RUSAGE_CHILDREN``). A
peer's process also reads citeline's chunk table, which stands in for its own chunking: that
reading is timed inside the process and taken out.

Per tool: one edit first (run.py left the edited file's edited version in every index and restored
the file: adding the corpus is a one-file edit), three re-adds, then the file edited and restored
again (two more one-file edits); medians. Adds "updates" to DIR's report (--out .json) and a table
to its Markdown.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))

from shared import EDITED_FILE, READDS, edit_file  # noqa: E402
from tables import updates_markdown  # noqa: E402


def command(tool: str, work: Path, peers_python: Path) -> tuple[list[str], dict[str, str]]:
    corpus = str(work / "corpus")
    if tool == "citeline":
        index = str(work / "citeline-index")
        cmd = [sys.executable, "-m", "citeline", "--index", index, "add", corpus, "--root", corpus, "--json"]
        return cmd, dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    cmd = [str(peers_python), str(HERE / "worker.py"), "--tool", tool, "--work", str(work), "--update"]
    return cmd, dict(os.environ, HAYSTACK_TELEMETRY_ENABLED="False", TOKENIZERS_PARALLELISM="false")


def one_run(tool: str, work: Path, peers_python: Path) -> dict[str, Any]:
    """One new process: wall and CPU seconds (less the peer's harness), chunks embedded."""
    cmd, env = command(tool, work, peers_python)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    done = subprocess.run(cmd, check=True, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if tool == "citeline":
        report = json.loads(done.stdout)
        return {"seconds": wall, "cpu_seconds": cpu, "chunks_embedded": report["chunks_embedded"]}
    out = json.loads((work / f"{tool}-update.json").read_text(encoding="utf-8"))
    return {
        "seconds": wall - out["harness_s"],
        "cpu_seconds": cpu - out["harness_cpu_s"],
        "chunks_embedded": out["chunks_embedded"],
        "harness_s": out["harness_s"],
    }


def measure(tool: str, work: Path, peers_python: Path) -> dict[str, Any]:
    edits = [one_run(tool, work, peers_python)]
    readds = [one_run(tool, work, peers_python) for _ in range(READDS)]
    path = work / "corpus" / EDITED_FILE
    original = edit_file(path)
    try:
        edits.append(one_run(tool, work, peers_python))
    finally:
        path.write_text(original, encoding="utf-8")
    edits.append(one_run(tool, work, peers_python))
    row: dict[str, Any] = {}
    for name, runs in (("readd_new", readds), ("edit_new", edits)):
        row[f"{name}_s"] = statistics.median(r["seconds"] for r in runs)
        row[f"{name}_cpu_s"] = statistics.median(r["cpu_seconds"] for r in runs)
        row[f"{name}_chunks_embedded"] = [r["chunks_embedded"] for r in runs]
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", type=Path, required=True, help="the --work folder of a finished run.py")
    ap.add_argument("--out", type=Path, required=True, help="that run's --out (its .json gets 'updates')")
    ap.add_argument("--peers-python", type=Path, default=HERE / ".venv" / "bin" / "python")
    args = ap.parse_args()
    add_to_report(
        args.work,
        args.out,
        args.peers_python,
        " ".join(["python", "benchmarks/peers/updates.py", *sys.argv[1:]]),
    )


def add_to_report(work: Path, out: Path, peers_python: Path, line: str) -> None:
    """Measure every tool of the report at ``out`` (.json) and add the results to it and its .md."""
    report = json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))
    tools = list(report["tools"])
    missing = [t for t in tools if t != "citeline" and not (work / f"{t}-saved").exists()]
    if missing:
        raise SystemExit(f"no saved index in {work} for {', '.join(missing)}: rerun run.py")
    # bytecode as an installed package has it (this sandbox sets PYTHONDONTWRITEBYTECODE)
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(ROOT / "src" / "citeline"), str(HERE)], check=True
    )
    rows = {tool: measure(tool, work, peers_python) for tool in tools}
    report["updates"] = {"tools": rows, "command": line, "loadavg_after": os.getloadavg()}
    out.with_suffix(".json").write_text(json.dumps(report, indent=1), encoding="utf-8")
    md = out.with_suffix(".md")
    text = md.read_text(encoding="utf-8") if md.is_file() else ""
    text = text.split("## Re-add and one-file edit in a new process")[0].rstrip("\n")
    md.write_text(text + "\n\n" + updates_markdown(rows, line), encoding="utf-8")
    print(updates_markdown(rows, line))


if __name__ == "__main__":
    main()
