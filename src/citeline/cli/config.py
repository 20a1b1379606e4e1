"""`citeline config` (effective settings and where each came from) and `citeline backends`."""

from __future__ import annotations

import json
from typing import Any

import click

from citeline.cli.output import json_option, open_kb
from citeline.registry import KINDS, registry
from citeline.settings import load_settings, toml_value
from citeline.url_secrets import redact_url


def _redact(value: Any) -> Any:
    """Database URLs may carry a password: never print it."""
    return redact_url(value) if isinstance(value, str) else value


@click.group("config", invoke_without_command=True)
@json_option()
@click.pass_context
def config_group(ctx: click.Context, as_json: bool) -> None:
    """Print the effective settings and where each value came from (default, index, toml, env, flag)."""
    if ctx.invoked_subcommand is not None:
        return
    index = ctx.obj["index"]
    try:
        with open_kb(index, create=False, read_only=True) as kb:
            settings = kb.settings
    except Exception:  # no index yet: the settings it would get
        settings = load_settings(index)
    rows = [{**r, "value": _redact(r["value"])} for r in settings.effective()]
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    width = max(len(r["key"]) for r in rows)
    for r in rows:
        click.echo(f"{r['key']:<{width}}  {toml_value(r['value']):<24}  # {r['origin']}")


@config_group.command("set")
@click.argument("key")
@click.argument("value")
@click.pass_context
def config_set(ctx: click.Context, key: str, value: str) -> None:
    """Store a setting in the index itself (the toml file, environment and flags still override it)."""
    with open_kb(ctx.obj["index"], create=False) as kb:
        from citeline.settings import _coerce  # one parser for every layer

        kb.save_settings({key: _coerce(key, value, "config set")})
        click.echo(f"{key} = {toml_value(getattr(kb.settings, key))}  (effective: {kb.settings.origin(key)})")


@config_group.command("unset")
@click.argument("key")
@click.pass_context
def config_unset(ctx: click.Context, key: str) -> None:
    """Remove a setting stored in the index."""
    with open_kb(ctx.obj["index"], create=False) as kb:
        kb.save_settings({}, remove=[key])
        click.echo(f"{key} = {toml_value(getattr(kb.settings, key))}  ({kb.settings.origin(key)})")


@click.command("backends")
@json_option()
def backends(as_json: bool) -> None:
    """List every registered backend by kind (plugins included)."""
    rows = [
        {
            "kind": b.kind,
            "spec": b.spec,
            "extra": b.extra,
            "summary": b.summary,
            "extensions": list(b.extensions),
        }
        for kind in KINDS
        for b in registry.backends(kind)
    ]
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    for r in rows:
        extra = f" [pip install 'citeline[{r['extra']}]']" if r["extra"] else ""
        exts = f" ({' '.join(r['extensions'])})" if r["extensions"] else ""
        click.echo(f"{r['kind']:<10} {r['spec']:<22} {r['summary']}{exts}{extra}")
