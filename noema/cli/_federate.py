"""``noema federate ACTION``: a mind's read-only subscriptions to other minds (ADR 0019).

``add`` subscribes to a peer mind of the same store (or of the store at
``--url``), ``remove`` ends a subscription, ``list`` shows them with the trust
in each, and ``feedback`` rates a peer's results, which moves that trust.
``noema recall`` then asks the peers too; a peer that cannot be read is one
``warning:`` line on stderr (:func:`peer_warnings`), and the recall goes on.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

from concepts import Peer
from noema import serialize
from noema.cli._derived import operate
from noema.errors import PeerUnavailable

__all__ = [
    "cmd_federate_add",
    "cmd_federate_feedback",
    "cmd_federate_list",
    "cmd_federate_remove",
    "peer_line",
    "peer_warnings",
]


@contextmanager
def peer_warnings() -> Iterator[None]:
    """Print each ``PeerUnavailable`` warning raised inside as one line on stderr.

    ``warning: peer NAME unavailable: REASON``; other warnings go on as they would.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", PeerUnavailable)
        yield
    for item in caught:
        if issubclass(item.category, PeerUnavailable):
            print(f"warning: {' '.join(str(item.message).split())}", file=sys.stderr)
        else:
            warnings.warn_explicit(item.message, item.category, item.filename, item.lineno)


def peer_line(peer: Peer) -> str:
    """A subscription on one line: name, peer mind and store, trust (p10) and its posterior."""
    where = peer.url or "this store"
    trust = serialize.peer_json(peer)["trust"]
    return (
        f"{peer.name}  mind {peer.mind} at {where}  "
        f"trust {trust:.3f} (Beta({peer.alpha:g}, {peer.beta:g}), mean {peer.trust_mean:.3f})"
    )


def cmd_federate_add(args: argparse.Namespace) -> int:
    """``noema federate add NAME --mind PEER [--url URL]``: subscribe to a peer mind."""
    return operate(args, "federate", lambda peer, now: [f"subscribed {peer_line(peer)}"])


def cmd_federate_remove(args: argparse.Namespace) -> int:
    """``noema federate remove NAME``: end a subscription."""
    return operate(args, "unfederate", lambda peer, now: [f"unsubscribed {peer_line(peer)}"])


def cmd_federate_list(args: argparse.Namespace) -> int:
    """``noema federate list``: the mind's subscriptions, by name, with the trust in each."""
    return operate(args, "peers", lambda peers, now: [peer_line(p) for p in peers] or ["no peers"])


def cmd_federate_feedback(args: argparse.Namespace) -> int:
    """``noema federate feedback NAME VALUE``: rate a peer's results from -1 to 1."""
    return operate(args, "peer_feedback", lambda peer, now: [peer_line(peer)])
