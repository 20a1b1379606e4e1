"""A shadow comparison before an embedder swap (``citeline reindex --embedder NAME --compare Q.jsonl``).

The question set is asked twice on a scratch copy of the index, never on the index itself: the
documents, chunks and the active embedder's vectors are copied (``citeline.index.migrate``, without
traces) into a temporary embedded index, the new embedder's vectors (already built side by side in
the live index) are added to it, the questions are asked, the copy is swapped to the new embedder,
and they are asked again. Both sides see the same chunks, keyword statistics and settings; only the
embedder differs. The live index is swapped only when ``decide`` accepts the two reports, so a
refusal leaves it exactly as it was (its old vectors in use, the new ones kept side by side).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from citeline.errors import CitelineError, SwapRefusedError
from citeline.eval.answers.baseline import higher_is_better, regressions
from citeline.jsonable import Jsonable, json_derived, json_spec, omit_always

if TYPE_CHECKING:
    from citeline.embedding.base import Embedder
    from citeline.ingest.pipeline import Progress
    from citeline.kb import KnowledgeBase

#: a metric may be this much worse (absolute, on its 0-1 scale) before the swap is refused
DEFAULT_MAX_DROP = 0.02
#: vectors copied into the scratch index per write (bounded memory on a large index)
COPY_BATCH = 4096

NO_QUESTIONS = "The question set holds no question; nothing to compare the embedders on."
#: (side, questions asked, questions in the set): side is "old" or "new"
QuestionProgress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class Drop:
    """A metric that got worse with the new embedder by more than the allowed drop."""

    metric: str
    old: float
    new: float
    drop: float  # how much worse, in the metric's own direction (lower-is-better metrics too)


@dataclass(frozen=True)
class SwapDecision(Jsonable):
    max_drop: float
    compared: int  # metrics with a value on both sides
    drops: tuple[Drop, ...]  # worst first; empty when the swap may go ahead

    @property
    @json_derived(after=None)
    def accepted(self) -> bool:
        return not self.drops

    def worse(self, most: int = 3) -> str:
        """The drops in words, worst first: '2 metrics got worse by more than 0.02: refusal_recall
        1.000 -> 0.857 (worse by 0.143); ...' (the first ``most``, then how many more)."""
        n = len(self.drops)
        said = "; ".join(
            f"{d.metric} {d.old:.3f} -> {d.new:.3f} (worse by {d.drop:.3f})" for d in self.drops[:most]
        )
        more = f" and {n - most} more" if n > most else ""
        return f"{n} metric{'s' if n > 1 else ''} got worse by more than {self.max_drop:g}: {said}{more}"

    def message(self, old_embedder: str, new_embedder: str, forced: bool = False) -> str:
        if self.accepted:
            return (
                f"No metric of {self.compared} got worse by more than {self.max_drop:g} with "
                f"'{new_embedder}' (against '{old_embedder}')."
            )
        if forced:
            return f"--force: swapped to '{new_embedder}' although {self.worse()}."
        return (
            f"Swap to '{new_embedder}' refused (--max-drop): {self.worse()}. The index keeps "
            f"'{old_embedder}' (its vectors unchanged; the new ones stay side by side, so --force "
            "swaps without embedding again)."
        )


def decide(old: Mapping[str, Any], new: Mapping[str, Any], max_drop: float) -> SwapDecision:
    """Accept the new embedder's report unless a tracked metric is worse than the old one's by
    more than ``max_drop`` (the same rule as ``eval compare --max-drop``)."""
    if max_drop < 0:
        raise CitelineError(f"--max-drop must be 0 or more, not {max_drop:g}.")
    compared = _comparable(old, new)
    worse = regressions(new, old, max_drop)
    drops = sorted(
        (Drop(w["metric"], w["baseline"], w["current"], w["drop"]) for w in worse), key=lambda d: -d.drop
    )
    return SwapDecision(max_drop, compared, tuple(drops))


def _comparable(old: Mapping[str, Any], new: Mapping[str, Any]) -> int:
    """Tracked metrics with a value on both sides (None: no question to measure it on)."""
    mo, mn = old.get("metrics", {}), new.get("metrics", {})
    return sum(
        1
        for name, value in mn.items()
        if higher_is_better(name) is not None and value is not None and mo.get(name) is not None
    )


@dataclass(frozen=True)
class ShadowComparison(Jsonable):
    """Both answers reports (``citeline-answers/1``, as ``eval answers`` writes them) and the verdict;
    its JSON holds the embedders' names and the verdict."""

    old_embedder: str
    new_embedder: str
    old: dict[str, Any] = field(metadata=json_spec(omit=omit_always))
    new: dict[str, Any] = field(metadata=json_spec(omit=omit_always))
    decision: SwapDecision


@dataclass(frozen=True)
class Rollout:
    """How ``compared_reindex`` compares and decides."""

    max_drop: float = DEFAULT_MAX_DROP
    force: bool = False  # swap even when a metric dropped
    docs_root: str | Path | None = None  # what the question file's paths are relative to
    k: int = 5
    dataset: str | None = None
    on_question: QuestionProgress | None = None


def compared_reindex(
    kb: KnowledgeBase,
    embedder_name: str,
    rows: Sequence[Mapping[str, Any]],
    rollout: Rollout = Rollout(),
    progress: Progress | None = None,
) -> dict[str, Any]:
    """``kb.reindex`` that first answers ``rows`` (golden rows) with both embedders on a scratch
    copy and raises SwapRefusedError, nothing swapped, when a tracked metric is worse by more
    than ``rollout.max_drop`` (unless ``rollout.force``). The result holds the ``comparison``."""
    from citeline.embedding import make_embedder

    if not rows:
        raise CitelineError(NO_QUESTIONS)  # before embedding anything
    if rollout.max_drop < 0:
        raise CitelineError(f"--max-drop must be 0 or more, not {rollout.max_drop:g}.")
    beside = kb.reindex(embedder_name, progress, swap=False)
    comparison = shadow_compare(kb, make_embedder(embedder_name), rows, rollout)
    if not comparison.decision.accepted and not rollout.force:
        message = comparison.decision.message(comparison.old_embedder, comparison.new_embedder)
        raise SwapRefusedError(message, comparison)
    result = kb.reindex(embedder_name, progress)  # embeds what was added meanwhile, then swaps
    embedded = cast(int, beside["embedded"]) + cast(int, result["embedded"])
    return {**result, "embedded": embedded, "comparison": comparison}


def shadow_compare(
    kb: KnowledgeBase,
    new: Embedder,
    rows: Sequence[Mapping[str, Any]],
    rollout: Rollout = Rollout(),
) -> ShadowComparison:
    """Ask ``rows`` (golden rows) with the index's embedder and with ``new`` on a scratch copy.

    ``new``'s vectors must already be in ``kb``'s store side by side (``reembed(..., swap=False)``).
    """
    from citeline.eval.answers.runner import evaluate_answers
    from citeline.index.migrate import migrate
    from citeline.kb import KnowledgeBase
    from citeline.wiring import open_store

    if not rows:
        raise CitelineError(NO_QUESTIONS)
    old = kb.embedder
    scratch = Path(tempfile.mkdtemp(prefix="citeline-shadow-"))
    try:
        with closing(open_store(str(scratch / "index"))) as copy:
            migrate(kb.store, copy, traces=False)
            _copy_vectors(kb, copy, new.name)

            def ask(side: str, shadow: KnowledgeBase) -> dict[str, Any]:
                said = rollout.on_question
                tick = None if said is None else (lambda done, total: said(side, done, total))
                return evaluate_answers(
                    shadow,
                    rows,
                    rollout.k,
                    docs_root=rollout.docs_root,
                    dataset=rollout.dataset,
                    progress=tick,
                )

            before = ask("old", KnowledgeBase(kb.settings, copy, embedder=old))
            copy.swap_embedder(new.name, new.version, new.dim)
            after = ask("new", KnowledgeBase(kb.settings, copy, embedder=new))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return ShadowComparison(old.name, new.name, before, after, decide(before, after, rollout.max_drop))


def _copy_vectors(kb: KnowledgeBase, copy: Any, embedder: str) -> None:
    """The new embedder's vectors from the live index into the scratch copy, a batch at a time."""
    hashes = [h for h, _ in copy.all_text_hashes()]
    for lo in range(0, len(hashes), COPY_BATCH):
        part = hashes[lo : lo + COPY_BATCH]
        found = kb.store.cached_vectors(part, embedder=embedder)
        if len(found) < len(part):
            raise CitelineError(
                f"{len(part) - len(found)} chunks lack '{embedder}' vectors in {kb.store.location} "
                "(a document was added meanwhile?); run the command again."
            )
        copy.add_vectors(embedder, found)
