"""One JSON mapping per type, read off its dataclass fields.

A frozen dataclass that derives from ``Jsonable`` has ``to_json()`` and ``from_json()``: each field,
in declaration order, is one key of the object, its value mapped the same way all the way down
(dataclasses, tuples and lists, mappings; rounded floats). What differs from the plain field is
said once, on the field, with ``field(metadata=json_spec(...))``: another key, the digits floats keep, when the key
is left out, or a value mapping of its own (``encode``/``decode``). Reading back takes the field
types: a list becomes the tuple the field holds, an object the dataclass; keys a reader does not
know are ignored and missing ones take the field's default, or None where the field may be
None (JSON written by earlier versions). A property marked ``@json_derived(after=FIELD)`` is one
more key, written after that field's (first with ``after=None``) and never read back.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass, fields, is_dataclass
from typing import Any, TypeVar

_T = TypeVar("_T", bound="Jsonable")
_F = TypeVar("_F", bound=Callable[..., Any])


@dataclass(frozen=True)
class JsonSpec:
    """How one field differs from the plain mapping."""

    key: str | None = None
    #: floats anywhere in the value are rounded to this many digits
    digits: int | None = None
    #: the key is left out when this is true of the value (e.g. ``omit_false``)
    omit: Callable[[Any], bool] | None = None
    #: the value's own mapping, written and read (``decode`` gets the JSON value)
    encode: Callable[[Any], Any] | None = None
    decode: Callable[[Any], Any] | None = None


_PLAIN = JsonSpec()
_AFTER = "__json_after__"  # the attribute ``json_derived`` sets on a property's getter


def omit_none(value: object) -> bool:
    return value is None


def omit_false(value: object) -> bool:
    return not value


def omit_always(value: object) -> bool:
    """A field the JSON never holds (working state, or what a reader must not see)."""
    return True


def json_derived(after: str | None) -> Callable[[_F], _F]:
    """Marks a property's getter: its value is a key of the JSON, right after the field ``after``
    (None: before every field); ``from_json`` ignores it (the value is derived, not read)::

        @property
        @json_derived(after="spans")
        def resolved(self) -> bool: ...
    """

    def mark(getter: _F) -> _F:
        setattr(getter, _AFTER, after)
        return getter

    return mark


def json_spec(
    *,
    key: str | None = None,
    digits: int | None = None,
    omit: Callable[[Any], bool] | None = None,
    encode: Callable[[Any], Any] | None = None,
    decode: Callable[[Any], Any] | None = None,
) -> dict[str, JsonSpec]:
    """The metadata of a field that differs from the plain mapping:
    ``field(default=0.0, metadata=json_spec(digits=4))``."""
    return {"json": JsonSpec(key, digits, omit, encode, decode)}


def encode(value: Any, digits: int | None = None) -> Any:
    """``value`` as JSON: dataclasses as their objects, tuples as lists, floats rounded to ``digits``."""
    if isinstance(value, Jsonable):
        return value.to_json()
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: encode(getattr(value, f.name), digits) for f in fields(value)}
    if isinstance(value, float) and digits is not None:
        return round(value, digits)
    if isinstance(value, tuple | list):
        return [encode(v, digits) for v in value]
    if isinstance(value, Mapping):
        return {k: encode(v, digits) for k, v in value.items()}
    return value


class Jsonable:
    """Mixin of a dataclass whose JSON is its fields (see the module's docstring)."""

    def to_json(self) -> dict[str, Any]:
        derived = _derived(typing.cast(type, type(self)))
        out: dict[str, Any] = {name: encode(getattr(self, name)) for name in derived.get(None, ())}
        for f in fields(typing.cast(Any, self)):
            spec: JsonSpec = f.metadata.get("json", _PLAIN)
            value = getattr(self, f.name)
            if spec.omit is None or not spec.omit(value):
                out[spec.key or f.name] = spec.encode(value) if spec.encode else encode(value, spec.digits)
            out.update((name, encode(getattr(self, name))) for name in derived.get(f.name, ()))
        return out

    @classmethod
    def from_json(cls: type[_T], data: Mapping[str, Any]) -> _T:
        hints = _hints(typing.cast(type, cls))
        values: dict[str, Any] = {}
        for f in fields(typing.cast(Any, cls)):
            spec: JsonSpec = f.metadata.get("json", _PLAIN)
            key = spec.key or f.name
            if not f.init:
                continue
            if key not in data:
                if _optional(hints[f.name]) and f.default is MISSING and f.default_factory is MISSING:
                    values[f.name] = None  # a value that may be unknown, and is here
                continue
            raw = data[key]
            values[f.name] = spec.decode(raw) if spec.decode else decode(hints[f.name], raw)
        return cls(**values)


def _optional(kind: Any) -> bool:
    return typing.get_origin(kind) in (typing.Union, types.UnionType) and type(None) in typing.get_args(kind)


@functools.cache
def _derived(cls: type) -> dict[str | None, tuple[str, ...]]:
    """The class's ``json_derived`` properties by the field they follow, in definition order."""
    after: dict[str | None, tuple[str, ...]] = {}
    for klass in reversed(cls.__mro__):
        for name, member in vars(klass).items():
            getter = member.fget if isinstance(member, property) else None
            if getter is not None and hasattr(getter, _AFTER):
                field_name = getattr(getter, _AFTER)
                after[field_name] = (*after.get(field_name, ()), name)
    return after


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def decode(kind: Any, value: Any) -> Any:
    """A JSON value back as the type ``kind`` holds: the inverse of ``encode`` (rounding aside)."""
    if value is None:
        return None
    origin = typing.get_origin(kind)
    args = typing.get_args(kind)
    if origin in (typing.Union, types.UnionType):
        for arg in args:
            if arg is not type(None):
                return decode(arg, value)
    if isinstance(kind, type) and issubclass(kind, Jsonable):
        return kind.from_json(value)
    if isinstance(kind, type) and dataclasses.is_dataclass(kind):
        return kind(**value)
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(decode(args[0], v) for v in value)
        return tuple(decode(a, v) for a, v in zip(args, value, strict=True)) if args else tuple(value)
    if origin in (dict, Mapping) or kind in (dict, Mapping):
        inner = args[1] if len(args) == 2 else Any
        return {k: decode(inner, v) for k, v in value.items()}
    if origin is list:
        return [decode(args[0], v) for v in value]
    return value
