"""Query-side expansion, measured: corpus acronyms, LLM multi-query, LLM HyDE (gated).

    .venv/bin/python benchmarks/bench_query_expansion.py acronyms [--split train|test]
    .venv/bin/python benchmarks/bench_query_expansion.py llm [--model 0.5b] [--scifact 50]

``acronyms`` mines "long form (SF)" definitions from the SciFact corpus (Schwartz & Hearst
2003) and expands queries both ways (SF -> long form, long form -> SF), either appended to
the query or as a third ranked list in the fusion; it reports nDCG@10 per stage.
``llm`` compares plain hybrid retrieval with the product's ``query_expansion`` modes (see
``citeline.retrieval.rewrite``) on SciFact test queries (nDCG@10) and on the sample question
set (gold source in the top 5); the model's replies are cached in --cache so reruns are cheap.
Both need ../shared/datasets/scifact; SciFact's index comes from the evaluation cache.
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import citeline
from citeline.eval.beir import load_beir
from citeline.eval.metrics import mean, ndcg_at_k
from citeline.eval.retrieval_run import documents_by_best_chunk, open_eval_index
from citeline.filters import Filter
from citeline.retrieval.fusion import reciprocal_rank_fusion
from citeline.retrieval.hybrid import HybridRetriever
from citeline.retrieval.rewrite import QueryExpander, is_vague

ROOT = Path(__file__).resolve().parents[1]
SCIFACT = ROOT.parent / "shared" / "datasets" / "scifact"
_SHORT = re.compile(r"\(([A-Za-z][\w\-]{1,9})\)")


def long_form(short: str, words: list[str]) -> str | None:
    """Schwartz & Hearst: match the short form's characters right to left in the candidate."""
    text = " ".join(words)
    s, i = len(short) - 1, len(text) - 1
    while s >= 0:
        c = short[s].lower()
        if not c.isalnum():
            s -= 1
            continue
        while i >= 0 and (text[i].lower() != c or (s == 0 and i > 0 and text[i - 1].isalnum())):
            i -= 1
        if i < 0:
            return None
        i -= 1
        s -= 1
    return text[text.rfind(" ", 0, i + 1) + 1 :]


def mine_acronyms(texts: list[str]) -> dict[str, str]:
    pairs: dict[str, Counter[str]] = defaultdict(Counter)
    for text in texts:
        for m in _SHORT.finditer(text):
            short = m.group(1)
            if not any(ch.isupper() for ch in short):
                continue
            before = re.split(r"[.;:!?]\s", text[: m.start()])[-1].split()
            found = long_form(short, before[-min(len(short) + 5, len(short) * 2) :])
            if found and len(found) > len(short) and len(found.split()) >= 2:
                pairs[short][found.lower()] += 1
    return {short: c.most_common(1)[0][0] for short, c in pairs.items()}


def acronyms(args: argparse.Namespace) -> dict[str, Any]:
    data = load_beir(SCIFACT, args.split)
    table = mine_acronyms([d.text for d in data.corpus.values()])
    ev = open_eval_index(data, SCIFACT)
    kb, flt = ev.kb, Filter.admin()
    scores: dict[str, list[float]] = defaultdict(list)
    expanded = Counter[str]()
    for qid, q in data.queries.items():
        lower = q.lower()
        forward = [
            lf for tok in re.findall(r"[A-Za-z][\w\-]{1,9}", q) if (lf := table.get(tok)) and lf not in lower
        ]
        reverse = [sf for sf, lf in table.items() if len(lf) > 8 and lf in lower and sf not in q]
        vector = kb.embedder.embed([q])[0]
        base_lex = [c for c, _ in kb.store.keyword_search(q, flt, 100)]
        dense = [c for c, _ in kb.store.vector_search(vector, flt, 100)]
        for name, extra in (("forward", forward), ("reverse", reverse), ("both", forward + reverse)):
            expanded[name] += bool(extra)
            qx = f"{q} {' '.join(extra)}" if extra else q
            lex = [c for c, _ in kb.store.keyword_search(qx, flt, 100)] if extra else base_lex
            runs = {
                "bm25": lex,
                "appended_rrf": [c for c, _ in reciprocal_rank_fusion([lex, dense])],
                "third_list_rrf": [
                    c for c, _ in reciprocal_rank_fusion([base_lex, dense, *([lex] if extra else [])])
                ],
            }
            for stage, ids in runs.items():
                scores[f"{name}/{stage}"].append(_ndcg(ids, ev.chunk_to_doc, data.qrels[qid]))
        scores["none/bm25"].append(_ndcg(base_lex, ev.chunk_to_doc, data.qrels[qid]))
        scores["none/rrf"].append(
            _ndcg([c for c, _ in reciprocal_rank_fusion([base_lex, dense])], ev.chunk_to_doc, data.qrels[qid])
        )
    return {
        "split": args.split,
        "queries": len(data.queries),
        "acronyms_mined": len(table),
        "queries_expanded": dict(expanded),
        "ndcg@10": {k: round(mean(v), 4) for k, v in sorted(scores.items())},
    }


def _ndcg(chunk_ids: list[str], chunk_to_doc: dict[str, str], judgments: dict[str, int]) -> float:
    docs = documents_by_best_chunk(chunk_ids, chunk_to_doc)
    return ndcg_at_k({d: 1.0 / (i + 1) for i, d in enumerate(docs)}, judgments, 10)


def cached_complete(complete: Callable[..., str], path: Path) -> Callable[..., str]:
    cache: dict[str, str] = json.loads(path.read_text()) if path.is_file() else {}

    def call(messages: list[dict[str, str]], max_tokens: int = 16) -> str:
        key = json.dumps([messages, max_tokens])
        if key not in cache:
            cache[key] = complete(messages, max_tokens=max_tokens)
            path.write_text(json.dumps(cache))
        return cache[key]

    return call


def llm(args: argparse.Namespace) -> dict[str, Any]:
    from citeline.answer.generators.registry import make_generator

    generator = make_generator("llamacpp", model=args.model)
    complete = cached_complete(generator.complete, Path(args.cache))
    modes = ["none", "multi", "hyde", "multi+hyde"]
    out: dict[str, Any] = {"model": args.model}
    seconds: dict[str, list[float]] = defaultdict(list)

    def run(retriever: HybridRetriever, mode: str, q: str) -> list[Any]:
        expander = QueryExpander(complete, mode) if mode != "none" else None
        t = time.perf_counter()
        expansion = expander.expand(q) if expander else None
        seconds[mode].append(time.perf_counter() - t)
        return retriever.retrieve(q, Filter.admin(), k=30, expansion=expansion).hits

    data = load_beir(SCIFACT, "test")
    qids = sorted(data.queries)[: args.scifact]
    ev = open_eval_index(data, SCIFACT)
    retriever = HybridRetriever(ev.kb.store, ev.kb.embedder)
    scores: dict[str, list[float]] = defaultdict(list)
    vague = [q for q in qids if is_vague(data.queries[q])]
    for qid in qids:
        for mode in modes:
            hits = run(retriever, mode, data.queries[qid])
            scores[mode].append(_ndcg([h.chunk.id for h in hits], ev.chunk_to_doc, data.qrels[qid]))
    out["scifact"] = {
        "queries": len(qids),
        "vague": len(vague),
        "ndcg@10": {m: round(mean(v), 4) for m, v in scores.items()},
    }
    questions = [json.loads(line) for line in (ROOT / "tests/data/questions.jsonl").read_text().splitlines()]
    questions = [q for q in questions if q.get("answerable") and q.get("source")]
    hit5: dict[str, list[float]] = defaultdict(list)
    hit1: dict[str, list[float]] = defaultdict(list)
    rr: dict[str, list[float]] = defaultdict(list)
    with tempfile.TemporaryDirectory() as tmp:
        kb = citeline.open(Path(tmp) / "idx", create=True, trace=False)
        kb.add([ROOT / "samples"])
        retriever = HybridRetriever(kb.store, kb.embedder)
        for q in questions:
            name = q["source"].split("/")[-1]
            for mode in modes:
                hits = run(retriever, mode, q["question"])
                ranks = [i for i, h in enumerate(hits[:10], 1) if h.source.endswith(name)]
                hit5[mode].append(float(bool(ranks) and ranks[0] <= 5))
                hit1[mode].append(float(bool(ranks) and ranks[0] == 1))
                rr[mode].append(1.0 / ranks[0] if ranks else 0.0)
        out["samples"] = {
            "questions": len(questions),
            "vague": sum(is_vague(q["question"]) for q in questions),
            "gold_source_hit@1": {m: round(mean(v), 4) for m, v in hit1.items()},
            "gold_source_hit@5": {m: round(mean(v), 4) for m, v in hit5.items()},
            "gold_source_mrr@10": {m: round(mean(v), 4) for m, v in rr.items()},
        }
        kb.close()
    out["expansion_seconds_p50"] = {m: round(sorted(v)[len(v) // 2], 2) for m, v in seconds.items() if v}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="what", required=True)
    a = sub.add_parser("acronyms")
    a.add_argument("--split", default="train")
    b = sub.add_parser("llm")
    b.add_argument("--model", default="0.5b")
    b.add_argument("--scifact", type=int, default=50, help="SciFact test queries (sorted ids, first N)")
    b.add_argument("--cache", default=str(Path(tempfile.gettempdir()) / "citeline-expansion-cache.json"))
    ap.add_argument("--out", help="write the results as JSON here")
    args = ap.parse_args()
    result = acronyms(args) if args.what == "acronyms" else llm(args)
    print(json.dumps(result, indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
