"""The commands that hand the mind to another face: mcp, tui and shell.

``run`` and ``observe``, which drive the workspace, are in :mod:`noema.cli._run_observe`.
"""

from __future__ import annotations

import argparse
import sys

from noema.cli._common import EXIT_OK, open_mind, server_rights
from noema.errors import InvalidInput, UsageError

__all__ = ["cmd_mcp", "cmd_shell", "cmd_tui"]


def cmd_mcp(args: argparse.Namespace) -> int:
    """``noema mcp``: serve the mind's memory tools over MCP on stdio.

    The client is one caller (``noema.access``): it may subscribe the mind to
    peers only with ``--allow-federation`` (minds of the store, stores at
    ``--peer-url``).
    """
    from noema.mcp.server import build_server

    rights = server_rights(args, "mcp")
    with open_mind(args) as mind:
        mind.caller = rights
        build_server(mind).run("stdio")
    return EXIT_OK


def cmd_tui(args: argparse.Namespace) -> int:
    """``noema tui``: inspect and correct the mind in a terminal UI."""
    if not 0.05 <= args.poll <= 3600:
        raise InvalidInput(f"--poll: between 0.05 and 3600 seconds, got {args.poll}")
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise UsageError("tui: needs an interactive terminal")
    args.db = args.tui_db or args.db
    args.mind = args.tui_mind or args.mind
    from tui.app import NoemaApp

    with open_mind(args) as mind:
        NoemaApp(mind, mode=args.screen, poll_seconds=args.poll).run()
    return EXIT_OK


def cmd_shell(args: argparse.Namespace) -> int:
    """``noema shell``: an interactive remember/recall session."""
    from noema.cli.shell import Shell

    with open_mind(args) as mind:
        Shell(mind).cmdloop()
    return EXIT_OK
