"""Metadata and access filters, pushed down into every search engine (pre-filtering).

Access is explicit: a Filter always names its Principal. The local command line acts as
``Principal.local_admin()`` (stated once, in cli/main.py); the Python API and the server must say
who is asking.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Principal:
    """Who is asking. ``admin`` reads everything (the local CLI's principal)."""

    user: str | None = None
    groups: tuple[str, ...] = ()
    admin: bool = False

    @classmethod
    def local_admin(cls) -> Principal:
        return cls(user=None, groups=(), admin=True)

    @classmethod
    def anonymous(cls) -> Principal:
        return cls(user=None, groups=(), admin=False)

    def acl_keys(self) -> tuple[str, ...]:
        """The ACL entries this principal matches: ``user:NAME``, ``group:NAME`` and ``public``."""
        keys = [f"group:{g}" for g in self.groups]
        if self.user:
            keys.append(f"user:{self.user}")
        keys.append(PUBLIC)
        return tuple(keys)

    @property
    def label(self) -> str:
        """How traces and logs name the principal."""
        if self.admin and not self.user:
            return "local-admin"
        return f"user:{self.user}" if self.user else "anonymous"


#: an ACL entry that lets every principal read a document, anonymous ones included
PUBLIC = "public"


@dataclass(frozen=True)
class Filter:
    """Which documents a search may see. Empty fields do not restrict; the principal always does.

    A document with no ACL is readable by every signed-in principal (not by anonymous ones: they
    see only documents marked ``public``); otherwise the principal must match one of its entries
    (or be an admin).
    """

    principal: Principal
    tags: dict[str, str] = field(default_factory=dict)
    source_prefix: str | None = None
    formats: tuple[str, ...] = ()
    modified_after: float | None = None
    modified_before: float | None = None
    collections: tuple[str, ...] = ()
    #: only these document ids
    documents: tuple[str, ...] = ()

    @classmethod
    def admin(cls) -> Filter:
        """No restriction: the local administrator's view (maintenance and evaluation code)."""
        return cls(principal=Principal.local_admin())

    @property
    def is_empty(self) -> bool:
        return (
            not self.tags
            and self.source_prefix is None
            and not self.formats
            and self.modified_after is None
            and self.modified_before is None
            and not self.collections
            and not self.documents
            and self.principal.admin
        )
