"""The Markdown tables of benchmarks/peers/run.py's report (run.py measures, this writes)."""

from __future__ import annotations

from typing import Any

from shared import READDS, SAME_PROCESS_READDS, TOP_K


def markdown(meta: dict[str, Any], rows: dict[str, Any]) -> str:
    def f(v: float | None, nd: int = 2) -> str:
        return "n/a" if v is None else f"{v:,.{nd}f}"

    def cell(tool: str, r: dict[str, Any], key: str, nd: int = 2) -> str:
        ratio = r.get("ratio_to_citeline", {})
        if tool == "citeline" or ratio.get(key) is None:
            return f(r[key], nd)
        return f"{f(r[key], nd)} ({ratio[key]:.2f}x)"

    def table(kind: str, suffix: str) -> list[str]:
        out = [
            f"| tool | cold ingest s | re-add s (median of up to {SAME_PROCESS_READDS}) | one-file edit s | query p50 / p95 ms{kind} | peak RSS MB | nDCG@10 |",
            "|---|---|---|---|---|---|---|",
        ]
        for tool, r in rows.items():
            vers = ", ".join(f"{k} {v}" for k, v in r["versions"].items())
            out.append(
                f"| {tool} ({vers}) | {cell(tool, r, f'cold_ingest{suffix}_s', 1)} | "
                f"{cell(tool, r, f'readd{suffix}_s', 3)} | {cell(tool, r, f'edit{suffix}_s', 3)} | "
                f"{cell(tool, r, f'query{suffix}_p50_ms', 1)} / {cell(tool, r, f'query{suffix}_p95_ms', 1)} | "
                f"{cell(tool, r, 'peak_rss_mb', 0)} | {cell(tool, r, 'ndcg@10', 3)} |"
            )
        return out

    lines = [
        "# citeline beside LlamaIndex and Haystack (benchmarks/peers/run.py)",
        "",
        f"{meta['documents']:,} SciFact documents ({rows.get('citeline', {}).get('chunks', '?')} citeline chunks, "
        f"the same chunks for every tool), {meta['queries']} test queries, embedder minilm-int8 (ONNX) for all, "
        f"hybrid BM25 + dense, RRF, top {TOP_K} per stage. {meta['machine']}; load average "
        f"{meta['loadavg_before'][0]:.1f} before the run, {meta['loadavg_after'][0]:.1f} after "
        "(a tool at work keeps it near 1-2 on 2 cores; more means other jobs). Ratios are tool / citeline, measured in this run back to back (below 1 the "
        "tool is faster or smaller than citeline; for nDCG above 1 it is better).",
        *(
            [
                "",
                f"Reused from an earlier run in the same work folder (same corpus, chunks and queries): "
                f"{', '.join(meta['reused'])}; the ratios compare those figures with this run's.",
            ]
            if meta.get("reused")
            else []
        ),
        "",
        "Wall-clock (query latency includes embedding the query, for every tool):",
        "",
        *table("", ""),
        "",
        "CPU seconds of the tool's process, all threads (less sensitive to the other jobs' load):",
        "",
        *table(" (CPU)", "_cpu"),
        "",
        "Query latency without the query's embedding (wall ms, p50 / p95): "
        + "; ".join(
            f"{t} {f(r['query_noembed_p50_ms'], 1)} / {f(r['query_noembed_p95_ms'], 1)}"
            for t, r in rows.items()
        ),
        "",
        "Chunks embedded (cold / re-add / edit): "
        + "; ".join(
            f"{t} {r['cold_ingest_chunks_embedded']} / {r['readd_chunks_embedded']} / {r['edit_chunks_embedded']}"
            for t, r in rows.items()
        ),
        "",
        "Seconds spent in the embedder during cold ingest (wall): "
        + "; ".join(f"{t} {f(r['cold_ingest_embed_s'], 1)}" for t, r in rows.items()),
        "",
        *ndcg_differences(rows),
        f"Command: `{meta['command']}`",
        "",
    ]
    return "\n".join(lines)


def scale_markdown(scale: dict[str, Any]) -> str:
    rows = scale["tools"]
    n = next(iter(rows.values()))["chunks"]
    lines = [
        f"## Query latency at {n:,} chunks (`--scale-chunks`)",
        "",
        "Real text (SciFact, then PubMedQA, 3-sentence windows), synthetic vectors (the "
        f"{scale['meta']['real_vectors_cycled']:,} real MiniLM vectors of citeline's index in --work cycled, "
        "plus Gaussian noise sigma "
        f"{scale['meta']['noise_sigma']}, renormalised), loaded pre-embedded (load times are not compared); "
        f"the first {next(iter(rows.values()))['queries']} SciFact test queries, hybrid as above, query "
        "embedding included in the first two columns and taken out in the last. Ratios tool / citeline.",
        "",
        "| tool | chunks | query p50 / p95 ms | query CPU p50 ms | without query embedding p50 / p95 ms | peak RSS MB | load average |",
        "|---|---|---|---|---|---|---|",
    ]
    for tool, r in rows.items():
        ratio = r.get("ratio_to_citeline", {})

        def c(key: str, r: dict[str, Any] = r, ratio: dict[str, Any] = ratio, tool: str = tool) -> str:
            v = f"{r[key]:,.1f}"
            return v if tool == "citeline" or ratio.get(key) is None else f"{v} ({ratio[key]:.2f}x)"

        lines.append(
            f"| {tool} | {r['chunks']:,} | {c('query_p50_ms')} / {c('query_p95_ms')} | {c('query_cpu_p50_ms')} | "
            f"{c('query_noembed_p50_ms')} / {c('query_noembed_p95_ms')} | {r['peak_rss_mb']:,.0f} | "
            f"{r['loadavg_start'][0]:.1f} |"
        )
    lines += ["", f"Command: `{scale['meta']['command']}`"]
    if scale["meta"].get("reused"):
        lines.append(
            f"(the figures of {', '.join(scale['meta']['reused'])} are those their workers wrote earlier into the "
            "same --work folder, on the same chunks and queries)"
        )
    return "\n".join([*lines, ""])


def ndcg_differences(rows: dict[str, Any]) -> list[str]:
    """The line on each peer's nDCG@10 minus citeline's (none when only citeline ran)."""
    diffs = [(t, d) for t, r in rows.items() if (d := r.get("ndcg@10_difference"))]
    if not diffs:
        return []
    return [
        "nDCG@10, tool minus citeline over the same queries (mean, 95% bootstrap interval, p-value of a "
        "paired randomization test; p above 0.05: no difference these queries can show): "
        + "; ".join(
            f"{t} {d['mean_difference']:+.3f} [{d['ci95_low']:+.3f}, {d['ci95_high']:+.3f}], p = {d['p_value']:.2f}"
            for t, d in diffs
        ),
        "",
    ]


def updates_markdown(rows: dict[str, dict[str, Any]], command_line: str) -> str:
    """The new-process re-add and edit table of updates.py."""
    base = rows["citeline"]

    def cell(tool: str, key: str) -> str:
        v = rows[tool][key]
        return f"{v:.3f}" if tool == "citeline" else f"{v:.3f} ({v / base[key]:.1f}x)"

    lines = [
        "## Re-add and one-file edit in a new process (updates.py)",
        "",
        "From process start to exit, as a user re-indexes: `citeline add`; a peer's script loads the "
        "index it saved, adds the corpus again and saves it when something changed (the peer's "
        "reading of citeline's chunk table, standing in for its chunking, taken out). Medians of "
        f"{READDS} re-adds and 3 one-file edits; ratios tool / citeline.",
        "",
        "| tool | re-add s (wall) | re-add s (CPU) | one-file edit s (wall) | one-file edit s (CPU) | chunks embedded per edit |",
        "|---|---|---|---|---|---|",
    ]
    for tool, r in rows.items():
        lines.append(
            f"| {tool} | {cell(tool, 'readd_new_s')} | {cell(tool, 'readd_new_cpu_s')} | "
            f"{cell(tool, 'edit_new_s')} | {cell(tool, 'edit_new_cpu_s')} | {r['edit_new_chunks_embedded']} |"
        )
    return "\n".join([*lines, "", f"Command: `{command_line}`", ""])
