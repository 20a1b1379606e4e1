"""Train the reader + claim checker cross-encoder on CPU, resumably.

    .venv-train/bin/python training/train.py --data ~/.cache/citeline/train/data --out ~/.cache/citeline/train/run1

One model serves both tasks: the first segment says which ("question: ..." for the reader,
"claim: ..." for the checker; see PREFIXES), the second is the unit ("heading trail: text").
Checkpoints (model, optimiser, schedule, position in the data) are written every
``--checkpoint-every`` steps; running the same command again resumes from the last one.
``--mode frozen`` trains only the head on a frozen encoder (features cached): the cheap
alternative measured against full fine-tuning before the long run.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import resource
import time
from pathlib import Path
from typing import Any

import torch
from tokenizers import Tokenizer

from training.common import auroc
from training.model import CrossEncoder, base_model_dir, load_pretrained

PREFIXES = {"reader": "question: ", "checker": "claim: "}


#: how much a reader pair counts by where its question came from (templates are the noisiest)
QUESTION_WEIGHTS = {"llm": 1.0, "pubmedqa": 0.7, "template": 0.5}


def question_weight(qsource: str) -> float:
    """template_default, template_definition, ... count as "template"."""
    return QUESTION_WEIGHTS.get(qsource.split("_", 1)[0], 1.0)


def read_pairs(
    path: Path, task: str, limit: int | None, seed: int, self_share: float = 1.0
) -> list[dict[str, Any]]:
    """Pairs of one task; ``self_share`` caps the checker pairs whose claim is the premise itself
    (they teach little beyond "equal text") at that share of the positives."""
    rng = random.Random(seed)
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    for r in rows:
        r["task"] = task
    if task == "checker" and self_share < 1.0:
        selves = [r for r in rows if r.get("kind") == "self"]
        others = [r for r in rows if r.get("kind") != "self"]
        keep = int(self_share * sum(int(r["label"]) for r in others) / (1 - self_share))
        rows = others + rng.sample(selves, min(keep, len(selves)))
    if limit is not None and len(rows) > limit:
        rows = rng.sample(rows, limit)
    return rows


def parse_limits(spec: str | None, tasks: list[str]) -> dict[str, int]:
    """ "1500" -> every task 1500; "reader=11000,checker=20000" -> per task."""
    if not spec:
        return {}
    if "=" not in spec:
        return dict.fromkeys(tasks, int(spec))
    return {k.strip(): int(v) for k, v in (part.split("=") for part in spec.split(","))}


def tokenizer(max_len: int) -> Tokenizer:
    tok = Tokenizer.from_file(str(base_model_dir() / "tokenizer.json"))
    tok.enable_truncation(max_len, strategy="longest_first")
    tok.no_padding()
    return tok


def encode(tok: Tokenizer, rows: list[dict[str, Any]]) -> list[tuple[list[int], list[int]]]:
    pairs = [(PREFIXES[r["task"]] + r["a"], r["b"]) for r in rows]
    return [(e.ids, e.type_ids) for e in tok.encode_batch(pairs)]


def batches(encoded: list[tuple[list[int], list[int]]], size: int, seed: int) -> list[list[int]]:
    """Indices in batches of similar length (little padding), batches in random order."""
    rng = random.Random(seed)
    order = list(range(len(encoded)))
    rng.shuffle(order)
    out: list[list[int]] = []
    for lo in range(0, len(order), size * 50):
        block = sorted(order[lo : lo + size * 50], key=lambda i: len(encoded[i][0]))
        out += [block[i : i + size] for i in range(0, len(block), size)]
    rng.shuffle(out)
    return out


def collate(encoded: list[tuple[list[int], list[int]]], idx: list[int]) -> dict[str, torch.Tensor]:
    n = max(len(encoded[i][0]) for i in idx)
    ids = torch.zeros((len(idx), n), dtype=torch.long)
    types = torch.zeros((len(idx), n), dtype=torch.long)
    mask = torch.zeros((len(idx), n), dtype=torch.long)
    for row, i in enumerate(idx):
        a, t = encoded[i]
        ids[row, : len(a)] = torch.tensor(a)
        types[row, : len(t)] = torch.tensor(t)
        mask[row, : len(a)] = 1
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}


def weights_for(rows: list[dict[str, Any]]) -> torch.Tensor:
    """Each (task, label) cell gets the same total weight: tasks and classes are balanced."""
    counts: dict[tuple[str, int], int] = {}
    for r in rows:
        counts[(r["task"], int(r["label"]))] = counts.get((r["task"], int(r["label"])), 0) + 1
    total = len(rows) / max(1, len(counts))
    return torch.tensor(
        [
            total / counts[(r["task"], int(r["label"]))] * question_weight(str(r.get("qsource", "llm")))
            for r in rows
        ],
        dtype=torch.float32,
    )


@torch.no_grad()
def score(model: CrossEncoder, encoded: list[tuple[list[int], list[int]]], size: int = 64) -> list[float]:
    model.eval()
    out = [0.0] * len(encoded)
    order = sorted(range(len(encoded)), key=lambda i: len(encoded[i][0]))
    for lo in range(0, len(order), size):
        idx = order[lo : lo + size]
        logits = model(**collate(encoded, idx)).squeeze(-1)
        for i, v in zip(idx, logits.tolist(), strict=True):
            out[i] = v
    model.train()
    return out


def evaluate(
    model: CrossEncoder, dev: list[dict[str, Any]], encoded: list[tuple[list[int], list[int]]]
) -> dict[str, float]:
    scores = score(model, encoded)
    result = {}
    for task in PREFIXES:
        idx = [i for i, r in enumerate(dev) if r["task"] == task]
        if idx:
            result[f"{task}_auroc"] = round(
                auroc([scores[i] for i in idx], [int(dev[i]["label"]) for i in idx]), 4
            )
    return result


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--tasks", default="reader,checker")
    p.add_argument("--mode", choices=("full", "frozen"), default="full")
    p.add_argument(
        "--max-pairs", default=None, help="per task, sampled with the seed: N, or reader=N,checker=M"
    )
    p.add_argument(
        "--dev-pairs", type=int, default=1500, help="per task, for the AUROC printed while training"
    )
    p.add_argument("--epochs", type=float, default=1.0)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--max-len", type=int, default=128)
    p.add_argument("--lr", type=float, default=4e-5)
    p.add_argument("--head-lr", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=13)
    p.add_argument(
        "--self-share", type=float, default=1.0, help="checker: cap 'self' pairs at this share of positives"
    )
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--checkpoint-every", type=int, default=200)
    p.add_argument("--eval-every", type=int, default=1000)
    args = p.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    args.out.mkdir(parents=True, exist_ok=True)
    log = (args.out / "train.log").open("a", encoding="utf-8")

    def say(**fields: Any) -> None:
        line = json.dumps({"time": round(time.time(), 1), **fields})
        print(line, flush=True)
        log.write(line + "\n")
        log.flush()

    tasks = [t.strip() for t in args.tasks.split(",") if t.strip()]
    limits = parse_limits(args.max_pairs, tasks)
    train = [
        r
        for t in tasks
        for r in read_pairs(args.data / f"{t}_train.jsonl", t, limits.get(t), args.seed, args.self_share)
    ]
    dev = [r for t in tasks for r in read_pairs(args.data / f"{t}_dev.jsonl", t, args.dev_pairs, args.seed)]
    tok = tokenizer(args.max_len)
    enc_train, enc_dev = encode(tok, train), encode(tok, dev)
    weights = weights_for(train)
    model = load_pretrained()
    say(
        event="start",
        pairs=len(train),
        dev=len(dev),
        mode=args.mode,
        args={k: str(v) for k, v in vars(args).items()},
    )

    if args.mode == "frozen":
        train_frozen(model, train, enc_train, weights, dev, enc_dev, args, say)
    else:
        train_full(model, train, enc_train, weights, dev, enc_dev, args, say)
    say(event="done", peak_rss_mb=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024))


def train_full(
    model: CrossEncoder,
    rows: list[dict[str, Any]],
    enc: list[tuple[list[int], list[int]]],
    weights: torch.Tensor,
    dev: list[dict[str, Any]],
    enc_dev: list[tuple[list[int], list[int]]],
    args: argparse.Namespace,
    say: Any,
) -> None:
    epochs = max(1, math.ceil(args.epochs))
    plan = [b for e in range(epochs) for b in batches(enc, args.batch, args.seed + e)]
    plan = plan[: int(len(plan) * args.epochs / epochs)]
    head = [p for n, p in model.named_parameters() if n.startswith("head.")]
    body = [p for n, p in model.named_parameters() if not n.startswith("head.")]
    opt = torch.optim.AdamW(
        [{"params": body, "lr": args.lr}, {"params": head, "lr": args.head_lr}], weight_decay=0.01
    )
    warmup = max(1, len(plan) // 20)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warmup) * max(0.0, (len(plan) - s) / max(1, len(plan) - warmup))
    )
    step = 0
    ckpt = args.out / "checkpoint.pt"
    if ckpt.exists():
        state = torch.load(ckpt, weights_only=False)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        sched.load_state_dict(state["sched"])
        step = state["step"]
        say(event="resumed", step=step)
    loss_fn = torch.nn.BCEWithLogitsLoss(reduction="none")
    model.train()
    started, seen, running = time.perf_counter(), 0, 0.0
    while step < len(plan):
        idx = plan[step]
        batch = collate(enc, idx)
        labels = torch.tensor([float(rows[i]["label"]) for i in idx])
        logits = model(**batch).squeeze(-1)
        loss = (loss_fn(logits, labels) * weights[idx]).sum() / weights[idx].sum()
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        step += 1
        seen += len(idx)
        running = 0.98 * running + 0.02 * loss.item() if step > 1 else loss.item()
        if step % 20 == 0:
            rate = seen / (time.perf_counter() - started)
            say(event="step", step=step, of=len(plan), loss=round(running, 4), pairs_per_s=round(rate, 2))
        if step % args.checkpoint_every == 0 or step == len(plan):
            torch.save(
                {
                    "model": model.state_dict(),
                    "opt": opt.state_dict(),
                    "sched": sched.state_dict(),
                    "step": step,
                },
                ckpt,
            )
        if step % args.eval_every == 0 or step == len(plan):
            say(event="eval", step=step, **evaluate(model, dev, enc_dev))
    torch.save(model.state_dict(), args.out / "model.pt")


def train_frozen(
    model: CrossEncoder,
    rows: list[dict[str, Any]],
    enc: list[tuple[list[int], list[int]]],
    weights: torch.Tensor,
    dev: list[dict[str, Any]],
    enc_dev: list[tuple[list[int], list[int]]],
    args: argparse.Namespace,
    say: Any,
) -> None:
    model.eval()
    started = time.perf_counter()

    @torch.no_grad()
    def features(encoded: list[tuple[list[int], list[int]]]) -> torch.Tensor:
        out = torch.zeros((len(encoded), model.head.in_features))
        order = sorted(range(len(encoded)), key=lambda i: len(encoded[i][0]))
        for lo in range(0, len(order), 64):
            idx = order[lo : lo + 64]
            out[idx] = model.encode(
                **{
                    k: v
                    for k, v in zip(("ids", "mask", "types"), collate(encoded, idx).values(), strict=True)
                }
            )
        return out

    x, x_dev = features(enc), features(enc_dev)
    say(
        event="features",
        pairs=len(enc) + len(enc_dev),
        pairs_per_s=round((len(enc) + len(enc_dev)) / (time.perf_counter() - started), 2),
    )
    y = torch.tensor([float(r["label"]) for r in rows])
    mlp = torch.nn.Sequential(torch.nn.Linear(x.shape[1], 256), torch.nn.GELU(), torch.nn.Linear(256, 1))
    opt = torch.optim.AdamW(mlp.parameters(), lr=1e-3, weight_decay=0.01)
    loss_fn = torch.nn.BCEWithLogitsLoss(reduction="none")
    t = time.perf_counter()
    for _epoch in range(30):
        perm = torch.randperm(len(y))
        for lo in range(0, len(y), 256):
            i = perm[lo : lo + 256]
            loss = (loss_fn(mlp(x[i]).squeeze(-1), y[i]) * weights[i]).sum() / weights[i].sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
    with torch.no_grad():
        s = mlp(x_dev).squeeze(-1).tolist()
    result = {}
    for task in PREFIXES:
        idx = [i for i, r in enumerate(dev) if r["task"] == task]
        if idx:
            result[f"{task}_auroc"] = round(
                auroc([s[i] for i in idx], [int(dev[i]["label"]) for i in idx]), 4
            )
    say(event="eval", head_seconds=round(time.perf_counter() - t, 1), **result)


if __name__ == "__main__":
    main()
