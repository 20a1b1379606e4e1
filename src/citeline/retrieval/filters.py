"""Metadata and access filters, pushed down into every search engine (pre-filtering)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Principal:
    """Who is asking. ``admin`` reads everything (the local CLI default)."""

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
        """The ACL entries this principal matches: ``user:NAME`` and ``group:NAME``."""
        keys = [f"group:{g}" for g in self.groups]
        if self.user:
            keys.append(f"user:{self.user}")
        return tuple(keys)


@dataclass(frozen=True)
class Filter:
    """Which documents a search may see. Empty fields do not restrict.

    A document with no ACL is readable by all principals; otherwise the principal
    must match one of its entries (or be the local admin).
    """

    tags: dict[str, str] = field(default_factory=dict)
    source_prefix: str | None = None
    formats: tuple[str, ...] = ()
    modified_after: float | None = None
    modified_before: float | None = None
    principal: Principal = field(default_factory=Principal.local_admin)

    @property
    def is_empty(self) -> bool:
        return (
            not self.tags
            and self.source_prefix is None
            and not self.formats
            and self.modified_after is None
            and self.modified_before is None
            and self.principal.admin
        )
