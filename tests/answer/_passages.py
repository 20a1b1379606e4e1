"""Hand-written passages for the answer tests."""

from __future__ import annotations

from collections.abc import Sequence

from citeline.types import Chunk, Hit, Passage

ROUTER_FACTS = (
    "The Zephyr 3 router supports Wi-Fi 6E and has four gigabit Ethernet ports. Its firmware "
    "updates itself automatically every Sunday at 03:00 local time.",
    "To reset the Zephyr 3 to factory settings, hold the recessed reset button for 15 seconds "
    "until the status light blinks amber.",
    "The Zephyr 3 ships with a two-year limited warranty. The warranty does not cover damage "
    "caused by lightning or power surges.",
)


def make_passages(
    texts: Sequence[str], titles: Sequence[str] | None = None, heading: tuple[str, ...] = ("Manual",)
) -> list[Passage]:
    passages = []
    for i, text in enumerate(texts, 1):
        title = titles[i - 1] if titles else f"Zephyr 3 guide part {i}"
        chunk = Chunk(
            id=f"c{i}",
            document_id=f"d{i}",
            ordinal=0,
            start=0,
            end=len(text),
            text=text,
            index_text=text,
            heading_trail=heading,
            kind="paragraph",
        )
        hit = Hit(chunk=chunk, source=f"docs/part{i}.md", title=title, score=1.0)
        passages.append(Passage(number=i, hit=hit, text=text))
    return passages
