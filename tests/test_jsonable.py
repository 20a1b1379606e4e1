"""citeline.jsonable: one JSON mapping per type, read off the dataclass fields."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field

import pytest

from citeline.jsonable import Jsonable, json_derived, json_spec, omit_always, omit_false, omit_none


@dataclass(frozen=True)
class Inner(Jsonable):
    n: int
    score: float = field(default=0.0, metadata=json_spec(digits=2))


@dataclass(frozen=True)
class Outer(Jsonable):
    name: str = field(metadata=json_spec(key="full name"))
    inner: Inner
    inners: tuple[Inner, ...] = ()
    span: tuple[int, int] = (0, 0)
    maybe: int | None = None
    unknown: float | None = field(default=None, metadata=json_spec(omit=omit_none))
    flagged: bool = field(default=False, metadata=json_spec(omit=omit_false))
    weights: Mapping[str, float] = field(default_factory=dict, metadata=json_spec(digits=1))
    tags: dict[str, str] = field(default_factory=dict)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (
            Outer("a", Inner(1, 0.12345)),
            {
                "full name": "a",
                "inner": {"n": 1, "score": 0.12},
                "inners": [],
                "span": [0, 0],
                "maybe": None,
                "weights": {},
                "tags": {},
            },
        ),
        (
            Outer("b", Inner(2), (Inner(3, 1.0),), (4, 9), 5, 0.5, True, {"x": 0.26}, {"k": "v"}),
            {
                "full name": "b",
                "inner": {"n": 2, "score": 0.0},
                "inners": [{"n": 3, "score": 1.0}],
                "span": [4, 9],
                "maybe": 5,
                "unknown": 0.5,
                "flagged": True,
                "weights": {"x": 0.3},
                "tags": {"k": "v"},
            },
        ),
    ],
)
def test_fields_become_keys_in_order_with_their_options(value: Outer, expected: dict[str, object]) -> None:
    got = value.to_json()
    assert got == expected and list(got) == list(expected)
    # and back, through real JSON text: tuples, nested objects and omitted keys come back as they were
    again = Outer.from_json(json.loads(json.dumps(got)))
    assert again == Outer.from_json(expected)
    assert again.to_json() == got
    assert isinstance(again.inners, tuple) and isinstance(again.span, tuple)


def test_json_from_an_earlier_version_reads_with_defaults_and_ignores_unknown_keys() -> None:
    old = Outer.from_json({"full name": "c", "inner": {"n": 1}, "removed_long_ago": 3})
    assert old == Outer("c", Inner(1))
    with pytest.raises(TypeError):
        Outer.from_json({"inner": {"n": 1}})  # a required field that may not be unknown


@dataclass(frozen=True)
class Derived(Jsonable):
    spans: tuple[tuple[int, int], ...]
    note: str = ""
    working: list[int] = field(default_factory=list, metadata=json_spec(omit=omit_always))

    @property
    @json_derived(after=None)
    def count(self) -> int:
        return len(self.spans)

    @property
    @json_derived(after="spans")
    def found(self) -> bool:
        return bool(self.spans)

    @property
    def not_written(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (Derived(((1, 2),), "n", [7]), {"count": 1, "spans": [[1, 2]], "found": True, "note": "n"}),
        (Derived(()), {"count": 0, "spans": [], "found": False, "note": ""}),
    ],
)
def test_derived_properties_are_keys_in_place_and_not_read_back(
    value: Derived, expected: dict[str, object]
) -> None:
    got = value.to_json()
    assert got == expected and list(got) == list(expected)
    # derived keys are ignored on reading; a field never written comes back as its default
    assert Derived.from_json(got) == Derived(value.spans, value.note)
