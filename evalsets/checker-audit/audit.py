"""A hand-labelled audit of the sentences the claim checker kept (issue 10's target: >= 90% supported).

    # 1. ask the golden dev questions with an LLM generator and keep every sentence the checker passed,
    #    with the passages it cites
    .venv/bin/python evalsets/checker-audit/audit.py collect --index IDX --docs DOCS \
        --questions evalsets/postfix/dev.jsonl --generator llamacpp --model 0.5b --out kept.jsonl
    # 2. a person reads each sentence against its cited passages and writes labels.jsonl:
    #    {"id": "...", "supported": true|false, "note": "..."}
    # 3. the share supported, with the unsupported ones listed
    .venv/bin/python evalsets/checker-audit/audit.py score kept.jsonl labels.jsonl

The labels are a person's judgement, not a model's: "supported" means the cited passages (with their
headings) state what the sentence says, whether or not it answers the question. Committed runs, both
with Qwen2.5-Coder 0.5B (llamacpp) and the default reader, checker and thresholds:

- kept-golden-dev.jsonl / labels-golden-dev.jsonl: evalsets/postfix/dev.jsonl over the Postfix manual:
  28 of 34 supported (82.4%); the six that are not misattribute a command, invent a flag or a value,
  or contradict the passage ("Yes, postfix reload is enough").
- kept-golden-test.jsonl / labels-golden-test.jsonl: evalsets/postfix/test.jsonl, held out (the
  checker's threshold was chosen before; nothing was changed after reading these): 42 of 48
  distinct kept sentences supported (87.5%); the model also repeated one sentence 13 times and
  another 9 times in two answers (21 repeats, all supported, not counted). The six that are not
  contradict the passage (memcache for alias_maps; a lookup table on an access table's right-hand
  side), misattribute (Postfix's synchronous writes are syslogd's; -V sets VERP, not the sender;
  what silent-discard stops logging), or cite a version the passage does not give (3.5.23 for
  3.5.24). The same run answered none of the 16 unanswerable test questions (`--answers`).
- kept-samples.jsonl / labels-samples.jsonl: tests/data/questions.jsonl over samples/: 46 of 46.
- labels-conditionalqa-dev50.jsonl, labels-rgb-positive50.jsonl: two held-out sets never used for
  the checker, its threshold or the facts rules (labels only: the kept sentences quote evaluation
  data, which stays in the shared datasets; `collect --dataset conditionalqa` / `--dataset
  rgb-positive` with the default 50-question slice writes them again). ConditionalQA dev: 30 of 32
  supported (93.8%); most kept sentences are copied whole from the passages, ten of them a list's
  lead-in without its items ("You can only apply to the tribunal if:"). The two that are not: a
  lead-in cited to a passage without it, and a claim about the asker's business taken from the
  question. RGB positive snippets: 45 of 51 (88.2%): three sentences copied from another product's
  snippet whose "It" then reads as the thing asked about, one "It" replaced by a wrong product name
  (Pixel 6 for the Pixel 5a; both words occur in another cited snippet), a bare title for a year
  its snippet does not give, and a sentence completed past a snippet's "...". Together 75 of 83
  (90.4%). The same runs: ConditionalQA refused 19 of 20 unanswerable questions and 19 of 30
  answerable ones; RGB positive refused 9 of 50 (all answerable).
- removed-golden-dev.jsonl / labels-removed-golden-dev.jsonl: the other side, the 30 sentences of the
  same golden dev answers (trace `verification`) that the checker's score removed: 9 were supported.
  With the kept ones they choose `checker_threshold` (README, "Calibration"):

    .venv/bin/python evalsets/checker-audit/audit.py threshold kept-golden-dev.jsonl \
        labels-golden-dev.jsonl removed-golden-dev.jsonl labels-removed-golden-dev.jsonl
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path

import citeline
from citeline.filters import Principal


def _questions(args: argparse.Namespace) -> tuple[list[dict[str, object]], Path | None]:
    """The questions and the documents folder: a golden file and --docs, or a shared dataset's
    fixed slice (--dataset NAME --slice N, read from the shared datasets, written to a temporary
    folder: evaluation data is never copied into the repository)."""
    if args.dataset:
        from citeline.cli.eval_answers import DATASET_FOLDERS, find_dataset
        from citeline.eval.adapters import adapt

        folder = find_dataset(DATASET_FOLDERS.get(args.dataset, args.dataset))
        if folder is None:
            raise SystemExit(f"{args.dataset}: not found (set CITELINE_DATASETS)")
        adapted = adapt(args.dataset, folder, tempfile.mkdtemp(prefix="audit-"), limit=args.slice)
        return list(adapted.rows), adapted.docs_dir
    if not args.questions:
        raise SystemExit("give --questions (with --docs) or --dataset")
    rows = [json.loads(x) for x in Path(args.questions).read_text(encoding="utf-8").splitlines() if x.strip()]
    return rows, Path(args.docs) if args.docs else None


def collect(args: argparse.Namespace) -> int:
    questions, docs = _questions(args)
    kb = citeline.open(args.index, generator=args.generator, generator_model=args.model)
    if docs is not None:
        kb.add([docs])
    kept = repeats = 0
    answered_unanswerable = 0
    with (
        open(args.out, "w", encoding="utf-8") as out,
        open(args.answers or os.devnull, "w", encoding="utf-8") as log,
    ):
        for q in questions[: args.limit]:
            answer = kb.ask(q["question"], Principal.local_admin())
            answerable = q.get("answerable", True)
            answered_unanswerable += not answerable and not answer.refused
            if args.answers:
                row = {
                    "id": q["id"],
                    "answerable": answerable,
                    "refused": answer.refused,
                    "text": answer.answer,
                }
                log.write(json.dumps(row, ensure_ascii=False) + "\n")
            if answer.refused:
                continue
            by_n = {c.n: c for c in answer.citations}
            written: set[str] = set()
            for s in answer.sentences:
                if s.removed or not s.supported:
                    continue
                if s.text in written:  # a sentence the model repeated is judged once
                    repeats += 1
                    continue
                written.add(s.text)
                row = {
                    "id": hashlib.sha1(f"{q['id']}|{s.text}".encode()).hexdigest()[:12],
                    "question_id": q["id"],
                    "question": q["question"],
                    "sentence": s.text,
                    "checker_score": s.support_score,
                    "cited": [
                        {
                            "n": n,
                            "source": by_n[n].source,
                            "heading": by_n[n].heading,
                            "passage": by_n[n].quote,
                        }
                        for n in s.citations
                        if n in by_n
                    ],
                }
                out.write(json.dumps(row, ensure_ascii=False) + "\n")
                kept += 1
    unanswerable = sum(1 for q in questions[: args.limit] if not q.get("answerable", True))
    print(
        f"{kept} kept sentences written to {args.out} (and {repeats} repeats of one of them in the same answer)"
    )
    print(f"{answered_unanswerable} of {unanswerable} unanswerable questions answered (not refused)")
    return 0


def score(args: argparse.Namespace) -> int:
    kept = {
        r["id"]: r for r in map(json.loads, Path(args.kept).read_text(encoding="utf-8").splitlines()) if r
    }
    labels = [json.loads(x) for x in Path(args.labels).read_text(encoding="utf-8").splitlines() if x.strip()]
    unknown = [lab["id"] for lab in labels if lab["id"] not in kept]
    if unknown:
        print(f"labels for sentences not in {args.kept}: {unknown}", file=sys.stderr)
        return 2
    supported = [lab for lab in labels if lab["supported"]]
    print(
        f"{len(supported)}/{len(labels)} kept sentences supported by their cited passages "
        f"({len(supported) / max(1, len(labels)):.1%}); {len(kept) - len(labels)} unlabelled"
    )
    for lab in labels:
        if not lab["supported"]:
            print(f"  not supported: {kept[lab['id']]['sentence']!r} ({lab.get('note', '')})")
    return 0


def _labelled(rows_path: str, labels_path: str) -> list[tuple[float, bool]]:
    rows = {
        r["id"]: r for r in map(json.loads, Path(rows_path).read_text(encoding="utf-8").splitlines()) if r
    }
    labels = [json.loads(x) for x in Path(labels_path).read_text(encoding="utf-8").splitlines() if x.strip()]
    return [(float(rows[lab["id"]]["checker_score"]), bool(lab["supported"])) for lab in labels]


def threshold(args: argparse.Namespace) -> int:
    """Kept sentences' precision and the share of supported sentences kept, by checker threshold,
    over labelled sentences on both sides of the current threshold (kept and removed)."""
    pairs = _labelled(args.kept, args.kept_labels) + _labelled(args.removed, args.removed_labels)
    supported = sum(1 for _, ok in pairs if ok)
    print(f"{len(pairs)} labelled sentences, {supported} supported")
    print("threshold  kept  supported kept  precision  recall")
    for t in (0.05, 0.1, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9):
        kept = [ok for score, ok in pairs if score >= t]
        good = sum(kept)
        print(
            f"{t:9.2f}  {len(kept):4d}  {good:14d}  {good / max(1, len(kept)):9.3f}  {good / max(1, supported):6.3f}"
        )
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("collect")
    c.add_argument("--index", required=True)
    c.add_argument("--docs")
    c.add_argument("--questions")
    c.add_argument("--dataset", help="a shared dataset's slice instead (conditionalqa, rgb-positive, ...)")
    c.add_argument("--slice", type=int, default=50, help="with --dataset: the fixed slice's size")
    c.add_argument("--generator", default="llamacpp")
    c.add_argument("--model", default="0.5b")
    c.add_argument("--limit", type=int)
    c.add_argument("--out", required=True)
    c.add_argument("--answers", help="also write every question's answer (refused or not) here")
    s = sub.add_parser("score")
    s.add_argument("kept")
    s.add_argument("labels")
    t = sub.add_parser("threshold")
    t.add_argument("kept")
    t.add_argument("kept_labels")
    t.add_argument("removed")
    t.add_argument("removed_labels")
    args = parser.parse_args()
    return {"collect": collect, "score": score, "threshold": threshold}[args.command](args)


if __name__ == "__main__":
    raise SystemExit(main())
