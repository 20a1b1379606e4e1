"""Bytes to text: BOMs, UTF-8, then a detected legacy encoding; binary data refused."""

from __future__ import annotations

import codecs

from citeline.errors import ParseError

_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)


def _looks_binary(sample: bytes) -> bool:
    if b"\x00" in sample:
        return True
    control = sum(1 for b in sample if b < 32 and b not in (9, 10, 12, 13, 27))
    return bool(sample) and control / len(sample) > 0.1


def decode_text(data: bytes, path: str) -> str:
    """Decode a text file. Newlines are normalised to "\\n" (offsets refer to the result)."""
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            try:
                text = data[len(bom) :].decode(encoding)
            except UnicodeDecodeError as exc:
                raise ParseError(path, f"invalid {encoding} after its byte-order mark: {exc.reason}") from exc
            return _normalise(text)
    if _looks_binary(data[:8192]):
        raise ParseError(path, "looks like a binary file, not text (it contains NUL or control bytes)")
    try:
        return _normalise(data.decode("utf-8"))
    except UnicodeDecodeError:
        pass
    from charset_normalizer import from_bytes

    best = from_bytes(data).best()
    if best is None:
        raise ParseError(path, "not valid UTF-8 and no other text encoding fits; save it as UTF-8")
    return _normalise(str(best))


def _normalise(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")
