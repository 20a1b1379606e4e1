"""Split the OpenSSH golden set into dev and test, stratified, with a fixed seed.

    python evalsets/openssh/split.py            # rewrite meta.split in questions.jsonl, write dev.jsonl and test.jsonl
    python evalsets/openssh/split.py --check    # exit 1 if the committed files differ from what this script writes

Strata are (answerable, meta.kind, meta.attribute): every answerable kind-and-attribute pair and every
unanswerable kind is split on its own, so both splits hold some of each. (The Postfix split, stratified
by the attribute as well, so that both splits ask alike about defaults, limits, versions, procedures.)
Within a stratum the ids are sorted, then shuffled with one
``random.Random(SEED)`` that runs over the strata in sorted order; the first half goes to dev. When a
stratum has an odd size, the extra question goes to whichever split is smaller so far, so the two
splits stay within one question of each other.

Standard library only: it runs without citeline installed.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

SEED = 20261203
HERE = Path(__file__).resolve().parent
QUESTIONS = HERE / "questions.jsonl"
SPLITS = ("dev", "test")


def stratum(row: dict[str, Any]) -> tuple[str, str, str]:
    meta = row["meta"]
    return (
        "answerable" if row["answerable"] else "unanswerable",
        str(meta["kind"]),
        str(meta.get("attribute", "")),
    )


def assign_splits(rows: list[dict[str, Any]], seed: int = SEED) -> dict[str, str]:
    """id -> "dev" or "test"."""
    groups: dict[tuple[str, str], list[str]] = defaultdict(list)
    for row in rows:
        groups[stratum(row)].append(str(row["id"]))
    rng = random.Random(seed)
    out: dict[str, str] = {}
    totals = {"dev": 0, "test": 0}
    for key in sorted(groups):
        ids = sorted(groups[key])
        rng.shuffle(ids)
        n_dev = len(ids) // 2
        if len(ids) % 2 and totals["dev"] <= totals["test"]:
            n_dev += 1
        for i, qid in enumerate(ids):
            split = "dev" if i < n_dev else "test"
            out[qid] = split
            totals[split] += 1
    return out


def read_rows(path: Path = QUESTIONS) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def dumps(rows: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def build(rows: list[dict[str, Any]], seed: int = SEED) -> dict[str, str]:
    """The text of questions.jsonl (with meta.split set), dev.jsonl and test.jsonl."""
    splits = assign_splits(rows, seed)
    labelled = [{**r, "meta": {**r["meta"], "split": splits[str(r["id"])]}} for r in rows]
    files = {"questions.jsonl": dumps(labelled)}
    for name in SPLITS:
        files[f"{name}.jsonl"] = dumps([r for r in labelled if r["meta"]["split"] == name])
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only compare; exit 1 when a file differs")
    args = parser.parse_args(argv)
    files = build(read_rows())
    stale = [
        name
        for name, text in files.items()
        if not (HERE / name).is_file() or (HERE / name).read_text(encoding="utf-8") != text
    ]
    if args.check:
        for name in stale:
            print(
                f"{name} differs from what split.py writes; run python {Path(__file__).name}", file=sys.stderr
            )
        return 1 if stale else 0
    for name, text in files.items():
        (HERE / name).write_text(text, encoding="utf-8")
    counts = {s: files[f"{s}.jsonl"].count("\n") for s in SPLITS}
    print(
        f"seed {SEED}: dev {counts['dev']}, test {counts['test']} (rewrote {', '.join(stale) or 'nothing'})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
