"""The retrieval evaluation on a tiny BEIR folder written here (hashing embedder: fast)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from citeline.eval.beir import BeirDataset, BeirDoc
from citeline.eval.datasets import limit_queries, load_dataset
from citeline.eval.retrieval_run import (
    STAGE_ORDER,
    cache_key,
    documents_by_best_chunk,
    evaluate_retrieval,
)
from datasets import shared_dataset

CORPUS = {
    "d1": ("Solar panels", "Photovoltaic cells convert sunlight into electricity with silicon wafers."),
    "d2": ("Wind power", "Wind turbines turn rotor blades and a gearbox drives the generator."),
    "d3": ("Tides", "Tidal barrages use the rise and fall of the sea to spin turbines."),
    "d4": ("Coal", "Coal plants burn fuel to boil water; steam spins a turbine. " * 30),  # several chunks
    "d5": ("Batteries", "Lithium-ion batteries store electricity for the grid at night."),
    "d6": ("Hydro", "Dams hold water in reservoirs and release it through turbines."),
}
QUERIES = {
    "q1": ("How do silicon cells turn sunlight into electricity?", {"d1": 1}),
    "q2": ("What drives the generator in a wind turbine gearbox?", {"d2": 1}),
    "q3": ("Which plants boil water with burning coal fuel?", {"d4": 1}),
    "q4": ("How is electricity stored at night?", {"d5": 2, "d1": 0}),
}


@pytest.fixture
def beir(tmp_path: Path) -> Path:
    root = tmp_path / "tiny"
    (root / "qrels").mkdir(parents=True)
    with (root / "corpus.jsonl").open("w") as f:
        for doc_id, (title, text) in CORPUS.items():
            f.write(json.dumps({"_id": doc_id, "title": title, "text": text}) + "\n")
    with (root / "queries.jsonl").open("w") as f:
        for qid, (text, _) in QUERIES.items():
            f.write(json.dumps({"_id": qid, "text": text}) + "\n")
    rows = ["query-id\tcorpus-id\tscore"] + [
        f"{qid}\t{doc}\t{grade}" for qid, (_, rel) in QUERIES.items() for doc, grade in rel.items()
    ]
    (root / "qrels" / "test.tsv").write_text("\n".join(rows) + "\n")
    return root


def test_documents_score_by_their_best_chunk() -> None:
    chunk_to_doc = {"a1": "A", "a2": "A", "b1": "B", "c1": "C"}
    assert documents_by_best_chunk(["b1", "a2", "x", "a1", "c1", "b1"], chunk_to_doc) == ["B", "A", "C"]


def test_every_stage_is_scored_and_the_index_is_cached(beir: Path, tmp_path: Path) -> None:
    dataset = load_dataset(beir)
    cache = tmp_path / "cache"
    first = evaluate_retrieval(dataset, beir, embedder="hashing", cache_root=cache, reranker="learned")
    assert list(first.stages) == [s for s in STAGE_ORDER if s in first.stages]
    assert set(first.stages) == {"bm25", "dense", "fused", "fused_convex", "reranked"}
    assert first.index["built"] and first.index["chunks_embedded"] > len(CORPUS)  # d4 gives several
    assert first.chunks > len(CORPUS)
    for stage in first.stages.values():
        assert set(stage.metrics) == {"ndcg@10", "recall@10", "recall@100", "mrr@10", "hit_rate@5"}
        assert all(0.0 <= v <= 1.0 for v in stage.metrics.values())
        assert 0 <= stage.latency_ms["p50"] <= stage.latency_ms["p95"]
    # The keyword side finds all of these (each query shares rare words with its document).
    assert first.stages["bm25"].metrics["hit_rate@5"] == 1.0
    assert first.stages["fused"].metrics["recall@100"] == 1.0

    second = evaluate_retrieval(
        dataset, beir, embedder="hashing", cache_root=cache, fusion="convex", alpha=0.3, reranker="none"
    )
    assert not second.index["built"] and second.index["chunks_embedded"] == 0
    assert second.index["folder"] == first.index["folder"]
    assert set(second.stages) == {"bm25", "dense", "fused", "fused_rrf"}  # both fusions, no reranker
    assert second.stages["fused_rrf"].metrics == first.stages["fused"].metrics
    assert second.stages["bm25"].metrics == first.stages["bm25"].metrics


def test_cache_key_follows_corpus_and_embedder(beir: Path) -> None:
    corpus = load_dataset(beir).corpus
    key = cache_key(beir, corpus, "hashing", "200:40")
    assert key == cache_key(beir, dict(corpus), "hashing", "200:40")
    assert key != cache_key(beir, corpus, "minilm-int8", "200:40")
    assert key != cache_key(beir, corpus, "hashing", "100:20")
    smaller = {k: v for k, v in corpus.items() if k != "d6"}
    assert key != cache_key(beir, smaller, "hashing", "200:40")
    changed = {**corpus, "d6": BeirDoc("Hydro", "changed")}
    assert key != cache_key(beir, changed, "hashing", "200:40")


def test_limit_queries_keeps_the_corpus() -> None:
    ds = BeirDataset({"d": BeirDoc("", "x")}, {"a": "1", "b": "2"}, {"a": {"d": 1}, "b": {"d": 1}})
    assert list(limit_queries(ds, 1).queries) == ["a"] and limit_queries(ds, 1).corpus == ds.corpus
    assert limit_queries(ds, None) is ds


def test_cli_table_and_json(beir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from citeline.cli.main import main

    monkeypatch.setenv("CITELINE_EVAL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("COLUMNS", "200")  # rich would wrap the stage labels at 80 columns
    runner = CliRunner()
    args = ["eval", "retrieval", "--beir", str(beir), "--embedder", "hashing", "--limit-queries", "3"]
    result = runner.invoke(main, [*args, "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    # reranking off in settings: late-interaction, which needs token vectors; hashing has none
    assert data["queries"] == 3 and data["reranker"] == "learned" and data["fusion"] == "rrf"
    assert set(data["stages"]) == {"bm25", "dense", "fused", "fused_convex", "reranked"}
    # the settings' reranker, when there is one, is the one evaluated
    monkeypatch.setenv("CITELINE_RERANKER", "relevance")
    chosen = runner.invoke(main, [*args, "--json"])
    assert chosen.exit_code == 0, chosen.output
    assert json.loads(chosen.output)["reranker"] == "relevance"
    monkeypatch.delenv("CITELINE_RERANKER")
    table = runner.invoke(main, [*args, "--fusion", "convex", "--alpha", "0.7", "--reranker", "none"])
    assert table.exit_code == 0, table.output
    assert "nDCG@10" in table.output and "fused (convex, alpha=0.7)" in table.output
    assert "fused (rrf)" in table.output and "p95 ms" in table.output
    missing = runner.invoke(main, ["eval", "retrieval", "--beir", str(beir), "--split", "dev"])
    assert missing.exit_code != 0 and "no split 'dev'" in missing.output


@pytest.mark.dataset
def test_second_sets_convert() -> None:
    pubmed = load_dataset(shared_dataset("pubmedqa"), "test")
    assert len(pubmed.corpus) == 1000 and len(pubmed.queries) == 500
    assert all(rel == {qid: 1} for qid, rel in pubmed.qrels.items())
    train = load_dataset(shared_dataset("pubmedqa"), "train")
    # what is fitted on train never reads a test abstract
    assert len(train.queries) == 500 and set(train.corpus) == set(train.queries)
    assert not set(train.corpus) & set(pubmed.queries)
    climate = load_dataset(shared_dataset("climate-fever"))
    assert len(climate.corpus) == 5240 and all(climate.qrels.values())
    assert set(climate.queries) == set(climate.qrels)


def test_an_index_of_other_documents_is_not_mixed_in(beir: Path, tmp_path: Path) -> None:
    from citeline.errors import CitelineError
    from citeline.kb import open_kb

    mine = tmp_path / "mine"
    (tmp_path / "notes.md").write_text("# Notes\n\nMy own notes.\n")
    with open_kb(mine, embedder="hashing") as kb:
        kb.add([tmp_path / "notes.md"])
    with pytest.raises(CitelineError, match="not from an evaluation dataset"):
        evaluate_retrieval(
            load_dataset(beir), beir, embedder="hashing", index=mine, cache_root=tmp_path / "c"
        )
    shared = tmp_path / "eval-index"
    evaluate_retrieval(load_dataset(beir), beir, embedder="hashing", index=shared, cache_root=tmp_path / "c")
    other = limit_queries(load_dataset(beir), 2)
    smaller = BeirDataset({k: v for k, v in other.corpus.items() if k != "d6"}, other.queries, other.qrels)
    with pytest.raises(CitelineError, match="another dataset"):
        evaluate_retrieval(smaller, beir, embedder="hashing", index=shared, cache_root=tmp_path / "c")


def test_keyword_only_retrievals_are_reported_as_degraded(
    beir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from citeline.cli.main import main
    from citeline.index.sqlite.store import SqliteStore

    def unreachable(*args: object, **kwargs: object) -> list[tuple[str, float]]:
        raise ConnectionError("vector engine unreachable")

    # the dense side fails on every query (the breaker then opens): each retrieval is keyword-only
    monkeypatch.setattr(SqliteStore, "vector_search", unreachable)
    dataset = load_dataset(beir)
    report = evaluate_retrieval(dataset, beir, embedder="hashing", cache_root=tmp_path / "c", reranker="none")
    assert report.degraded_queries == len(QUERIES)
    assert sum(report.degraded.values()) == len(QUERIES)
    assert all("vector engine unreachable" in why for why in report.degraded)
    # the metrics are still computed, on what came back: the keyword side alone
    assert report.stages["dense"].metrics["recall@100"] == 0.0
    assert report.stages["bm25"].metrics["hit_rate@5"] == report.stages["fused"].metrics["hit_rate@5"] == 1.0
    assert all(s.latency_ms["p50"] >= 0.0 for s in report.stages.values())

    monkeypatch.setenv("CITELINE_EVAL_CACHE", str(tmp_path / "c"))
    monkeypatch.setenv("COLUMNS", "300")
    args = ["eval", "retrieval", "--beir", str(beir), "--embedder", "hashing", "--reranker", "none"]
    table = CliRunner().invoke(main, args)
    assert table.exit_code == 0, table.output
    assert f"note: {len(QUERIES)} of {len(QUERIES)} queries were keyword-only" in table.output
    as_json = CliRunner().invoke(main, [*args, "--json"])
    assert as_json.exit_code == 0, as_json.output
    assert json.loads(as_json.output)["degraded_queries"] == len(QUERIES)
