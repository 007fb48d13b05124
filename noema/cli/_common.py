"""What the commands share: exit statuses and opening the mind.

The mind is imported when a command opens it: :mod:`noema.cli` reads the exit
statuses from here, and ``noema --help`` must not load the mind.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from noema.access import Caller
    from noema.mind import Mind

__all__ = ["EXIT_FAILURE", "EXIT_OK", "EXIT_USAGE", "last_seq", "open_mind", "server_rights"]

EXIT_OK, EXIT_FAILURE, EXIT_USAGE = 0, 1, 2


def open_mind(args: argparse.Namespace) -> Mind:
    """Open the mind the global options (or the environment) name.

    Args:
        args: the parsed command line; ``--db``, ``--mind`` and ``--embedder`` are
            read, and a command's ``--redact-secrets`` makes this mind's write
            policy redact credentials whatever its configuration says.

    Returns:
        The open mind; the caller closes it (``with open_mind(args) as mind``).
    """
    from noema.config import Settings
    from noema.mind import Mind

    settings = Settings.from_env()
    name = args.mind or settings.mind
    config = None
    if getattr(args, "redact_secrets", False):
        base = settings.mind_config(name)
        config = base.model_copy(
            update={"policy": base.policy.model_copy(update={"secrets": "redact"})}
        )
    return Mind.open(
        args.db or settings.url(),
        name,
        settings=settings,
        config=config,
        embedder=getattr(args, "embedder", None),
    )


def server_rights(args: argparse.Namespace, command: str) -> Caller:
    """What a server's clients may do beyond their minds: ``--allow-federation``, ``--peer-url``.

    Raises:
        UsageError: ``--peer-url`` without ``--allow-federation``.
    """
    from noema.access import serving
    from noema.errors import UsageError

    if args.peer_urls and not args.allow_federation:
        raise UsageError(f"{command}: --peer-url needs --allow-federation")
    return serving(allow_federation=args.allow_federation, peer_urls=args.peer_urls)


def last_seq(mind: Mind) -> int:
    """The sequence number of the mind's newest event (0 when it has none)."""
    newest = mind.events(newest_first=True, limit=1)
    return int(newest[0].seq or 0) if newest else 0
