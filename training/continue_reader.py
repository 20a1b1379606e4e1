"""Continue the packaged cross-encoder on answer-shaped pairs (issue 34, item 5) and measure it
unit by unit on manuals it did not see.

    .venv-train/bin/python -m training.continue_reader --data ~/.cache/citeline/train/answers \
        --train aptitude,borg,docker --eval gnuplot,openssh,postfix --out ~/.cache/citeline/train/foldA

The start is the packaged model itself (its int8 ONNX weights dequantised into ``training.model``),
so what it learned from 13k LLM-question pairs stays; the new pairs come from
``training/context_pairs.py``. Reader pairs are hard labels (the unit quotes the gold answer or not),
checker pairs the packaged checker's own probabilities (it should not forget). Measured on the
``--eval`` manuals, for the packaged model (``v1``) and the new one: P@1 (the best-scored unit of a
context quotes the answer), AUROC of answering units against each kind of negative, and the
question-level AUROC of the best score (answerable with the answer in context against unanswerable:
what the refusal threshold reads).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import torch

from training.common import auroc
from training.model import from_packaged
from training.train import batches, collate, score, tokenizer

PREFIXES = {"reader": "question: ", "checker": "claim: "}
#: the made negatives are one per question, the context's units twenty: each echo and swap counts
#: more, as they are the mistakes the packaged model makes most (an echo scores 0.99 there)
KIND_WEIGHTS = {"echo": 4.0, "swap": 3.0}


#: (--kind-weights) e.g. "echo=1,swap=3": variant B, after echo at 4 made the model anti-topical
def log_step(step: int, steps: int, loss: float, rate: float) -> None:
    """Every 25th step and the last: one JSON line of progress (the trainers' shared log format)."""
    if step % 25 == 0 or step == steps:
        print(
            json.dumps({"step": step, "of": steps, "loss": round(loss, 4), "pairs_per_s": round(rate, 1)}),
            flush=True,
        )


def load(data: Path, sets: list[str]) -> list[dict[str, Any]]:
    rows = []
    for name in sets:
        for line in (data / f"{name}.jsonl").read_text(encoding="utf-8").splitlines():
            rows.append(json.loads(line))
    # the echo is read as the answering unit would be: under its heading context
    prefix: dict[str, str] = {}
    for r in rows:
        if r["kind"] == "answer" and r["qid"] not in prefix and ": " in r["b"]:
            prefix[r["qid"]] = r["b"].split(": ", 1)[0]
    for r in rows:
        if r["kind"] == "echo" and r["qid"] in prefix:
            r["b"] = f"{prefix[r['qid']]}: {r['b']}"
    return rows


def thinned(
    rows: list[dict[str, Any]], context: int, unanswerable: int, checker: float, seed: int
) -> list[dict[str, Any]]:
    """Fewer pairs at the same difficulty (CPU time): per question every answering unit, made negative
    and, of the context's other units, the ``context`` the packaged model scores highest (the
    hardest: on topic, no answer); of an unanswerable question's units its ``unanswerable`` highest;
    a ``checker`` share of the checker pairs."""
    rng = random.Random(seed)
    by_q: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    out = []
    for r in rows:
        if r["task"] == "checker":
            if rng.random() < checker:
                out.append(r)
        elif r["kind"] in ("context", "unanswerable"):
            by_q[(r["qid"], r["kind"])].append(r)
        else:
            out.append(r)
    for (_, kind), group in by_q.items():
        keep = context if kind == "context" else unanswerable
        out += sorted(group, key=lambda r: -r["v1"])[:keep]
    return out


def encode(tok: Any, rows: list[dict[str, Any]]) -> list[tuple[list[int], list[int]]]:
    return [
        (e.ids, e.type_ids) for e in tok.encode_batch([(PREFIXES[r["task"]] + r["a"], r["b"]) for r in rows])
    ]


def measure(rows: list[dict[str, Any]], key: str) -> dict[str, float]:
    """P@1, AUROC by negative kind and the question-level refusal AUROC for scores under ``key``."""
    reader = [r for r in rows if r["task"] == "reader"]
    out: dict[str, float] = {}
    by_q: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in reader:
        if r["kind"] in ("answer", "context", "unanswerable"):
            by_q[r["qid"]].append(r)
    tops = [max(rs, key=lambda r: r[key]) for rs in by_q.values() if any(r["label"] for r in rs)]
    out["p_at_1"] = round(sum(t["label"] for t in tops) / max(1, len(tops)), 4)
    out["questions"] = len(tops)
    pos = [r[key] for r in reader if r["label"] == 1]
    for kind in ("context", "unanswerable", "echo", "swap"):
        neg = [r[key] for r in reader if r["kind"] == kind]
        if neg and pos:
            out[f"auroc_{kind}"] = round(auroc(pos + neg, [1] * len(pos) + [0] * len(neg)), 4)
    best_ans = [max(r[key] for r in rs) for rs in by_q.values() if any(r["label"] for r in rs)]
    best_un = [
        max(r[key] for r in rs) for rs in by_q.values() if all(r["kind"] == "unanswerable" for r in rs)
    ]
    if best_ans and best_un:
        out["refusal_auroc"] = round(auroc(best_ans + best_un, [1] * len(best_ans) + [0] * len(best_un)), 4)
    checker = [r for r in rows if r["task"] == "checker"]
    if checker:
        out["checker_mae_vs_v1"] = round(float(np.mean([abs(r[key] - r["v1"]) for r in checker])), 4)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", type=Path, required=True)
    p.add_argument("--train", default="", help="manuals to train on ('' with --epochs 0: measure only)")
    p.add_argument("--init", type=Path, help="a model.pt to start from instead of the packaged model")
    p.add_argument("--eval", default="")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--context", type=int, default=5, help="hardest other units kept per question")
    p.add_argument("--unanswerable", type=int, default=3, help="hardest units kept per unanswerable question")
    p.add_argument("--checker-share", type=float, default=0.35)
    p.add_argument("--kind-weights", default="", help="e.g. echo=1,swap=3 (default: KIND_WEIGHTS)")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--lr", type=float, default=2e-5)
    p.add_argument("--max-len", type=int, default=128)
    p.add_argument("--seed", type=int, default=13)
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    args.out.mkdir(parents=True, exist_ok=True)
    tok = tokenizer(args.max_len)
    model = from_packaged()
    if args.init is not None:
        model.load_state_dict(torch.load(args.init, weights_only=True))
    train = load(args.data, args.train.split(",")) if args.train else []
    train = thinned(train, args.context, args.unanswerable, args.checker_share, args.seed)
    held = load(args.data, args.eval.split(",")) if args.eval else []
    enc = encode(tok, train)
    # each (task, label) cell weighs the same: answering units are one in ten of the reader's pairs
    cells: dict[tuple[str, int], int] = defaultdict(int)
    for r in train:
        cells[(r["task"], round(r["label"]))] += 1
    kinds = {
        **KIND_WEIGHTS,
        **{k: float(v) for k, v in (p.split("=") for p in args.kind_weights.split(",") if p)},
    }
    weights = torch.tensor(  # (empty with --epochs 0)
        [
            len(train) / len(cells) / cells[(r["task"], round(r["label"]))] * kinds.get(r["kind"], 1.0)
            for r in train
        ]
    )
    plan = [b for e in range(args.epochs) for b in batches(enc, args.batch, args.seed + e)]
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    warm = max(1, len(plan) // 10)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warm) * max(0.0, (len(plan) - s) / max(1, len(plan) - warm))
    )
    loss_fn = torch.nn.BCEWithLogitsLoss(reduction="none")
    model.train()
    started = time.perf_counter()
    for step, idx in enumerate(plan, 1):
        labels = torch.tensor([float(train[i]["label"]) for i in idx])
        logits = model(**collate(enc, idx)).squeeze(-1)
        w = weights[idx]
        loss = (loss_fn(logits, labels) * w).sum() / w.sum()
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        log_step(step, len(plan), loss.item(), step * args.batch / (time.perf_counter() - started))
    if plan:
        torch.save(model.state_dict(), args.out / "model.pt")
    report: dict[str, Any] = {"train": args.train, "eval": args.eval, "pairs": len(train), "steps": len(plan)}
    if held:
        logits = score(model, encode(tok, held))
        for r, v in zip(held, logits, strict=True):
            r["v2"] = 1.0 / (1.0 + math.exp(-v))
        for name in sorted({r["set"] for r in held}):
            part = [r for r in held if r["set"] == name]
            report[name] = {"v1": measure(part, "v1"), "v2": measure(part, "v2")}
        report["pooled"] = {"v1": measure(held, "v1"), "v2": measure(held, "v2")}
    (args.out / "report.json").write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
