"""Joining a Ray cluster through Ray Client (``--workers ray://HOST:PORT``), token authentication included.

The pinned Ray (2.60) authenticates with a token: a head started by ``ray start --head`` turns it
on when ``RAY_AUTH_MODE=token`` is set, or by itself whenever a token exists where Ray looks for one
(``RAY_AUTH_TOKEN``, the file ``RAY_AUTH_TOKEN_PATH`` names, ``~/.ray/auth_token``; every local
``ray.init()``, a ``--workers local:N`` run among them, writes ``~/.ray/auth_token``). A Ray Client
given an explicit address does not turn it on by itself: it calls without the token, the head
refuses every call ("Authentication required but no authorization header provided") and the client
gives up after about 100 s with "ray client connection timeout".

So before connecting, citeline asks the head whether it answers (a PING, Ray Client's own first
call) without a token; when it does not, the token found here (in those same places) is offered,
and if the head takes it this process runs Ray in token mode for the run. A head that cannot be
reached, or refuses, is a clear error (exit code 4) naming the address and what to check.
"""

from __future__ import annotations

import importlib
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from citeline.errors import WorkersUnavailableError

#: Ray's default Ray Client port (``ray start --head --ray-client-server-port``)
DEFAULT_CLIENT_PORT = 10001
#: seconds to wait for the head's port and its answer to one call
PROBE_TIMEOUT_S = 10.0

_HOW_TO_START = (
    "Check that `ray start --head` runs there with its client port open to this machine "
    "(--ray-client-server-port, {port} here) and the same Ray and Python versions as here"
)
_TOKEN_HELP = (
    "put the head's token (`ray get-auth-token` on the head, or its ~/.ray/auth_token) in "
    "~/.ray/auth_token here, or in RAY_AUTH_TOKEN, or in a file named by RAY_AUTH_TOKEN_PATH"
)


def client_address(spec: str) -> tuple[str, int]:
    """(host, port) of ``ray://HOST[:PORT]``."""
    hostport = spec.removeprefix("ray://")
    host, sep, port = hostport.rpartition(":")
    if not sep or not port.isdigit():
        return hostport.strip("[]"), DEFAULT_CLIENT_PORT
    return host.strip("[]"), int(port)


def local_token() -> tuple[str, str] | None:
    """(token, where it was found), looked for where Ray looks, in Ray's order; None if none."""
    given = os.environ.get("RAY_AUTH_TOKEN", "").strip()
    if given:
        return given, "RAY_AUTH_TOKEN"
    named = os.environ.get("RAY_AUTH_TOKEN_PATH")
    places = [(Path(named), f"RAY_AUTH_TOKEN_PATH ({named})")] if named else []
    places.append((Path.home() / ".ray" / "auth_token", "~/.ray/auth_token"))
    for path, where in places:
        try:
            token = path.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError):
            continue
        if token:
            return token, where
    return None


def probe(host: str, port: int, token: str | None) -> str:
    """How the head answers a PING: "ok", "unauthenticated" (no token, or not its token), or
    "unreachable" (nothing answers gRPC there)."""
    import grpc

    # Ray Client's own protocol (generated code, untyped): the PING its client sends first
    messages: Any = importlib.import_module("ray.core.generated.ray_client_pb2")
    services: Any = importlib.import_module("ray.core.generated.ray_client_pb2_grpc")

    target = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    channel = grpc.insecure_channel(target)
    try:
        grpc.channel_ready_future(channel).result(timeout=PROBE_TIMEOUT_S)
        ping = messages.ClusterInfoRequest(type=messages.ClusterInfoType.PING)
        metadata = [("authorization", f"Bearer {token}")] if token else None
        services.RayletDriverStub(channel).ClusterInfo(ping, timeout=PROBE_TIMEOUT_S, metadata=metadata)
        return "ok"
    except grpc.FutureTimeoutError:
        return "unreachable"
    except grpc.RpcError as exc:
        return "unauthenticated" if exc.code() == grpc.StatusCode.UNAUTHENTICATED else "unreachable"
    finally:
        channel.close()


def _reachable(host: str, port: int) -> str | None:
    """None when something listens at host:port, else why not ("connection refused")."""
    try:
        with socket.create_connection((host, port), timeout=PROBE_TIMEOUT_S):
            return None
    except OSError as exc:
        return (exc.strerror or str(exc) or type(exc).__name__).lower()


def _token_mode(on: bool, previous: str | None = None) -> None:
    """Turn Ray's token mode on for this process (or back to ``previous``). Ray reads
    RAY_AUTH_MODE into its C++ config, which is read again here (as `ray start` itself does)."""
    if on:
        os.environ["RAY_AUTH_MODE"] = "token"
    elif previous is None:
        os.environ.pop("RAY_AUTH_MODE", None)
    else:
        os.environ["RAY_AUTH_MODE"] = previous
    try:
        raylet: Any = importlib.import_module("ray._raylet")
        raylet.Config.initialize("")
    except (ImportError, AttributeError):  # another Ray: it reads the variable when it starts
        pass


@contextmanager
def client_auth(spec: str) -> Iterator[None]:
    """Inside: Ray Client can join ``spec`` (token mode on when the head wants a token). Raises
    WorkersUnavailableError when the head cannot be reached or refuses the token."""
    host, port = client_address(spec)
    why = _reachable(host, port)
    if why is not None:
        raise WorkersUnavailableError(
            f"Cannot reach the Ray cluster at {spec}: {why}. {_HOW_TO_START.format(port=port)}."
        )
    explicit = os.environ.get("RAY_AUTH_MODE")
    answer = "ok" if explicit is not None else probe(host, port, None)  # RAY_AUTH_MODE: Ray follows it
    if answer == "unreachable":
        raise WorkersUnavailableError(
            f"Something listens at {spec} but does not answer as a Ray Client server. "
            f"{_HOW_TO_START.format(port=port)}."
        )
    if answer == "ok":
        yield
        return
    found = local_token()
    if found is None:
        raise WorkersUnavailableError(
            f"The Ray cluster at {spec} requires token authentication and no token was found here: "
            f"{_TOKEN_HELP}, then run again."
        )
    token, where = found
    if probe(host, port, token) == "unauthenticated":
        raise WorkersUnavailableError(
            f"The Ray cluster at {spec} refused the token in {where}: it is not the head's token; "
            f"{_TOKEN_HELP}, then run again."
        )
    _token_mode(True)
    try:
        yield
    finally:
        _token_mode(False, explicit)


def connection_failed(spec: str, exc: BaseException) -> WorkersUnavailableError:
    """Ray Client gave up (a timeout, a server that went away): what to check."""
    _host, port = client_address(spec)
    return WorkersUnavailableError(
        f"Could not connect to the Ray cluster at {spec} ({exc}). {_HOW_TO_START.format(port=port)}; "
        f"a head with token authentication needs its token here too: {_TOKEN_HELP}."
    )
