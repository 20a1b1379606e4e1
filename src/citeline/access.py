"""API keys and roles: who a request is, for the server, the MCP server and the CLI alike.

A key is shown once, when it is created, and stored only as HMAC-SHA256 under the index's own
random secret (``store.secret()``): a copy of the database without that secret's row, or a log
line, cannot be turned back into a key, and a key from one index means nothing in another. A key
is looked up by that hash and the stored hash is compared again in constant time
(``hmac.compare_digest``). Keys are never logged; ``ApiKey.id`` names a key in listings. A key
may have an expiry (``citeline keys create --expires 30d``); after it, the key is refused (401).

Roles: ``reader`` asks and searches; ``writer`` also uploads and deletes (its own uploads, or what
its groups own); ``admin`` also manages keys and reads ``/metrics`` and every trace. Every role
reads documents through the key's principal (user and groups), so ACLs apply to admins too.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from citeline.errors import AccessError, CitelineError
from citeline.filters import Principal

if TYPE_CHECKING:  # the store contract imports numpy: not needed to list the CLI's commands
    from citeline.index.base import ApiKey, Store

ROLES = ("reader", "writer", "admin")
#: what a role may do (each role includes the ones before it)
ROLE_RANK = {role: rank for rank, role in enumerate(ROLES)}
KEY_PREFIX = "cl_"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$")


class AuthenticationError(AccessError):
    """No key, or one that is wrong, revoked or unknown (HTTP 401)."""


class PermissionDeniedError(AccessError):
    """A valid key whose role may not do this (HTTP 403)."""


@dataclass(frozen=True)
class Caller:
    """An authenticated request: its principal (ACLs), role and key id (never the key)."""

    principal: Principal
    role: str
    key_id: str | None = None

    @property
    def user(self) -> str | None:
        return self.principal.user

    def can(self, role: str) -> bool:
        return ROLE_RANK[self.role] >= ROLE_RANK[role]

    def require(self, role: str, action: str) -> None:
        if not self.can(role):
            raise PermissionDeniedError(
                f"{action} needs the {role} role; this key ({self.principal.label}) is a {self.role}."
            )

    @classmethod
    def anonymous(cls) -> Caller:
        return cls(Principal.anonymous(), "reader", None)


def check_name(kind: str, value: str) -> str:
    value = value.strip()
    if not _NAME.match(value):
        raise CitelineError(
            f"{kind} '{value}' is not valid: use 1-64 letters, digits, '.', '_', '@' or '-', "
            "starting with a letter or digit."
        )
    return value


def key_hash(store: Store, key: str) -> str:
    return hmac.new(store.secret(), key.encode("utf-8"), hashlib.sha256).hexdigest()


def create_key(
    store: Store,
    user: str,
    groups: tuple[str, ...] = (),
    role: str = "reader",
    label: str = "",
    expires_at: float | None = None,
) -> tuple[str, ApiKey]:
    """A new key for ``user``: (the key, shown once; its stored record). ``expires_at`` (Unix
    time): the key stops working then (``parse_expiry`` reads "30d" or a date)."""
    if role not in ROLES:
        raise CitelineError(f"Role '{role}' is not one of {', '.join(ROLES)}.")
    if expires_at is not None and expires_at <= time.time():
        raise CitelineError(f"The expiry {expiry_text(expires_at)} is already past.")
    user = check_name("User", user)
    groups = tuple(dict.fromkeys(check_name("Group", g) for g in groups if g.strip()))
    key_id = secrets.token_hex(6)
    key = f"{KEY_PREFIX}{key_id}_{secrets.token_urlsafe(32)}"
    from citeline.index.base import ApiKey

    record = ApiKey(
        id=key_id,
        user=user,
        key_hash=key_hash(store, key),
        groups=groups,
        role=role,
        created_at=time.time(),
        label=label,
        meta={} if expires_at is None else {"expires_at": expires_at},
    )
    store.add_api_key(record)
    return key, record


def principal_of(record: ApiKey) -> Principal:
    return Principal(user=record.user, groups=tuple(record.groups))


def authenticate(store: Store, key: str | None) -> Caller:
    """The caller a key stands for; AuthenticationError for a missing, wrong or revoked one."""
    if not key:
        raise AuthenticationError("No API key: send 'Authorization: Bearer KEY' (citeline keys create).")
    if len(key) > 200 or not key.isascii():
        raise AuthenticationError("The API key is not valid.")
    digest = key_hash(store, key)
    record = store.find_api_key(digest)
    if record is None or not hmac.compare_digest(record.key_hash, digest):
        raise AuthenticationError("The API key is not valid.")
    if record.revoked_at is not None:
        raise AuthenticationError("The API key was revoked.")
    if record.expired():
        raise AuthenticationError(f"The API key expired on {expiry_text(record.expires_at)}.")
    return Caller(principal_of(record), record.role, record.id)


def revoke(store: Store, key_id: str) -> bool:
    return store.revoke_api_key(key_id)


@dataclass(frozen=True)
class ApiKeys:
    """An index's API keys, as ``KnowledgeBase.keys`` hands them to the CLI and the server."""

    store: Store

    def create(
        self,
        user: str,
        groups: tuple[str, ...] = (),
        role: str = "reader",
        *,
        label: str = "",
        expires_at: float | None = None,
    ) -> tuple[str, ApiKey]:
        return create_key(self.store, user, groups, role, label, expires_at)

    def records(self) -> list[ApiKey]:
        """Every key's record, revoked and expired ones too (never a key itself)."""
        return self.store.api_keys()

    def revoke(self, key_id: str) -> bool:
        return revoke(self.store, key_id)

    def authenticate(self, key: str | None) -> Caller:
        return authenticate(self.store, key)


# Hand-written: a listing's view of the stored record (no hash; expiry read from meta, as of now).
def key_json(record: ApiKey) -> dict[str, object]:
    """A key as listings show it: never the key or its hash."""
    return {
        "id": record.id,
        "user": record.user,
        "groups": list(record.groups),
        "role": record.role,
        "created_at": record.created_at,
        "revoked_at": record.revoked_at,
        "label": record.label,
        "active": record.active,
        "expires_at": record.expires_at,
        "expired": record.expired(),
    }


_DURATION = re.compile(r"^(\d+)\s*([mhdw])$")
_UNIT_SECONDS = {"m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_expiry(text: str, now: float | None = None) -> float:
    """When a key given ``--expires TEXT`` stops working (Unix time): a duration from now ("90m",
    "12h", "30d", "2w") or a date or time in UTC ("2031-01-31", "2031-01-31T18:00")."""
    value = text.strip().lower()
    start = time.time() if now is None else now
    if m := _DURATION.match(value):
        if int(m.group(1)) == 0:
            raise CitelineError(f"Expiry '{text}' is zero: give a duration such as 30d.")
        return start + int(m.group(1)) * _UNIT_SECONDS[m.group(2)]
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise CitelineError(
            f"Expiry '{text}' is neither a duration (90m, 12h, 30d, 2w) nor a date (2031-01-31, "
            "2031-01-31T18:00, UTC)."
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.timestamp()


def expiry_text(expires_at: float | None) -> str:
    if expires_at is None:
        return "never"
    return datetime.fromtimestamp(expires_at, UTC).strftime("%Y-%m-%d %H:%M UTC")
