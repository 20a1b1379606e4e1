"""Stage 3 of the training-data builder (build_data.py): the reader's pairs and groups.

``Corpus`` indexes the units for drawing negatives within one split; ``reader_pairs`` gives the
positives and hard negatives of one question; ``reader_groups`` turns the LLM's questions (after
the filters of questions.py) into groups of pairs, plus some unanswerable groups.
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from training import claims as C
from training.questions import _GENERIC, misaligned, misplaced_anchor, question_problem, repeated_texts
from training.topical import TopicalIndex
from training.units import Unit, prefix_of, rng_for


class Corpus:
    """Indexes over the units for drawing negatives, all restricted to one split when asked."""

    def __init__(self, units: Sequence[Unit], split: dict[str, str], topical: int = 0) -> None:
        #: topical negatives per question (third round; training/topical.py); 0: none
        self.topical = topical
        self.topical_index = TopicalIndex(units, split) if topical else None
        self.units = [u for u in units if u.kind != "window"]
        self.windows = [u for u in units if u.kind == "window"]
        self.by_id = {u.id: u for u in units}
        self.split = split
        self.by_section: dict[tuple[str, str], list[Unit]] = defaultdict(list)
        self.by_doc: dict[str, list[Unit]] = defaultdict(list)
        for u in self.units:
            if len(u.text.split()) >= 5:
                self.by_section[(u.doc, u.section)].append(u)
                self.by_doc[u.doc].append(u)
        self.windows_of: dict[str, list[Unit]] = defaultdict(list)
        self.windows_by_section: dict[tuple[str, str], list[Unit]] = defaultdict(list)
        for w in self.windows:
            for m in w.members:
                self.windows_of[m].append(w)
            self.windows_by_section[(w.doc, w.section)].append(w)
        self.docs_by_split_manual: dict[tuple[str, str], list[str]] = defaultdict(list)
        for doc in sorted(self.by_doc):
            manual = self.by_doc[doc][0].manual
            self.docs_by_split_manual[(split[doc], manual)].append(doc)
        self.manuals = sorted({m for _, m in self.docs_by_split_manual})
        self.repeated = repeated_texts(self.units)

    def random_other_manual(self, u: Unit, rng: random.Random) -> Unit | None:
        split = self.split[u.doc]
        manuals = [m for m in self.manuals if m != u.manual and self.docs_by_split_manual.get((split, m))]
        if not manuals:
            return None
        docs = self.docs_by_split_manual[(split, rng.choice(manuals))]
        return rng.choice(self.by_doc[rng.choice(docs)])


def _distinct(candidate: Unit, positives: Sequence[Unit]) -> bool:
    """A negative must not be (or contain, or nearly repeat) a positive."""
    cn = C.norm(candidate.text)
    for p in positives:
        pn = C.norm(p.text)
        if cn == pn or pn in cn or cn in pn or C.jaccard(candidate.text, p.text) >= 0.5:
            return False
    return True


def _key_terms(question: str, unit: Unit) -> set[str]:
    """Identifiers and rare words that the question shares with its answer: a unit of another
    section naming them might answer too, so it is no safe negative."""
    ids = {t.lower() for _, t in C.identifiers(question)}
    shared = C.content_words(question) & C.content_words(unit.text)
    return {
        w
        for w in ids | shared
        if w not in _GENERIC and len(w) > 2 and (w in ids or not w.isalpha() or len(w) >= 8)
    }


def _mentions_any(unit: Unit, terms: set[str]) -> bool:
    if not terms:
        return False
    words = C.content_words(unit.text) | {t.lower() for _, t in C.identifiers(unit.text)}
    return bool(words & terms)


def reader_pairs(
    q: str,
    unit: Unit,
    corpus: Corpus,
    rng: random.Random,
    first_siblings: Sequence[Unit] = (),
    sibling_ok: Callable[[Unit], bool] = lambda u: True,
) -> tuple[list[tuple[Unit, int, str]], list[Unit]]:
    """The pairs of one question: its unit and the windows containing it (positives); siblings of
    its section, a window of its section without it, units of other sections of its document and
    of other manuals of its split (negatives). Also returns the leftover units of other sections
    (for an unanswerable group)."""
    uid = unit.id
    pairs: list[tuple[Unit, int, str]] = [(unit, 1, "pos")]
    windows = corpus.windows_of.get(uid, [])
    pairs += [(w, 1, "window_pos") for w in windows]
    positives = [unit, *windows]
    section = corpus.by_section.get((unit.doc, unit.section), [])
    others = [u for u in first_siblings if u.id != uid]
    other_ids = {u.id for u in others}
    rest = [u for u in section if u.id != uid and u.id not in other_ids]
    rng.shuffle(others)
    rng.shuffle(rest)
    siblings = [u for u in others + rest if _distinct(u, positives) and sibling_ok(u)][:3]
    pairs += [(u, 0, "same_section") for u in siblings]
    wneg = [
        w
        for w in corpus.windows_by_section.get((unit.doc, unit.section), [])
        if uid not in w.members
        and _distinct(w, positives)
        and all(sibling_ok(corpus.by_id[m]) for m in w.members)
    ]
    if wneg:
        pairs.append((rng.choice(wneg), 0, "same_section_window"))
    terms = _key_terms(q, unit)
    same_doc = [u for u in corpus.by_doc.get(unit.doc, []) if u.section != unit.section]
    rng.shuffle(same_doc)
    same_doc = [u for u in same_doc[:40] if _distinct(u, positives) and not _mentions_any(u, terms)]
    pairs += [(u, 0, "same_doc") for u in same_doc[:2]]
    if corpus.topical_index is not None:
        topical = corpus.topical_index.negatives(q, unit, positives, rng, corpus.topical + 3)
        pairs += [(u, 0, "topical") for u in topical if sibling_ok(u)][: corpus.topical]
    for _ in range(2):
        other = corpus.random_other_manual(unit, rng)
        if other is not None and not _mentions_any(other, terms):
            pairs.append((other, 0, "other_manual"))
    return pairs, same_doc[2:]


def _unanswerable(
    q: str, unit: Unit, leftovers: list[Unit], corpus: Corpus, rng: random.Random
) -> list[tuple[Unit, int, str]]:
    """Units of other sections (and other documents of the manual) only: all negatives."""
    pool = leftovers[:5]
    terms = _key_terms(q, unit)
    docs = [
        d for d in corpus.docs_by_split_manual.get((corpus.split[unit.doc], unit.manual), []) if d != unit.doc
    ]
    for _ in range(min(10, 2 * len(docs))):
        if len(pool) >= 5:
            break
        cand = rng.choice(corpus.by_doc[rng.choice(docs)])
        if _distinct(cand, [unit]) and not _mentions_any(cand, terms):
            pool.append(cand)
    return [(u, 0, "unanswerable") for u in pool]


def reader_groups(
    questions: Iterable[dict[str, Any]],
    corpus: Corpus,
    seed: int,
    unanswerable_share: float,
    stats: Counter[str],
) -> Iterator[dict[str, Any]]:
    """Groups of LLM-written questions (one per kept question, plus some unanswerable groups)."""
    from training import llm

    examples = llm.example_questions()
    for record in questions:
        batch_units = [corpus.by_id[i] for i in record["units"] if i in corpus.by_id]
        if len(batch_units) != len(record["units"]):
            continue
        texts = [u.text for u in batch_units]
        slipped = misaligned(record["questions"], texts)
        abouts = record.get("about") or [""] * len(texts)
        off_anchor = [bool(a) and misplaced_anchor(a, texts, i) for i, a in enumerate(abouts)]
        for uid, q, slip, off in zip(record["units"], record["questions"], slipped, off_anchor, strict=False):
            unit = corpus.by_id[uid]
            context = prefix_of(unit.title, unit.trail)
            problem = question_problem(q, unit.text, examples, context)
            problem = problem or ("misaligned" if slip or off else None)
            problem = problem or ("boilerplate" if C.norm(unit.text) in corpus.repeated else None)
            stats[f"question:{problem or 'kept'}"] += 1
            if problem:
                continue
            q = " ".join(q.split())
            rng = rng_for(seed, "reader", uid)
            split = corpus.split[unit.doc]
            pairs, leftovers = reader_pairs(q, unit, corpus, rng, batch_units)
            if not any(label == 0 for _, label, _ in pairs):
                stats["reader:group_without_negative"] += 1
                continue
            yield _group(f"r:{uid}", q, pairs, split, unit, "reader", "llm")
            if rng.random() < unanswerable_share:
                neg = _unanswerable(q, unit, leftovers, corpus, rng)
                if neg:
                    yield _group(f"u:{uid}", q, neg, split, unit, "reader", "llm")


def unit_of(group: dict[str, Any]) -> str:
    """The unit a group's question was asked about ("r:<unit id>", "t:...", "x:..." -> unit id)."""
    return str(group["rows"][0]["group"].split(":", 1)[1])


def _group(
    group: str,
    a: str,
    pairs: Sequence[tuple[Unit, int, str]],
    split: str,
    src: Unit,
    task: str,
    qsource: str = "",
) -> dict[str, Any]:
    seen: set[str] = set()
    rows = []
    for u, label, kind in pairs:
        b = u.b
        if b in seen:
            continue
        seen.add(b)
        rows.append(
            {
                "a": a,
                "b": b,
                "label": label,
                "group": group,
                "kind": kind,
                "source": src.doc,
                "b_source": u.doc,
                "unit_kind": u.kind,
                "qsource": qsource,
            }
        )
    return {"split": split, "task": task, "rows": rows}
