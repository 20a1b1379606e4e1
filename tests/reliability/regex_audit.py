"""Catastrophic backtracking audit of every module-level regular expression in src/citeline.

Run as a script (the test runs it in a subprocess, so a regex that never returns is killed with
the process, and the last "start" line names it): imports every citeline module, collects each
compiled pattern held by a module global (or inside a tuple, list, set or dict there), and searches
adversarial strings of length N built from generic characters and from the pattern's own literal
characters. Prints one JSON line per pattern: its name, the slowest string and the CPU seconds it took.

    python tests/reliability/regex_audit.py N
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import re
import sys
import time
from typing import Any

GENERIC = " \t\n\r.-_/:,;#*+|[](){}<>\"'`~=!?@$%^&\\aA1é\u00a0\u3000［】０\ufffe"


def patterns() -> dict[tuple[Any, int], str]:
    import citeline

    found: dict[tuple[Any, int], str] = {}
    for info in sorted(pkgutil.walk_packages(citeline.__path__, "citeline."), key=lambda i: i.name):
        if info.name.endswith("__main__"):
            continue
        try:
            module = importlib.import_module(info.name)
        except ImportError:  # an optional extra that is not installed
            continue
        for name, value in sorted(vars(module).items()):
            values = [value]
            if isinstance(value, tuple | list | set | frozenset):
                values = list(value)
            elif isinstance(value, dict):
                values = [*value.keys(), *value.values()]
            for v in values:
                if isinstance(v, re.Pattern) and v.__class__ is re.Pattern:
                    found.setdefault((v.pattern, v.flags), f"{info.name}.{name}")
    return found


def adversarial(pattern: re.Pattern[Any], n: int) -> list[tuple[str, Any]]:
    """(label, subject) pairs: runs of one character, alternations of two, a run then an odd end."""
    source = pattern.pattern if isinstance(pattern.pattern, str) else pattern.pattern.decode("latin-1")
    literal = {ch for ch in source if ch.isprintable() and ch not in "\\^$"}
    chars = sorted(set(GENERIC) | literal)
    subjects: list[tuple[str, str]] = []
    for c in chars:
        subjects.append((f"{c!r}*n", c * n))
        subjects.append((f"{c!r}*n+'!'", c * n + "\x00!"))
        subjects.append((f"('a'+{c!r})*n", ("a" + c) * (n // 2)))
        subjects.append((f"('1'+{c!r})*n", ("1" + c) * (n // 2)))
        subjects.append((f"'a'+' '*n+{c!r}", "a" + " " * n + c))
    words = ["a-", "a.", "1.", "1,", "a1", "A1-", "[1", "[1,", "[1 ", "<a ", "</", "\n\n", " \n", "ab "]
    subjects += [(f"{w!r}*n", w * (n // len(w))) for w in words]
    if isinstance(pattern.pattern, bytes):
        return [(label, s.encode("utf-8", "surrogatepass")) for label, s in subjects]
    return subjects


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    for (_source, _flags), where in patterns().items():
        pattern = re.compile(_source, _flags)
        print(json.dumps({"start": where}), flush=True)
        worst, worst_label = 0.0, ""
        for label, subject in adversarial(pattern, n):
            # CPU seconds, not wall-clock: backtracking burns CPU, and a loaded machine stretches
            # wall time (make fuzz at load 15 measured 2.3 s wall for a linear 0.11 s search)
            t = time.process_time()
            for _ in pattern.finditer(subject):
                pass
            elapsed = time.process_time() - t
            if elapsed > worst:
                worst, worst_label = elapsed, label
        print(json.dumps({"pattern": where, "worst_s": round(worst, 4), "subject": worst_label}), flush=True)


if __name__ == "__main__":
    main()
