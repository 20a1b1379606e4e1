"""Files written whole or not at all: a concurrent reader never sees half of one."""

from __future__ import annotations

import os
from pathlib import Path


def write_atomically(path: Path, data: bytes | str, prefix: str) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder, renamed over it;
    the temporary file (named ``prefix``...) is removed when anything fails."""
    import tempfile  # only the process that writes a file pays for the module

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=prefix, dir=path.parent)
    try:
        if isinstance(data, str):
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(data)
        else:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
