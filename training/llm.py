"""The packaged Qwen model in-process (xllamacpp), for writing questions and paraphrases.

Prompts batch several units of one passage so that the instructions and the heading trail are
processed once per batch. Replies are constrained to a small JSON schema (a list of exactly n
strings) where llama.cpp supports it; :func:`parse_list_reply` still copes with junk around or
inside the JSON, because a truncated or free-text reply must never crash a long run.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from training.common import Logger, peak_rss_mib

T = TypeVar("T")

QUESTION_SYSTEM = (
    "You write the questions that users of a software product type into the search box of its "
    "documentation. For each numbered sentence you get, write one question that this sentence answers. "
    "Ask it the way a user would: a complete question ending with '?', naming the option, command or "
    "feature it is about (the section title tells you which), in your own words, never copying the "
    'sentence. Reply with JSON: {"questions": [one string per sentence, in order]}.'
)
# The example is about a camera, far from any manual we use, so that a copied example question is
# easy to recognise (build_data.py drops questions close to these).
QUESTION_EXAMPLE = (
    "Section: Camera settings > Power saving",
    [
        "The auto_off setting turns the camera off after a period without use; the default is 3 minutes.",
        "A camera that is connected to a charger never turns itself off.",
        "Hold the MENU button for 2 seconds to wake the camera from standby.",
    ],
    [
        "How long does the camera stay on when idle before it shuts down?",
        "Does the camera switch off automatically while it is charging?",
        "How can I bring the camera back from standby?",
    ],
)

PARAPHRASE_SYSTEM = (
    "You rewrite technical sentences. For each numbered sentence you get, write one sentence that says "
    "the same thing with different words and a different word order. Keep every number, unit, name, "
    "option, command and path exactly as written; add nothing; leave nothing out. "
    'Reply with JSON: {"rewrites": [one string per sentence, in order]}.'
)
PARAPHRASE_EXAMPLE = (
    [
        "The auto_off setting turns the camera off after a period without use; the default is 3 minutes.",
        "A camera that is connected to a charger never turns itself off.",
    ],
    [
        "By default the camera switches itself off after 3 minutes without use, a delay you can change "
        "with the auto_off setting.",
        "While it is plugged into a charger, the camera does not switch itself off.",
    ],
)


QUESTION_SYSTEM_ANCHORED = (
    "You write the questions that users of a software product type into the search box of its "
    "documentation. For each numbered sentence you get, in order: copy 2 to 5 key words of that "
    'sentence into "about", then write in "question" one question that this sentence answers. '
    "Ask it the way a user would: a complete question ending with '?', naming the option, command or "
    "feature it is about (the section title tells you which), in your own words, never copying the "
    'sentence. Reply with JSON: {"questions": [{"about": ..., "question": ...}, one per sentence]}.'
)
QUESTION_EXAMPLE_ABOUT = [
    "auto_off setting default 3 minutes",
    "connected to a charger",
    "Hold the MENU button",
]


def example_questions() -> list[str]:
    return list(QUESTION_EXAMPLE[2])


def _numbered(units: Sequence[str]) -> str:
    return "\n".join(f"{i}. {' '.join(u.split())}" for i, u in enumerate(units, 1))


def question_messages(trail: str, units: Sequence[str], anchored: bool = False) -> list[dict[str, str]]:
    """Fixed instructions and example first (llama.cpp reuses their cached prefix), then the batch.

    A batch of one sentence gets a one-sentence example, so the example's length never tells the
    model to write more questions than it was given sentences. ``anchored`` asks for the key words
    of each sentence before its question, which keeps the model on the right sentence and lets the
    caller check that it was."""
    section, sentences, questions = QUESTION_EXAMPLE
    k = 1 if len(units) == 1 else len(sentences)
    example = f"{section}\n{_numbered(sentences[:k])}"
    if anchored:
        items: list[Any] = [
            {"about": a, "question": q}
            for a, q in zip(QUESTION_EXAMPLE_ABOUT[:k], questions[:k], strict=True)
        ]
    else:
        items = list(questions[:k])
    reply = json.dumps({"questions": items})
    return [
        {"role": "system", "content": QUESTION_SYSTEM_ANCHORED if anchored else QUESTION_SYSTEM},
        {"role": "user", "content": example},
        {"role": "assistant", "content": reply},
        {"role": "user", "content": f"Section: {trail or '(untitled)'}\n{_numbered(units)}"},
    ]


def paraphrase_messages(units: Sequence[str]) -> list[dict[str, str]]:
    sentences, rewrites = PARAPHRASE_EXAMPLE
    k = 1 if len(units) == 1 else len(sentences)
    return [
        {"role": "system", "content": PARAPHRASE_SYSTEM},
        {"role": "user", "content": _numbered(sentences[:k])},
        {"role": "assistant", "content": json.dumps({"rewrites": list(rewrites[:k])})},
        {"role": "user", "content": _numbered(units)},
    ]


def list_schema(key: str, n: int, fields: Sequence[str] = ()) -> dict[str, Any]:
    """A JSON schema: ``{key: [n strings]}``, or ``{key: [n objects with these string fields]}``."""
    item: dict[str, Any] = {"type": "string"}
    if fields:
        item = {
            "type": "object",
            "properties": {f: {"type": "string"} for f in fields},
            "required": list(fields),
            "additionalProperties": False,
        }
    return {
        "type": "json_schema",
        "json_schema": {
            "name": key,
            "strict": True,
            "schema": {
                "type": "object",
                "properties": {
                    key: {
                        "type": "array",
                        "items": item,
                        "minItems": n,
                        "maxItems": n,
                    }
                },
                "required": [key],
                "additionalProperties": False,
            },
        },
    }


_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)
_QUOTED = re.compile(r'"((?:[^"\\]|\\.){3,})"')


def _strings(value: Any) -> list[str] | None:
    if isinstance(value, list):
        out: list[str] = []
        for item in value:
            if isinstance(item, str):
                out.append(item)
            elif isinstance(item, dict):
                named = [
                    item[k] for k in ("q", "question", "text", "rewrite", "s") if isinstance(item.get(k), str)
                ]
                texts = named or sorted(
                    (v for v in item.values() if isinstance(v, str)), key=len, reverse=True
                )
                out.append(texts[0] if texts else "")
            else:
                out.append("")
        return out
    return None


def parse_field(raw: str, key: str, n: int, field: str) -> list[str]:
    """``field`` of each of the n objects in ``{"key": [{...}, ...]}`` ("" where missing)."""
    try:
        start, end = raw.find("{"), raw.rfind("}")
        data = json.loads(raw[start : end + 1])
        items = data.get(key) if isinstance(data, dict) else None
    except (ValueError, RecursionError, AttributeError):
        items = None
    if not isinstance(items, list):
        return [""] * n
    out = [" ".join(str(i.get(field) or "").split()) if isinstance(i, dict) else "" for i in items[:n]]
    return out + [""] * (n - len(out))


def parse_list_reply(raw: str, key: str, n: int) -> list[str]:
    """The ``n`` strings of ``{"key": [...]}`` in a model reply; "" where one is missing.

    Accepts a bare list, objects inside the list (``{"n": 1, "q": "..."}``), code fences, text
    around the JSON and a truncated reply (the quoted strings that did arrive are kept). Never
    raises: junk gives n empty strings.
    """
    if n <= 0:
        return []
    text = raw or ""
    fenced = _FENCE.search(text)
    candidates = [fenced.group(1)] if fenced else []
    candidates.append(text)
    for cand in candidates:
        for start_char in "{[":
            start = cand.find(start_char)
            if start < 0:
                continue
            end = cand.rfind("}" if start_char == "{" else "]")
            if end <= start:
                continue
            try:
                data = json.loads(cand[start : end + 1])
            except (ValueError, RecursionError):
                continue
            values: list[str] | None = None
            if isinstance(data, dict):
                if key in data:
                    values = _strings(data[key])
                else:
                    values = next((_strings(v) for v in data.values() if isinstance(v, list)), None)
            else:
                values = _strings(data)
            if values is not None:
                values = [" ".join(str(v).split()) for v in values[:n]]
                return values + [""] * (n - len(values))
    # Truncated or broken JSON: take the quoted strings after the key, in order.
    body = text.split(f'"{key}"', 1)[1] if f'"{key}"' in text else text
    found = []
    for m in _QUOTED.finditer(body):
        try:
            found.append(json.loads(f'"{m.group(1)}"'))
        except ValueError:
            found.append(m.group(1))
    found = [" ".join(s.split()) for s in found if s.strip() and s.strip() != key][:n]
    return found + [""] * (n - len(found))


# one question per prompt (answer_kinds.py, question_rewrites.py): a JSON object with one string
QUESTION_SCHEMA = {
    "type": "json_schema",
    "json_schema": {
        "name": "question",
        "strict": True,
        "schema": {
            "type": "object",
            "properties": {"question": {"type": "string"}},
            "required": ["question"],
            "additionalProperties": False,
        },
    },
}


def one_question_messages(
    system: str, examples: Sequence[tuple[str, str]], body: str
) -> list[dict[str, str]]:
    """Fixed instructions and examples first (llama.cpp reuses their cached prefix), then ``body``;
    each example's reply is ``{"question": ...}``."""
    out = [{"role": "system", "content": system}]
    for prompt, question in examples:
        out.append({"role": "user", "content": prompt})
        out.append({"role": "assistant", "content": json.dumps({"question": question})})
    out.append({"role": "user", "content": body})
    return out


def parse_question(raw: str) -> str:
    try:
        start, end = raw.find("{"), raw.rfind("}")
        data = json.loads(raw[start : end + 1])
    except (ValueError, RecursionError):
        return ""
    q = data.get("question") if isinstance(data, dict) else None
    return " ".join(q.split()) if isinstance(q, str) else ""


class Writer:
    """One loaded GGUF model; ``ask`` returns the reply text and the request's timings."""

    def __init__(self, model: str = "0.5b", threads: int = 2, n_ctx: int = 2048, seed: int = 13) -> None:
        from citeline.answer.generators.llamacpp_gen import LlamaCppGenerator

        self.model = model
        self.seed = seed
        self._gen = LlamaCppGenerator(model, n_ctx=n_ctx, max_tokens=512, n_threads=threads, seed=seed)
        self._gen.load()
        self.load_seconds = self._gen.load_seconds

    def ask(
        self, messages: list[dict[str, str]], schema: dict[str, Any] | None, max_tokens: int
    ) -> tuple[str, dict[str, float]]:
        body: dict[str, Any] = {
            "messages": messages,
            "temperature": 0.0,
            "seed": self.seed,
            "max_tokens": max_tokens,
        }
        if schema is not None:
            body["response_format"] = schema
        start = time.perf_counter()
        result = self._gen._ensure_loaded().handle_chat_completions(body)
        seconds = time.perf_counter() - start
        content = ""
        usage: dict[str, Any] = {}
        timings: dict[str, Any] = {}
        if isinstance(result, dict):
            try:
                content = str(result["choices"][0]["message"].get("content") or "")
            except (KeyError, IndexError, TypeError, AttributeError):
                content = ""
            usage = result.get("usage") or {}
            timings = result.get("timings") or {}
        return content, {
            "seconds": round(seconds, 3),
            "prompt_tokens": int(usage.get("prompt_tokens", 0)),
            "completion_tokens": int(usage.get("completion_tokens", 0)),
            "cached_tokens": int(timings.get("cache_n", 0) or 0),
            "prompt_ms": round(float(timings.get("prompt_ms", 0.0) or 0.0), 1),
        }

    def close(self) -> None:
        self._gen.close()


def append_replies(
    path: Path,
    todo: Sequence[T],
    ask: Callable[[Writer, T], dict[str, Any]],
    writer: tuple[str, int, int],
    budget: float,
    log: Logger,
    make_writer: Callable[..., Writer] = Writer,
) -> None:
    """Ask one reply per item with the model ``writer`` (name, threads, seed) and append the record
    that ``ask`` returns to ``path`` as a JSON line the moment it comes, so a stopped run loses
    nothing and a rerun can skip what is there. A STOP file beside ``path`` or the time budget
    (seconds; 0: none) ends the run."""
    name, stop = path.stem, path.parent / "STOP"
    model = make_writer(model=writer[0], threads=writer[1], seed=writer[2])
    start = time.perf_counter()
    try:
        with path.open("a", encoding="utf-8") as f:
            for i, item in enumerate(todo, 1):
                if (budget and time.perf_counter() - start > budget) or stop.exists():
                    log.info(f"{name}: stopping (time budget or STOP file; resumable)")
                    break
                record = ask(model, item)
                f.write(json.dumps(record, ensure_ascii=False) + "\n")
                f.flush()
                if i % 25 == 0:
                    el = time.perf_counter() - start
                    log.info(f"{name}: {i}/{len(todo)} in {el:.0f}s; peak RSS {peak_rss_mib():.0f} MiB")
    finally:
        model.close()
