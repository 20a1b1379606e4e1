"""atheris: the settings loader on arbitrary environment variables, stored settings and toml files."""

from __future__ import annotations

import contextlib
import sys
import tempfile
from pathlib import Path

import atheris

with atheris.instrument_imports(include=["citeline"]):
    from citeline.errors import ConfigError
    from citeline.settings import SETTINGS_FILE, load_settings, setting_fields

NAMES = [f.name for f in setting_fields() if f.name != "index"]
FOLDER = Path(tempfile.mkdtemp(prefix="citeline-fuzz-settings-"))


def one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    environ, stored = {}, {}
    for _ in range(fdp.ConsumeIntInRange(0, 3)):
        name = NAMES[fdp.ConsumeIntInRange(0, len(NAMES) - 1)] if fdp.ConsumeBool() else fdp.ConsumeUnicode(8)
        environ[f"CITELINE_{name.upper()}"] = fdp.ConsumeUnicodeNoSurrogates(16)
    for _ in range(fdp.ConsumeIntInRange(0, 3)):
        name = NAMES[fdp.ConsumeIntInRange(0, len(NAMES) - 1)]
        stored[name] = [fdp.ConsumeUnicodeNoSurrogates(8), fdp.ConsumeInt(4), fdp.ConsumeFloat(), None][
            fdp.ConsumeIntInRange(0, 3)
        ]
    (FOLDER / SETTINGS_FILE).write_text(fdp.ConsumeUnicodeNoSurrogates(512), encoding="utf-8")
    with contextlib.suppress(ConfigError):  # a refusal with its reason is an answer
        load_settings(FOLDER, stored=stored, environ=environ)


if __name__ == "__main__":
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()
