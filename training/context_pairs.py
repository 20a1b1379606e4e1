"""Reader pairs shaped for answers, not topics (issue 34, item 5), from what the answerer really
puts in front of the reader: the golden sets' dev questions over their own indexes.

    .venv/bin/python training/context_pairs.py --out ~/.cache/citeline/train/answers

For each dev question the answerer retrieves and assembles its context as `ask` does
(``Answerer.prepare``); every candidate unit of that context (``reader.candidates``, pre-ranked and
cut as the product does) is labelled by the gold answer strings: a unit that quotes one answers,
the others of the same context are **answer-removed negatives** (same topic, often the same entry,
the value missing), and every candidate of an unanswerable question is a negative (on topic, no
answer). Two made negatives follow the issue's recipe: a **question echo** (the question restated
as a statement, no value) and a **value swap** (the answering unit with its value replaced by
another value of the same shape from its context). The packaged model's scores are kept beside
each pair (``v1``): the baseline the new reader is compared with, unit by unit.

To keep the claim checker the packaged model already is, checker pairs are made from the same
units (a unit entails itself; a rule corruption of it, ``training/corruptions.py``, does not) and
labelled with the packaged model's own checker probability: the new model learns to read for the
answer without forgetting how to check a claim (self-distillation).

Only golden **dev** splits are read: test splits stay held out. ``--sets`` picks the manuals, so a
model can be trained on some manuals and measured on others (``--eval``).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

from training.corruptions import CORRUPTION_KINDS, corrupt  # noqa: E402

EVALSETS = ROOT / "evalsets"
WH = re.compile(
    r"^(?:(?:what|which|who|when|where|why|how(?: many| much| long| often)?)\s+"
    r"(?:(?:is|are|does|do|can|should|will|must)(?: i| you)?\b)?|is|are|does|do|can)\s*",
    re.I,
)
VALUE = re.compile(r"\b\d[\d.,]*\s*(?:[a-zA-Z%]{1,12})?\b")


def dev_questions(name: str) -> list[dict[str, Any]]:
    rows = []
    for file in ("dev.jsonl", "dev-extra.jsonl"):
        path = EVALSETS / name / file
        if path.exists():
            rows += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return rows


def states(text: str, answers: list[str]) -> bool:
    """Does ``text`` quote one of the gold answers (word-bounded, case and spacing ignored)?"""
    flat = " ".join(text.split()).casefold()
    for answer in answers:
        a = re.escape(" ".join(answer.split()).casefold())
        if re.search(rf"(?<![\w.-]){a}(?![\w-]|\.\d)", flat):
            return True
    return False


def echo(question: str) -> str:
    """The question restated without its value: "What is the default X?" -> "the default X"."""
    body = WH.sub("", question.strip().rstrip("?")).strip()
    return (body[:1].upper() + body[1:] + ".") if body else question


def swapped(text: str, answers: list[str], others: list[str], rng: random.Random) -> str | None:
    """``text`` with its answer replaced by another value of its context, or None."""
    flat = " ".join(text.split())
    for answer in answers:
        a = " ".join(answer.split())
        at = flat.casefold().find(a.casefold())
        if at < 0:
            continue
        numeric = bool(VALUE.fullmatch(a))
        pool = [o for o in others if o.casefold() != a.casefold() and bool(VALUE.fullmatch(o)) == numeric]
        if not pool:
            return None
        return flat[:at] + rng.choice(pool) + flat[at + len(a) :]
    return None


def context_rows(name: str, seed: int) -> list[dict[str, Any]]:
    from citeline.answer.reader import candidates
    from citeline.filters import Principal
    from citeline.ingest.pipeline import PIPELINE_VERSION
    from citeline.kb import access_filter, open_kb

    index = Path.home() / ".cache" / "citeline" / "golden" / f"{name}-v{PIPELINE_VERSION}"
    if not (index / "citeline.db").exists():
        sys.exit(
            f"{name}: no golden index at {index}; run `python evalsets/run.py --split dev --sets {name}`"
        )
    kb = open_kb(index, create=False, read_only=True)
    answerer = kb.components.answerer()
    reader = answerer.reader
    assert reader is not None, "the golden indexes run with the packaged reader"
    rows: list[dict[str, Any]] = []
    for q in dev_questions(name):
        rng = random.Random(f"{seed}:{q['id']}")
        prepared = answerer.prepare(
            answerer.check_question(q["question"]), access_filter(Principal.local_admin(), None)
        )
        query = prepared.query
        found = candidates(prepared.passages)
        if reader.prefilter is not None and len(found) > reader.limit:
            found = reader.prefilter(query, found)[: reader.limit]
        texts = list(dict.fromkeys(c.model_text for c in found))
        answers = list(q.get("answers") or []) if q["answerable"] else []
        labels = [int(bool(answers) and states(t, answers)) for t in texts]
        made: list[tuple[str, str]] = []
        if any(labels):
            made.append((echo(q["question"]), "echo"))
            values = [m.group(0) for t in texts for m in VALUE.finditer(t)]
            for t, label in zip(texts, labels, strict=True):
                if label:
                    s = swapped(t, answers, values, rng)
                    if s is not None:
                        made.append((s, "swap"))
                    break
        # the pair classifier alone (the span head, trained on these pairs, stays out of its own data)
        v1 = reader.model.reader_scores(query.text, texts + [m for m, _ in made], span_weight=0.0)
        for i, (t, label) in enumerate(zip(texts, labels, strict=True)):
            kind = "answer" if label else ("context" if answers else "unanswerable")
            rows.append(_row(name, q, "reader", query.text, t, label, kind, float(v1[i]), rank=i))
        for j, (m, kind) in enumerate(made):
            rows.append(_row(name, q, "reader", query.text, m, 0, kind, float(v1[len(texts) + j])))
        rows += checker_rows(name, q, reader.model, [c.unit.text for c in found[:6]], rng)
    kb.close()
    return rows


def checker_rows(
    name: str, q: dict[str, Any], model: Any, premises: list[str], rng: random.Random
) -> list[dict[str, Any]]:
    """A unit entails itself and not its corruptions: labelled by the packaged checker (self-distillation)."""
    pairs: list[tuple[str, str, str]] = []
    for premise in premises:
        premise = " ".join(premise.split())
        if len(premise) < 30:
            continue
        pairs.append((premise, premise, "self"))
        for kind in rng.sample(CORRUPTION_KINDS, len(CORRUPTION_KINDS)):
            claim = corrupt(kind, premise, premise, rng)
            if claim is not None:
                pairs.append((claim, premise, kind))
                break
    out = []
    for claim, premise, kind in pairs:
        p = float(model.checker_scores(claim, [premise])[0])
        out.append(_row(name, q, "checker", claim, premise, round(p, 4), kind, p))
    return out


def _row(
    name: str,
    q: dict[str, Any],
    task: str,
    a: str,
    b: str,
    label: float,
    kind: str,
    v1: float,
    rank: int = -1,
) -> dict[str, Any]:
    return {
        "set": name,
        "qid": q["id"],
        "task": task,
        "a": a,
        "b": b,
        "label": label,
        "kind": kind,
        "v1": round(v1, 4),
        "rank": rank,
        "answerable": bool(q["answerable"]),
        "qsource": "golden",
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--sets", default="aptitude,borg,docker,gnuplot,openssh,postfix")
    p.add_argument("--seed", type=int, default=13)
    args = p.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for name in args.sets.split(","):
        path = args.out / f"{name}.jsonl"
        if path.exists():
            continue
        rows = context_rows(name, args.seed)
        tmp = path.with_suffix(".tmp")
        tmp.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        tmp.rename(path)
        pos = sum(1 for r in rows if r["task"] == "reader" and r["label"] == 1)
        print(f"{name}: {len(rows)} pairs, {pos} answering units", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
