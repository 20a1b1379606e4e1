"""Text from documents and file names, made safe to print on a terminal.

A file name or a document may hold newlines, carriage returns, escape sequences (``ESC [ 2 J``
clears the screen, ``ESC ] 52`` writes the clipboard), C1 controls or bidirectional overrides
that make a name read backwards. Printed raw they forge lines of output or drive the terminal.
``name()`` shows every such character as a visible escape (``\\n``, ``\\x1b``, ``\\u202e``);
``text()`` does the same but keeps newlines and tabs, for multi-line document text.
"""

from __future__ import annotations

import re

# C0 controls, DEL, C1 controls, line/paragraph separators, bidi embeddings/overrides/isolates,
# the BOM and zero-width characters that hide text, and lone surrogates (a file name's bytes that
# are not UTF-8, as Python decodes them: a terminal cannot even be sent them)
_UNSAFE = "\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\u200b-\u200f\ufeff\ud800-\udfff"
_NAME = re.compile(f"[{_UNSAFE}\\\\]")
_TEXT = re.compile(f"[{_UNSAFE.replace(chr(0) + '-' + chr(0x1F), '')}\x00-\x08\x0b-\x1f]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\\": "\\\\"}


def _visible(match: re.Match[str]) -> str:
    ch = match.group(0)
    if ch in _NAMED:
        return _NAMED[ch]
    code = ord(ch)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def name(value: object) -> str:
    """A one-line, visible form of a name (file, source, title, heading): controls escaped, and
    backslashes doubled so that an escape shown cannot be confused with the name's own text."""
    return _NAME.sub(_visible, str(value))


def text(value: object) -> str:
    """Document text for a terminal: newlines and tabs stay, every other control is escaped."""
    return _TEXT.sub(_visible, str(value))


#: characters a JSON encoder leaves raw (ensure_ascii=False) that a terminal may still act on, or
#: that cannot be written as UTF-8 at all (lone surrogates)
_JSON_UNSAFE = re.compile("[\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def json_text(encoded: str) -> str:
    """JSON text with DEL, C1 controls, bidi overrides and lone surrogates as \\u escapes (JSON
    keeps C0 escaped already). Only ever inside strings, so the result is the same JSON value."""
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group(0)):04x}", encoded)
