"""Uploads: the file name a client sends, checked, and the file's type checked by its content.

An upload becomes the document ``uploads/<user>`` / ``<name>``: its bytes go into the store only
(nothing is written to the file system), so a name can never reach a path outside the index; a
name that tries (``../``, an absolute path, a drive letter, a NUL or control character) is refused
with the reason rather than silently rewritten, as is a name holding bidirectional controls (which
make it read as another name).
"""

from __future__ import annotations

import io
import re
import zipfile
from pathlib import PurePosixPath

from citeline.errors import CitelineError
from citeline.ingest.registry import supported_extensions

MAX_NAME = 200
#: C0 and C1 controls, and the line and paragraph separators
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
#: marks and embeddings, overrides and isolates that reorder text (U+202E shows "gpj.exe" as "exe.jpg")
_BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_TEXT_FORMATS = {".md", ".markdown", ".txt", ".text", ".html", ".htm", ".rst"}


class UploadError(CitelineError):
    """A bad upload (HTTP 400, or 415 when the type is wrong)."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def upload_collection(user: str | None) -> str:
    return f"uploads/{user or 'anonymous'}"


def check_name(name: str) -> str:
    """The upload's name if it is a plain file name, else UploadError naming what is wrong."""
    if not name or not name.strip():
        raise UploadError("The upload has no file name.")
    if "\x00" in name:
        raise UploadError("The file name contains a NUL character.")
    if bidi := _BIDI.search(name):
        raise UploadError(
            f"The file name contains a bidirectional control character (U+{ord(bidi.group()):04X}), "
            "which can make it show a different name or extension than it has."
        )
    if _CONTROL.search(name):
        raise UploadError("The file name contains a control character.")
    if len(name) > MAX_NAME:
        raise UploadError(f"The file name is {len(name)} characters long; the limit is {MAX_NAME}.")
    if name.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", name):
        raise UploadError(f"The file name '{name}' is an absolute path; send a plain file name.")
    parts = re.split(r"[/\\]", name)
    if any(p in ("..", ".") for p in parts):
        raise UploadError(f"The file name '{name}' points outside its folder ('..'); send a plain file name.")
    if len(parts) > 1:
        raise UploadError(f"The file name '{name}' has folders; send a plain file name.")
    if name.startswith("."):
        raise UploadError(f"The file name '{name}' is hidden (starts with '.').")
    suffix = PurePosixPath(name).suffix.lower()
    if suffix not in supported_extensions():
        raise UploadError(
            f"Unsupported file type '{suffix or '(none)'}'; supported: {', '.join(supported_extensions())}.",
            415,
        )
    return name


def check_content(name: str, data: bytes) -> None:
    """The bytes must be what the extension says (magic bytes, or decodable text without NULs)."""
    suffix = PurePosixPath(name).suffix.lower()
    if not data.strip():
        raise UploadError(f"{name}: the file is empty.")
    if suffix == ".pdf":
        if b"%PDF-" not in data[:1024]:
            raise UploadError(f"{name}: the content is not a PDF (no %PDF- header).", 415)
        return
    if suffix == ".docx":
        if not data.startswith(b"PK\x03\x04"):
            raise UploadError(f"{name}: the content is not a DOCX file (not a ZIP archive).", 415)
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                if "word/document.xml" not in archive.namelist():
                    raise UploadError(
                        f"{name}: the ZIP archive is not a Word document (no word/document.xml).", 415
                    )
        except zipfile.BadZipFile:
            raise UploadError(f"{name}: the content is not a DOCX file (broken ZIP archive).", 415) from None
        return
    if suffix in _TEXT_FORMATS or suffix not in (".pdf", ".docx"):
        head = data[:65536]
        if head.startswith(
            (b"%PDF-", b"PK\x03\x04", b"\x7fELF", b"MZ", b"\x89PNG", b"\xff\xd8\xff", b"GIF8")
        ):
            raise UploadError(f"{name}: the content is binary, not the text a '{suffix}' file holds.", 415)
        if b"\x00" in head and not head.startswith((b"\xff\xfe", b"\xfe\xff")):
            raise UploadError(f"{name}: the content is binary (NUL bytes), not text.", 415)
