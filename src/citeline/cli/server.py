"""`citeline serve`, `citeline keys` and `citeline mcp`: the server side of the command line.

The server's dependencies (the `server` extra) are imported only when these commands run, so
`citeline --help` and every other command stay as fast as before.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from citeline.access import ROLES, expiry_text, key_json, parse_expiry
from citeline.cli.output import json_option, open_kb
from citeline.errors import CitelineError, MissingExtraError


def _need_server() -> None:
    needed = (
        ("fastapi", "fastapi"),
        ("uvicorn", "uvicorn"),
        ("mcp", "mcp"),
        ("fastapi_offline", "fastapi-offline"),
    )
    for module, package in needed:
        try:
            __import__(module)
        except ImportError:
            raise MissingExtraError("The server", package, "server") from None


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port", default=8000, show_default=True, type=click.IntRange(0, 65535), help="Port (0 = any free one)."
)
@click.option(
    "--allow-anonymous", is_flag=True, help="Answer requests without a key: read-only, public documents only."
)
@click.option("--no-mcp", is_flag=True, help="Do not serve the MCP endpoint at /mcp.")
@click.pass_context
def serve(ctx: click.Context, host: str, port: int, allow_anonymous: bool, no_mcp: bool) -> None:
    """Serve the HTTP API (OpenAPI docs at /docs), the web page (/) and MCP (/mcp)."""
    _need_server()
    import uvicorn

    from citeline.server.app import create_app

    kb = open_kb(ctx.obj["index"], create=False)
    app = create_app(kb, allow_anonymous=allow_anonymous or None, host=host, mcp=not no_mcp)
    state = app.state.citeline
    if not state.kb.keys.records() and not state.allow_anonymous:
        click.echo(
            "note: this index has no API keys yet; create one with `citeline keys create --user NAME`",
            err=True,
        )

    if state.kb.store.pending_embedder() is not None and not state.kb.store.read_only:
        from citeline.cli.embed import start_background

        # progressive indexing: the full vectors are filled in beside the server (a process of its
        # own, which exits at once when another pass holds the index)
        pid = start_background(kb.settings.index)
        click.echo(f"citeline embed: full vectors in the background (pid {pid})", err=True)

    class Announce(uvicorn.Server):
        def _announce(self) -> None:
            for server in self.servers:
                for sock in server.sockets:
                    bound = sock.getsockname()
                    shown = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
                    click.echo(
                        f"citeline: serving {kb.settings.index} at http://{shown}:{bound[1]}/ "
                        f"(API docs /docs, MCP /mcp)",
                        err=True,
                    )
                    sys.stderr.flush()
                    return

        async def startup(self, sockets: list[object] | None = None) -> None:  # type: ignore[override]
            await super().startup(sockets=sockets)  # type: ignore[arg-type]
            self._announce()

    config = uvicorn.Config(
        app, host=host, port=port, log_level="warning", access_log=False, proxy_headers=False
    )
    try:
        Announce(config).run()
    finally:
        kb.close()


@click.group("keys", invoke_without_command=True)
@click.pass_context
def keys_group(ctx: click.Context) -> None:
    """API keys of the server and MCP: create, list (default), revoke."""
    if ctx.invoked_subcommand is None:
        ctx.invoke(keys_list)


@keys_group.command("create")
@click.option("--user", required=True, help="Who the key acts for (ACL entry user:NAME).")
@click.option("--groups", default="", help="Comma-separated groups (ACL entries group:NAME).")
@click.option(
    "--role", type=click.Choice(ROLES), default="reader", show_default=True, help="What the key may do."
)
@click.option("--admin", is_flag=True, help="Same as --role admin.")
@click.option("--label", default="", help="A note shown in `citeline keys list`.")
@click.option(
    "--expires",
    metavar="WHEN",
    help="When the key stops working: a duration (90m, 12h, 30d, 2w) or a UTC date (2031-01-31). "
    "Default: never.",
)
@json_option("Print the key and its record as JSON.")
@click.option("--quiet", is_flag=True, help="Print only the key.")
@click.pass_context
def keys_create(
    ctx: click.Context,
    user: str,
    groups: str,
    role: str,
    admin: bool,
    label: str,
    expires: str | None,
    as_json: bool,
    quiet: bool,
) -> None:
    """Create a key; it is printed once and stored only as a keyed hash."""
    expires_at = None if expires is None else parse_expiry(expires)
    with open_kb(ctx.obj["index"], create=True) as kb:
        key, record = kb.keys.create(
            user,
            tuple(g.strip() for g in groups.split(",")),
            "admin" if admin else role,
            label=label,
            expires_at=expires_at,
        )
    if as_json:
        click.echo(json.dumps({"key": key, **key_json(record)}, indent=2))
    elif quiet:
        click.echo(key)
    else:
        groups_text = ", ".join(record.groups) or "none"
        until = "" if record.expires_at is None else f", expires {expiry_text(record.expires_at)}"
        click.echo(
            f"Created key {record.id} for {record.user} (role {record.role}, groups: {groups_text}{until})."
        )
        click.echo("It is shown only now; store it somewhere safe:", err=True)
        click.echo(key)


@keys_group.command("list")
@json_option()
@click.option("--all", "show_all", is_flag=True, help="Include revoked and expired keys.")
@click.pass_context
def keys_list(ctx: click.Context, as_json: bool = False, show_all: bool = False) -> None:
    """Keys by id, user, groups, role and expiry (never the keys themselves)."""
    with open_kb(ctx.obj["index"], create=False) as kb:
        rows = [key_json(k) for k in kb.keys.records() if show_all or k.active]
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    if not rows:
        click.echo("No keys. `citeline keys create --user NAME` makes one.")
    for r in rows:
        state = "revoked" if r["revoked_at"] is not None else "expired" if r["expired"] else "active"
        expires = r["expires_at"]
        until = f"expires {expiry_text(expires)}" if isinstance(expires, float) else "no expiry"
        groups = ",".join(r["groups"]) or "-"  # type: ignore[arg-type]
        click.echo(
            f"{r['id']}  {r['user']:<16} {r['role']:<7} groups={groups:<20} {state:<7}  {until:<28} {r['label']}"
        )


@keys_group.command("revoke")
@click.argument("key_id")
@click.pass_context
def keys_revoke(ctx: click.Context, key_id: str) -> None:
    """Revoke a key by its id (from `citeline keys list`); it stops working at once."""
    with open_kb(ctx.obj["index"], create=False) as kb:
        if not kb.keys.revoke(key_id):
            raise CitelineError(f"No active key '{key_id}'. `citeline keys list` shows the ids.")
    click.echo(f"Revoked key {key_id}.")


@click.command("mcp")
@click.option("--key", help="The API key whose principal every tool call uses.")
@click.option(
    "--key-file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Read the key from this file.",
)
@click.pass_context
def mcp_command(ctx: click.Context, key: str | None, key_file: Path | None) -> None:
    """Serve the MCP tools (search, ask, show, list_documents) over stdio, as the key's principal."""
    _need_server()
    from citeline.server.mcp_tools import run_stdio
    from citeline.server.state import ServerState

    if key_file is not None:
        key = key_file.read_text(encoding="utf-8").strip()
    kb = open_kb(ctx.obj["index"], create=False)
    try:
        caller = kb.keys.authenticate(key)
        run_stdio(ServerState.build(kb), caller)
    finally:
        kb.close()


def register(main: click.Group) -> None:
    main.add_command(serve)
    main.add_command(keys_group)
    main.add_command(mcp_command)
