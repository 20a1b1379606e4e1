"""training/llm.py's resumable reply loop, with a stand-in for the LLM (the model itself is
exercised by the data builder's smoke run, not here)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from training.common import Logger
from training.llm import append_replies


class _Echo:
    """Answers each prompt with its upper-cased text; touches STOP after ``stop_after`` replies."""

    def __init__(self, stop: Path, stop_after: int) -> None:
        self.stop, self.stop_after, self.asked, self.closed = stop, stop_after, 0, False

    def ask(self, item: str) -> str:
        self.asked += 1
        if self.asked >= self.stop_after:
            self.stop.touch()
        return item.upper()

    def close(self) -> None:
        self.closed = True


def _ask(writer: _Echo, item: str) -> dict[str, Any]:
    return {"item": item, "reply": writer.ask(item)}


def test_replies_are_appended_until_the_stop_file_and_the_model_is_closed(tmp_path: Path) -> None:
    path = tmp_path / "replies.jsonl"
    path.write_text(json.dumps({"item": "earlier", "reply": "EARLIER"}) + "\n")
    echo = _Echo(tmp_path / "STOP", stop_after=2)
    # _Echo stands in for the LLM Writer (all this loop uses of it: ask, close), so these two
    # callables deliberately do not match the Writer-typed parameters
    append_replies(
        path,
        ["a", "b", "c"],
        _ask,  # type: ignore[arg-type]
        ("echo", 1, 13),
        0,
        Logger(tmp_path / "log"),
        lambda **_: echo,  # type: ignore[arg-type]
    )
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    # the earlier line is kept, "c" is never asked: the STOP file came after "b"
    assert [r["reply"] for r in lines] == ["EARLIER", "A", "B"]
    assert echo.asked == 2 and echo.closed
    assert "stopping" in (tmp_path / "log").read_text()
