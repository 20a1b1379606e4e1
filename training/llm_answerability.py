"""Can a local LLM tell whether the context answers a question? Measured, not used.

    python -m training.llm_answerability --index IDX QUESTIONS.jsonl [--model 0.5b|1.5b] [--limit N]

For each question, the three units an extractive answer would quote first (with their headings)
are shown to the packaged Qwen model with "Does the text state the answer to the question?"; the
score is P(YES) / (P(YES) + P(NO)) from the first token's log-probabilities. It prints the AUROC of
that score, answerable against unanswerable, next to the relevance guard's on the same questions.
Measured 2026-12-02 on golden dev + dev-extra: 0.5B 0.49 (146 questions, about 3 s each), 1.5B
0.73 (all 37 unanswerable and every third answerable question, about 6 s each), where relevance
separates the same questions at 0.94. Neither is used as a refusal signal.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from training.common import auroc
from training.refusal_signals import asked

PROMPT = (
    "Question: {question}\n\nText:\n{text}\n\nDoes the text state the answer to the question? "
    "Reply with one word, YES or NO."
)


def p_yes(top_logprobs: Sequence[dict[str, Any]]) -> float:
    """P(YES) among YES and NO in the first token's alternatives (0.5 when neither is there)."""
    mass = {"YES": 0.0, "NO": 0.0}
    for alt in top_logprobs:
        word = str(alt["token"]).strip().upper()
        if word in mass:
            mass[word] += math.exp(float(alt["logprob"]))
    total = mass["YES"] + mass["NO"]
    return mass["YES"] / total if total > 0 else 0.5


def scores(index: str, questions: Path, model: str, limit: int | None) -> list[tuple[float, float, bool]]:
    """(P(YES), relevance, answerable) per question."""
    import citeline
    from citeline.answer.extractive import ExtractiveGenerator
    from citeline.answer.generators.llamacpp_gen import LlamaCppGenerator
    from citeline.answer.units import heading_context

    kb = citeline.open(index)
    generator = kb.components.generator
    if not isinstance(generator, ExtractiveGenerator):
        raise SystemExit("run it with the extractive generator (its first units are what the model reads)")
    server = LlamaCppGenerator(model, n_ctx=2048)._ensure_loaded()
    out = []
    for row, a in asked(kb, questions, limit):
        score = 0.0
        if a.passages:
            by_n = {p.number: p for p in a.passages}
            lines = []
            for unit in generator.blend(a.query, a.passages, generator.score_units(a.query, a.passages))[:3]:
                p = by_n[unit.passage]
                heading = heading_context(p.chunk.heading_trail, p.hit.title)
                text = " ".join(u.text for u in (unit.parts or (unit.unit,)))
                lines.append(f"- {heading + ': ' if heading else ''}{text}")
            prompt = PROMPT.format(question=a.query.focus, text="\n".join(lines))
            body = {
                "messages": [{"role": "user", "content": prompt}],
                "temperature": 0.0,
                "max_tokens": 1,
                "logprobs": True,
                "top_logprobs": 10,
            }
            reply = server.handle_chat_completions(body)
            score = p_yes(reply["choices"][0]["logprobs"]["content"][0]["top_logprobs"])
        out.append((score, a.relevance.score, bool(row.get("answerable", True))))
    kb.close()
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("questions", type=Path)
    p.add_argument("--index", required=True)
    p.add_argument("--model", default="0.5b")
    p.add_argument("--limit", type=int)
    args = p.parse_args(argv)
    if not args.questions.is_file():
        p.error(f"{args.questions}: no such file")
    rows = scores(args.index, args.questions, args.model, args.limit)
    labels = [int(a) for _, _, a in rows]
    result = {
        "questions": len(rows),
        "unanswerable": labels.count(0),
        "llm_p_yes_auroc": auroc([y for y, _, _ in rows], labels),
        "relevance_auroc": auroc([r for _, r, _ in rows], labels),
    }
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
