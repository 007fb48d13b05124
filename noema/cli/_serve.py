"""``noema serve``: the HTTP API (REST + JSON, OpenAPI, MCP) over the minds of one store.

The minds served are those ``--mind`` names and those the tokens file grants
(without either: the global ``--mind``). Each is opened once, before anything
listens, so a bad store or mind is a one-line error; the server closes them when
it stops (SIGINT, SIGTERM). Without ``--tokens`` it serves without auth, and
only on a loopback address. Either way it answers only requests sent to a
``Host`` it knows: loopback names and its own address, plus ``--allow-host``.
Clients may subscribe minds to peers only with ``--allow-federation`` (minds
their token opens, stores at ``--peer-url``).
"""

from __future__ import annotations

import argparse
import socket
from typing import Any

from noema.cli._common import EXIT_OK, server_rights
from noema.config import Settings
from noema.embeddings import load_embedder
from noema.errors import RuntimeFailure, UsageError
from noema.memory.recall.rerank import load_reranker
from noema.mind import Mind

__all__ = ["cmd_serve"]


def cmd_serve(args: argparse.Namespace) -> int:
    """``noema serve``: serve the minds over HTTP until interrupted."""
    from noema.http.auth import AllowedHosts, add_token, is_loopback, read_tokens

    if args.new_token is not None:
        if args.tokens is None:
            raise UsageError("serve: --new-token needs --tokens FILE to add the grant to")
        token = add_token(args.tokens, args.new_token)
        print(token)
        return EXIT_OK
    if not 0 <= args.port <= 65_535:
        raise UsageError(f"serve: --port is 0 to 65535, got {args.port}")
    if args.tokens is None and not is_loopback(args.host):
        raise UsageError(
            f"serve: refusing to serve {args.host} without auth: pass --tokens FILE "
            "(make one with --new-token MIND)"
        )
    AllowedHosts(args.host, args.allow_hosts)  # a bad --allow-host fails before anything opens
    rights = server_rights(args, "serve")
    tokens = None if args.tokens is None else read_tokens(args.tokens)
    settings = Settings.from_env()
    names = list(dict.fromkeys([*args.serve_minds, *(tokens.minds if tokens else [])]))
    if not names:
        names = [args.mind or settings.mind]
    sock = _listen(args.host, args.port)
    minds: dict[str, Mind] = {}
    app = None
    try:
        minds = _open(args, settings, names)
        from noema.http.app import create_app, serve

        host, port = sock.getsockname()[:2]
        shown = f"[{host}]" if ":" in host else host
        auth = f"tokens from {args.tokens}" if tokens is not None else "none (loopback only)"

        def ready() -> None:
            print(
                f"noema: serving {', '.join(names)} on http://{shown}:{port} (auth: {auth})",
                flush=True,
            )

        app = create_app(
            minds,
            tokens=tokens,
            host=args.host,
            allow_hosts=args.allow_hosts,
            on_ready=ready,
            allow_federation=rights.federate,
            peer_urls=rights.peer_urls or (),
        )
        serve(app, sock, access_log=args.access_log)
    finally:
        sock.close()
        if app is not None:
            app.state.minds.close()  # closed already when the server ran
        else:
            for mind in minds.values():
                mind.close()
    return EXIT_OK


def _listen(host: str, port: int) -> socket.socket:
    from noema.http.app import listen

    try:
        return listen(host, port)
    except OSError as exc:
        raise RuntimeFailure(f"serve: cannot listen on {host}:{port}: {exc.strerror}") from None


def _open(args: argparse.Namespace, settings: Settings, names: list[str]) -> dict[str, Mind]:
    """Open every mind, sharing one embedder and one reranker; all or none."""
    embedder: Any = load_embedder(args.embedder or settings.embedder)
    reranker: Any = load_reranker(settings.reranker)
    url = args.db or settings.url()
    opened: dict[str, Mind] = {}
    try:
        for name in names:
            opened[name] = Mind.open(
                url,
                name,
                settings=settings,
                embedder=embedder if embedder is not None else "none",
                reranker=reranker if reranker is not None else "none",
            )
    except BaseException:
        for mind in opened.values():
            mind.close()
        raise
    return opened
