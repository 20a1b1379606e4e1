"""Passwords out of what is shown: database URLs and ``password=`` parameters in messages, settings
and reports (``citeline config show``, PostgreSQL errors, evaluation reports)."""

from __future__ import annotations

import re
from urllib.parse import unquote

# Bounded scheme and password: linear time on any text (an unbounded scheme tried from every
# letter of a long word backtracks quadratically; tests/reliability/regex_audit.py).
_URL_PASSWORD = re.compile(r"(?P<head>[a-zA-Z][\w+.-]{0,31}://[^:/@\s]*):(?P<secret>[^@\s]{0,1024})@")
_PARAM_PASSWORD = re.compile(r"(?P<head>\bpassword\s*=\s*)(?P<secret>'[^']*'|[^\s&]+)", re.IGNORECASE)


def redact_url(text: str, secret_of: str | None = None) -> str:
    """``text`` with any password removed: in URLs (user:***@host), ``password=`` parameters, and
    the password of the URL ``secret_of`` wherever it appears (an error message quoting it)."""
    if secret_of:
        for pattern in (_URL_PASSWORD, _PARAM_PASSWORD):
            for m in pattern.finditer(secret_of):
                secret = m.group("secret").strip("'")
                for form in {secret, unquote(secret)}:
                    if len(form) >= 1:
                        text = text.replace(form, "***")
    text = _URL_PASSWORD.sub(lambda m: m.group("head") + (":***@" if m.group("secret") else ":@"), text)
    return _PARAM_PASSWORD.sub(lambda m: m.group("head") + "***", text)
