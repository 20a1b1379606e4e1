"""Build the training data of the reader and the claim checker (issue 10, item 2).

    python training/fetch_manuals.py                                 # once: the Debian manuals
    python training/build_data.py --out ~/.cache/citeline/train/small --limit 50      # a small run
    nice -n 10 python training/build_data.py --limit 9000 --time-budget 9000          # the full run

Stages, each cached as JSONL under ``--out`` (default ``$CITELINE_CACHE/train/data``) so that a
stopped run continues where it was (touch ``<out>/STOP`` to stop one cleanly):

1. ``units``: every manual file of training/manuals.toml is parsed with citeline's own parser
   (``citeline.ingest.registry.parser_for``); its paragraph, list and table blocks are cut into
   units with ``citeline.answer.units.passage_units`` (sentences by blingfire, table rows, list
   items), each with its heading trail; windows of two adjacent units of one section are added.
2. ``generate``: the packaged Qwen model (xllamacpp, in-process) writes one question per
   informative unit, several units of one section per prompt, and rewrites some units in other
   words for the checker. Each reply is appended to questions.jsonl / paraphrases.jsonl as it
   comes, with its timings; a rerun skips the batches already there.
3. ``assemble`` (no model, seconds): reader and checker pairs with hard negatives, PubMedQA's
   non-test half, the split by document (and whole held-out manuals), and the final files
   ``reader_{train,dev,test}.jsonl``, ``checker_{train,dev,test}.jsonl`` plus stats.json.

Later rounds' stages, each off by default (training/README.md): ``kinds`` (answer-kind questions,
answer_kinds.py; assemble them with ``--kinds``) and ``rewrites`` (the assembled questions reworded
in a user's words, question_rewrites.py; it reads the assembled files, so assemble again with
``--rewrites`` afterwards).

Every random choice is drawn from ``random.Random(f"{seed}:{key}")`` with a stable key, so the
output does not depend on the order in which things are processed or on where a run resumed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from training import claims as C
from training.answer_kinds import kind_groups, stage_kinds
from training.checker_pairs import checker_groups, checker_plan, checker_premises
from training.common import (
    Logger,
    Manual,
    cache_root,
    check_not_reserved,
    load_manuals,
    peak_rss_mib,
    read_jsonl,
)
from training.pubmed import PUBMEDQA, pubmed_groups, pubmedqa_records
from training.question_rewrites import rewrite_groups, stage_rewrites
from training.question_variants import altered_groups, option_groups
from training.questions import Batch, plan_batches, stage_generate, take_units
from training.reader_pairs import Corpus, reader_groups, unit_of
from training.templates import template_groups
from training.units import Unit, load_units, rng_for, split_of, stage_units

# Each stage lives in its own module: units.py (stage 1), questions.py (stage 2: plan and
# generate), reader_pairs.py, templates.py, checker_pairs.py and pubmed.py (the groups of stage 3);
# this file assembles the final files and runs the stages.

SPLITS = ("train", "dev", "test")

# ---------------------------------------------------------------------------------- assemble


def token_lengths(texts: Sequence[str]) -> dict[str, float]:
    """Token counts with the MiniLM tokenizer the models will use (words * 1.3 if it is missing)."""
    if not texts:
        return {}
    counts: list[int]
    tok_path = (
        Path(__file__).resolve().parent.parent.parent
        / "shared"
        / "models"
        / "all-minilm-l6-v2-tokenizer"
        / "tokenizer.json"
    )
    try:
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(str(tok_path))
        tok.no_truncation()
        tok.no_padding()
        counts = [len(e.ids) for e in tok.encode_batch(list(texts), add_special_tokens=False)]
    except Exception:
        counts = [int(len(t.split()) * 1.3) for t in texts]
    counts.sort()

    def q(p: float) -> float:
        return float(counts[min(len(counts) - 1, int(p * len(counts)))])

    return {
        "p50": q(0.5),
        "p90": q(0.9),
        "p99": q(0.99),
        "max": float(counts[-1]),
        "mean": round(sum(counts) / len(counts), 1),
    }


def stage_assemble(
    out: Path, units: Sequence[Unit], manuals: Sequence[Manual], args: argparse.Namespace, log: Logger
) -> dict[str, Any]:
    for package in sorted({u.manual for u in units}):
        check_not_reserved(package)  # a stale units.jsonl must not smuggle a reserved manual in
    pinned = {m.package: m.split for m in manuals}
    split = {u.doc: split_of(u.doc, args.seed, pinned.get(u.manual, "")) for u in units}
    corpus = Corpus(units, split, args.topical)
    stats: Counter[str] = Counter()
    questions = read_jsonl(out / "questions.jsonl")
    # one record per batch (a batch written twice by overlapping runs counts once)
    questions = list({r["batch"]: r for r in questions}.values())
    paraphrases: dict[str, str] = {}
    for r in read_jsonl(out / "paraphrases.jsonl"):
        for uid, text in zip(r["units"], r["rewrites"], strict=False):
            if text:
                paraphrases[uid] = " ".join(text.split())
    vocab = {
        m.package: C.name_vocabulary(u.text for u in corpus.units if u.manual == m.package) for m in manuals
    }
    premises = checker_premises(units, args.seed, args.checker_premises)
    # the premises with a paraphrase first, so a small --checker-premises keeps them
    premises = [p for p in premises if p.id in paraphrases] + [p for p in premises if p.id not in paraphrases]
    outputs = {(task, s): [] for task in ("reader", "checker") for s in SPLITS}
    # each later kind skips the units that an earlier kind already asked about
    groups = list(reader_groups(questions, corpus, args.seed, args.unanswerable_share, stats))
    groups += template_groups(corpus, args.seed, args.template_limit, {unit_of(g) for g in groups}, stats)
    groups += option_groups(corpus, args.seed, args.option_limit, {unit_of(g) for g in groups}, stats)
    groups += list(altered_groups(groups, corpus, vocab, args.seed, args.altered_share, stats))
    if args.kinds:
        groups += list(kind_groups(read_jsonl(out / "kinds.jsonl"), corpus, args.seed, stats))
    if args.rewrites:
        groups += list(rewrite_groups(groups, read_jsonl(out / "rewrites.jsonl"), stats))
    for g in groups:
        outputs[("reader", g["split"])].extend(g["rows"])
    for g in checker_groups(premises, corpus, paraphrases, vocab, args.seed, args.window_share, stats):
        outputs[("checker", g["split"])].extend(g["rows"])
    if not args.no_pubmedqa and (PUBMEDQA / "ori_pqal.json.gz").is_file():
        for g in pubmed_groups(pubmedqa_records(), args.seed, stats):
            outputs[(g["task"], g["split"])].extend(g["rows"])
    summary: dict[str, Any] = {"counts": {}, "tokens": {}, "stats": dict(sorted(stats.items()))}
    for (task, s), rows in outputs.items():
        path = out / f"{task}_{s}.jsonl"
        tmp = path.with_suffix(".tmp")
        with tmp.open("w", encoding="utf-8") as f:
            for row in rows:
                f.write(json.dumps({**row, "split": s}, ensure_ascii=False) + "\n")
        os.replace(tmp, path)
        by_label = Counter(r["label"] for r in rows)
        by_kind = Counter(f"{r['kind']}:{r['label']}" for r in rows)
        by_source = Counter(r["source"].split("/", 1)[0] for r in rows)
        summary["counts"][f"{task}_{s}"] = {
            "pairs": len(rows),
            "groups": len({r["group"] for r in rows}),
            "label": dict(sorted(by_label.items())),
            "kind": dict(sorted(by_kind.items())),
            "source": dict(sorted(by_source.items())),
        }
        log.info(f"assemble: {path.name}: {len(rows)} pairs, labels {dict(by_label)}")
    for task in ("reader", "checker"):
        rows = [r for s in SPLITS for r in outputs[(task, s)]]
        sample = rng_for(args.seed, "tokens", task).sample(rows, min(5000, len(rows)))
        summary["tokens"][task] = {
            "a": token_lengths([r["a"] for r in sample]),
            "b": token_lengths([r["b"] for r in sample]),
        }
    summary["documents_per_split"] = dict(Counter(split.values()))
    (out / "stats.json").write_text(json.dumps(summary, indent=1, ensure_ascii=False) + "\n")
    log.info(f"assemble: stats in {out / 'stats.json'}; {dict(stats)}")
    return summary


# ============================================================================ main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--out", type=Path, default=None, help="output folder (default: $CITELINE_CACHE/train/data)"
    )
    ap.add_argument(
        "--stages",
        default="units,generate,assemble",
        help="comma-separated: units, generate, kinds (answer-kind questions), assemble, "
        "rewrites (reworded questions of the assembled groups; assemble again with --rewrites)",
    )
    ap.add_argument("--limit", type=int, default=9000, help="question units to plan (0: all candidates)")
    ap.add_argument("--paraphrase-limit", type=int, default=2500, help="units to paraphrase with the LLM")
    ap.add_argument(
        "--paraphrase-every", type=int, default=5, help="one paraphrase batch after N question batches"
    )
    ap.add_argument(
        "--checker-premises", type=int, default=20000, help="premise units for the checker (0: all)"
    )
    ap.add_argument(
        "--sample", type=int, default=0, help="a seeded sample of N files per manual (smoke tests)"
    )
    ap.add_argument("--batch-size", type=int, default=5, help="units per question prompt")
    ap.add_argument("--model", default="1.5b", help="packaged model: 0.5b or 1.5b (chosen: see README)")
    ap.add_argument(
        "--no-anchored",
        dest="anchored",
        action="store_false",
        help="plain question lists (by default each question comes after the key words of its sentence)",
    )
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument(
        "--time-budget", type=float, default=0, help="seconds of generation in this run (0: no limit)"
    )
    ap.add_argument(
        "--template-limit",
        type=int,
        default=4000,
        help="template questions (default value, definition) at most",
    )
    ap.add_argument("--unanswerable-share", type=float, default=0.12)
    # second-round groups (question_variants.py): off by default, so that the default data is the
    # shipped model's; the second round used --option-limit 600 --altered-share 0.35 (README)
    ap.add_argument("--option-limit", type=int, default=0, help="option questions at most (0: none)")
    ap.add_argument(
        "--altered-share",
        type=float,
        default=0.0,
        help="answerable manual questions that also get an altered (unanswerable) copy",
    )
    ap.add_argument(
        "--topical",
        type=int,
        default=0,
        help="topical negatives per question: units sharing its words but not its answer's (topical.py)",
    )
    # fourth round (answer_kinds.py): off by default, like the other rounds' additions
    ap.add_argument("--kind-limit", type=int, default=1000, help="units the kinds stage plans")
    ap.add_argument(
        "--kinds", action="store_true", help="assemble the kinds stage's questions (kinds.jsonl) too"
    )
    # fifth round (question_rewrites.py): off by default
    ap.add_argument("--rewrite-limit", type=int, default=1200, help="questions the rewrites stage plans")
    ap.add_argument(
        "--rewrites", action="store_true", help="assemble the reworded questions (rewrites.jsonl) too"
    )
    ap.add_argument(
        "--window-share", type=float, default=0.2, help="checker premises that are 2-unit windows"
    )
    ap.add_argument("--no-pubmedqa", action="store_true")
    ap.add_argument("--log-every", type=int, default=10)
    args = ap.parse_args(argv)
    out: Path = args.out or cache_root() / "data"
    out.mkdir(parents=True, exist_ok=True)
    log = Logger(out / "progress.log")
    log.info(f"build_data: {' '.join(sys.argv[1:])} (pid {os.getpid()})")
    manuals = load_manuals()
    if args.sample:
        manuals = [
            Manual(**{**m.__dict__, "max_files": min(m.max_files or args.sample, args.sample)})
            for m in manuals
        ]
    stages = {s.strip() for s in args.stages.split(",") if s.strip()}
    units_path = (
        stage_units(out, manuals, log)
        if "units" in stages or not (out / "units.jsonl").is_file()
        else out / "units.jsonl"
    )
    units = load_units(units_path)
    log.info(f"loaded {len(units)} units and windows; peak RSS {peak_rss_mib():.0f} MiB")
    if "generate" in stages:
        q_batches = take_units(plan_batches(units, args.seed, args.batch_size, "q"), args.limit)
        # paraphrases: the first checker premises, in their batches of one section each
        p_batches = [
            Batch(f"p:{b.unit_ids[0]}", b.manual, b.doc, b.prefix, b.unit_ids)
            for b in take_units(checker_plan(units, args.seed), args.paraphrase_limit)
        ]
        stage_generate(out, units, q_batches, p_batches, args, log)
    if "kinds" in stages:
        stage_kinds(out, units, args.kind_limit, args.model, args.threads, args.seed, args.time_budget, log)
    if "assemble" in stages:
        stage_assemble(out, units, manuals, args, log)
    if "rewrites" in stages:
        stage_rewrites(out, args.rewrite_limit, args.model, args.threads, args.seed, args.time_budget, log)
    log.info(f"build_data: done; peak RSS {peak_rss_mib():.0f} MiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
