"""Answer quality on the bundled question set, for one generator.

Run: .venv/bin/python benchmarks/bench_questions.py [--generator extractive|llamacpp] [--model 0.5b|1.5b]
Prints answer accuracy (the expected answer string appears in the answer), refusal precision and
recall, the share of answerable questions whose citations include the gold source, and latency.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path

import citeline
from citeline.eval.metrics import percentile
from citeline.filters import Principal

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--generator", default="extractive")
    parser.add_argument("--model", default="", help="llamacpp: 0.5b or 1.5b")
    parser.add_argument("--json", type=Path, help="write per-question rows here")
    args = parser.parse_args()
    questions = [
        json.loads(x) for x in (ROOT / "tests/data/questions.jsonl").read_text().splitlines() if x.strip()
    ]
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copytree(ROOT / "samples", Path(tmp) / "samples")
        kb = citeline.open(Path(tmp) / "index", generator=args.generator, generator_model=args.model)
        kb.add([Path(tmp) / "samples"])
        rows = []
        started = time.perf_counter()
        for q in questions:
            t = time.perf_counter()
            a = kb.ask(q["question"], Principal.local_admin())
            sources = [c.source for c in a.citations]
            expected = (q.get("answer") or "").lower()
            rows.append(
                {
                    "id": q["id"],
                    "answerable": q["answerable"],
                    "refused": a.refused,
                    "correct": bool(expected) and not a.refused and expected in a.answer.lower(),
                    "gold_cited": bool(q.get("source"))
                    and any(s.endswith(q["source"].split("/")[-1]) for s in sources),
                    "ms": (time.perf_counter() - t) * 1000,
                    "answer": a.answer,
                    "reason": a.refusal_reason,
                }
            )
        elapsed = time.perf_counter() - started
    answerable = [r for r in rows if r["answerable"]]
    refused = [r for r in rows if r["refused"]]
    true_refusals = sum(not r["answerable"] for r in refused)
    unanswerable = len(rows) - len(answerable)
    label = args.generator + (f" ({args.model})" if args.model else "")
    print(f"{label}: {len(rows)} questions ({len(answerable)} answerable) in {elapsed:.0f} s")
    print(f"  answer accuracy (answerable):   {sum(r['correct'] for r in answerable) / len(answerable):.3f}")
    print(
        f"  gold source cited (answerable): {sum(r['gold_cited'] for r in answerable) / len(answerable):.3f}"
    )
    print(f"  refusal precision:              {true_refusals / len(refused) if refused else 1.0:.3f}")
    print(f"  refusal recall:                 {true_refusals / unanswerable if unanswerable else 1.0:.3f}")
    times = [r["ms"] for r in rows]
    print(f"  latency p50 {percentile(times, 50):.0f} ms, p95 {percentile(times, 95):.0f} ms")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
