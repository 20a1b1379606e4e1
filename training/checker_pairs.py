"""Stage 3 of the training-data builder (build_data.py): the claim checker's premises and groups.

The premise units (``checker_plan`` batches them for the paraphrase prompts), and for each premise
its entailed claims (itself, a sub-clause, a short restatement, the LLM's paraphrase) against as
many corruptions of claims.py and same-section units (``checker_groups``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

from training import claims as C
from training import corruptions as K
from training.questions import Batch, plan_batches
from training.reader_pairs import Corpus
from training.units import Unit, model_input, prefix_of, rng_for


def checker_plan(units: Sequence[Unit], seed: int) -> list[Batch]:
    """Premise units for the checker in batches of up to 3 units of one section (the paraphrase
    prompts), spread over documents and manuals like the question batches."""
    return plan_batches(
        units, seed, batch_size=3, purpose="checker", per_doc=40, per_section=3, min_score=1.5
    )


def checker_premises(units: Sequence[Unit], seed: int, limit: int) -> list[Unit]:
    """Premise units for the checker: informative sentences, rows and items (and some windows),
    spread over documents and manuals like the question batches."""
    batches = plan_batches(
        units, seed, batch_size=3, purpose="checker", per_doc=40, per_section=3, min_score=1.5
    )
    by_id = {u.id: u for u in units}
    out: list[Unit] = []
    for b in batches:
        out += [by_id[i] for i in b.unit_ids]
        if limit and len(out) >= limit:
            break
    return out[:limit] if limit else out


def checker_groups(
    premises: Sequence[Unit],
    corpus: Corpus,
    paraphrases: dict[str, str],
    vocab: dict[str, dict[str, list[str]]],
    seed: int,
    window_share: float,
    stats: Counter[str],
) -> Iterator[dict[str, Any]]:
    neg_counts: Counter[str] = Counter()
    for p in premises:
        rng = rng_for(seed, "checker", p.id)
        split = corpus.split[p.doc]
        premise_unit = p
        positives: list[tuple[str, str]] = [("self", p.text)]
        windows = corpus.windows_of.get(p.id, [])
        if windows and rng.random() < window_share:
            premise_unit = rng.choice(windows)
            positives = [("window_part", p.text)]
        premise = premise_unit.text
        sub = C.sub_clause(p.text)
        if sub:
            positives.append(("subclause", sub))
        short = C.short_restatement(p.text)
        if short and all(C.norm(short) != C.norm(t) for _, t in positives):
            positives.append(("short", short))
        para = paraphrases.get(p.id)
        if para is not None:
            if C.keeps_facts(p.text, para):
                positives.append(("paraphrase", para))
                stats["paraphrase:kept"] += 1
            else:
                stats["paraphrase:dropped"] += 1
        negatives: list[tuple[str, str]] = []
        kinds = [*K.CORRUPTION_KINDS, "same_section"]
        rng.shuffle(kinds)
        kinds.sort(key=lambda k: neg_counts[k])  # the rarest kinds first, when they apply
        vocabulary = vocab.get(p.manual, {})
        total = sum(neg_counts.values())
        for kind in kinds:
            if len(negatives) >= len(positives):
                break
            if neg_counts[kind] > 0.22 * total + 10:
                continue  # an always-applicable kind (an added name, a sibling) must not dominate
            if kind == "same_section":
                pool = [
                    u
                    for u in corpus.by_section.get((p.doc, p.section), [])
                    if u.id not in premise_unit.members
                    and u.id != p.id
                    and C.jaccard(u.text, premise) < 0.4
                    and C.norm(u.text) not in C.norm(premise)
                ]
                if pool:
                    negatives.append((kind, rng.choice(pool).text))
                continue
            sources = positives[:]
            rng.shuffle(sources)
            for _, claim in sources:
                out = K.corrupt(kind, claim, premise, rng, vocabulary)
                if out is not None:
                    negatives.append((kind, out))
                    break
        if not negatives:
            stats["checker:premise_without_negative"] += 1
            continue
        # balanced per premise: as many positives as negatives; the unit itself and the LLM
        # paraphrase (the costly one) are kept first, the rule-based restatements fill up
        first = [p for p in positives if p[0] in ("self", "window_part", "paraphrase")]
        rest = [p for p in positives if p not in first]
        keep_pos = (first + rng.sample(rest, len(rest)))[: len(negatives)]
        for kind, _ in negatives:
            neg_counts[kind] += 1
        rows = [(text, 1, kind) for kind, text in keep_pos] + [(text, 0, kind) for kind, text in negatives]
        prefix = prefix_of(premise_unit.title, premise_unit.trail)
        b = model_input(prefix, premise)
        seen: set[str] = set()
        out_rows = []
        for a, label, kind in rows:
            a = " ".join(a.split())
            if a in seen:
                continue
            seen.add(a)
            out_rows.append(
                {
                    "a": a,
                    "b": b,
                    "label": label,
                    "group": f"c:{premise_unit.id}",
                    "kind": kind,
                    "source": p.doc,
                    "b_source": p.doc,
                    "unit_kind": premise_unit.kind,
                }
            )
        yield {"split": split, "task": "checker", "rows": out_rows}
