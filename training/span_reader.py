"""A span head on the packaged encoder (issue 34, item 5): where in the unit is the asked value,
or nowhere (the null answer at [CLS], as in SQuAD 2.0)? Measured like continue_reader.py.

    ~/.cache/citeline/train-venv/bin/python -m training.span_reader --data ~/.cache/citeline/train/answers \
        --train aptitude,borg,docker,openssh --eval gnuplot --out DIR \
        [--spans ~/.cache/citeline/train/spans/spans.jsonl] [--teacher training/labels/teacher-1.5b.jsonl]

A pair classifier taught "the unit names the topic" (continue_reader.py's variants); a span head must
point at the value itself, so a unit that restates the question has nothing to point at. Positives
are the answering units with the gold string's token span; every other unit points at [CLS]. A unit's
score is the best span's start + end logits minus the null's (sigmoid of it for the figures).

``--spans`` adds the template questions with exact answer strings of ``training/answer_spans.py``
(their rows carry their own ``answers``); ``--teacher`` adds the 1.5B judge's answers
(``training/teacher_labels.py``): a unit the teacher picks (P >= 0.5) whose quoted words are in it
becomes an answering unit with those words as its span, where the gold strings missed it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import time
from pathlib import Path
from typing import Any

import torch
from torch import nn

from training.continue_reader import PREFIXES, load, log_step, measure, thinned
from training.model import from_packaged
from training.span_model import SpanReader, collate, logit, sigmoid, span_logits
from training.train import batches, tokenizer

ROOT = Path(__file__).resolve().parents[1]


def gold_answers() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for path in (ROOT / "evalsets").glob("*/dev*.jsonl"):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                out[row["id"]] = list(row.get("answers") or [])
    return out


def encode(tok: Any, rows: list[dict[str, Any]], answers: dict[str, list[str]]) -> list[dict[str, Any]]:
    out = []
    for r, enc in zip(
        rows, tok.encode_batch([(PREFIXES["reader"] + r["a"], r["b"]) for r in rows]), strict=True
    ):
        start = end = 0
        if r["label"] == 1:
            low = r["b"].casefold()
            for answer in r.get("answers") or answers.get(r["qid"], []):
                at = low.find(answer.casefold())
                if at < 0:
                    continue
                toks = [
                    i
                    for i, (seq, (a, b)) in enumerate(zip(enc.sequence_ids, enc.offsets, strict=True))
                    if seq == 1 and a < at + len(answer) and b > at
                ]
                if toks:
                    start, end = toks[0], toks[-1]
                    break
        out.append({"ids": enc.ids, "types": enc.type_ids, "start": start, "end": end})
    return out


def with_teacher(rows: list[dict[str, Any]], labels: Path, floor: float = 0.5) -> int:
    """Mark the units the teacher picked (P >= ``floor``, its quote inside the unit) as answering,
    with the quote as their answer; gold-labelled units and unanswerable questions stay as they are.
    Returns how many units it turned into answers."""
    picks: dict[tuple[str, str], str] = {}
    for line in labels.read_text(encoding="utf-8").splitlines():
        t = json.loads(line)
        c = t["choice"]
        if c and t["answerable"] and t["quote"] and t["probs"][c - 1] >= floor:
            picks[(t["qid"], t["units"][c - 1]["sha1"])] = t["quote"]
    added = 0
    for r in rows:
        quote = picks.get((r["qid"], hashlib.sha1(r["b"].encode("utf-8")).hexdigest()))
        if quote and r["label"] == 0 and r["kind"] == "context" and quote.casefold() in r["b"].casefold():
            r["label"], r["kind"], r["answers"] = 1, "answer", [quote]
            added += 1
    return added


def read_spans(path: Path, limit: int, seed: int) -> list[dict[str, Any]]:
    """The rows of ``limit`` questions (0: all) of answer_spans.py's file, a seeded sample."""
    by_q: dict[str, list[dict[str, Any]]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        by_q.setdefault(r["qid"], []).append(r)
    keys = sorted(by_q)
    if limit and limit < len(keys):
        keys = sorted(random.Random(seed).sample(keys, limit))
    return [r for k in keys for r in by_q[k]]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", type=Path, required=True)
    p.add_argument("--train", required=True)
    p.add_argument("--eval", required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--lr", type=float, default=3e-5)
    p.add_argument("--seed", type=int, default=13)
    p.add_argument("--spans", type=Path, help="answer_spans.py's rows (template questions with answers)")
    p.add_argument("--max-spans", type=int, default=0, help="questions of --spans at most (0: all)")
    p.add_argument("--teacher", type=Path, help="teacher_labels.py's labels of the --train manuals")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument(
        "--init", type=Path, help="a span model.pt to continue from (default: the packaged encoder)"
    )
    p.add_argument("--freeze", type=int, default=0, help="lower encoder layers (and embeddings) kept fixed")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    args.out.mkdir(parents=True, exist_ok=True)
    tok = tokenizer(128)
    answers = gold_answers()
    train = [
        r
        for r in thinned(load(args.data, args.train.split(",")), 5, 3, 0.0, args.seed)
        if r["task"] == "reader"
    ]
    added = with_teacher(train, args.teacher) if args.teacher else 0
    spans = read_spans(args.spans, args.max_spans, args.seed) if args.spans else []
    train += spans
    held = [r for r in load(args.data, args.eval.split(",")) if r["task"] == "reader"]
    enc = encode(tok, train, answers)
    model = SpanReader(from_packaged(), shared=args.freeze)
    if args.init is not None:
        model.load_state_dict(torch.load(args.init, weights_only=True))
    plan = [
        b
        for e in range(args.epochs)
        for b in batches([(x["ids"], x["types"]) for x in enc], 32, args.seed + e)
    ]
    trainable = [x for x in model.parameters() if x.requires_grad]
    opt = torch.optim.AdamW(trainable, lr=args.lr, weight_decay=0.01)
    loss_fn = nn.CrossEntropyLoss()
    model.train()
    started = time.perf_counter()
    for step, idx in enumerate(plan, 1):
        ids, mask, types, starts, ends = collate(enc, idx)
        logits = model(ids, mask, types)
        loss = loss_fn(logits[..., 0], starts) + loss_fn(logits[..., 1], ends)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        log_step(step, len(plan), loss.item(), step * 32 / (time.perf_counter() - started))
    torch.save(model.state_dict(), args.out / "model.pt")
    for r, v in zip(held, span_logits(model, encode(tok, held, answers)), strict=True):
        r["span"] = sigmoid(v)
        # the packaged reader's log-odds plus the span's: does the span head add to what ships?
        r["mix"] = sigmoid(logit(r["v1"]) + v)
    report = {
        "train": args.train,
        "eval": args.eval,
        "pairs": len(train),
        "span_pairs": len(spans),
        "answering_units": sum(1 for r in train if r["label"] == 1),
        "teacher_added": added,
        "argv": vars(args) | {k: str(v) for k, v in vars(args).items() if isinstance(v, Path)},
        "steps": len(plan),
        "v1": measure(held, "v1"),
        "span": measure(held, "span"),
        "v1_plus_span": measure(held, "mix"),
    }
    (args.out / "report.json").write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
