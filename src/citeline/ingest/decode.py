"""Bytes to text: BOMs, a declared charset, UTF-8, then a detected legacy encoding."""

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


def decode_bytes(data: bytes, path: str, declared: str | None = None, check_binary: bool = True) -> str:
    """Decode text; newlines are normalised to "\\n" (every offset refers to the result).

    Order: a byte-order mark, the charset the file declares (HTML <meta>), UTF-8, then
    charset-normalizer's guess, where windows-1252 wins a near tie as browsers assume.
    """
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            try:
                return _normalise(data[len(bom) :].decode(encoding))
            except UnicodeDecodeError as exc:
                raise ParseError(path, f"invalid {encoding} after its byte-order mark: {exc.reason}") from exc
    if check_binary and _looks_binary(data[:8192]):
        raise ParseError(path, "looks like a binary file, not text (it contains NUL or control bytes)")
    if declared:
        try:
            return _normalise(data.decode(declared))
        except (LookupError, UnicodeDecodeError):
            pass
    try:
        return _normalise(data.decode("utf-8"))
    except UnicodeDecodeError:
        pass
    from charset_normalizer import from_bytes

    matches = from_bytes(data)
    best = matches.best()
    if best is None:
        return _normalise(data.decode("cp1252", errors="replace"))
    # Short Western texts fit several Latin code pages about equally well.
    for candidate in matches:
        if candidate.encoding in ("cp1252", "latin_1", "iso8859_15") and candidate.chaos <= best.chaos + 0.05:
            return _normalise(data.decode("cp1252", errors="replace"))
    return _normalise(str(best))


def decode_text(data: bytes, path: str) -> str:
    return decode_bytes(data, path)


def _normalise(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")
