"""``Mind``'s methods on federation: read-only subscriptions to peer minds."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from concepts.federation import Peer
from noema import access
from noema._arguments import checked
from noema._mind.base import MindBase

__all__ = ["FederationPart"]


class FederationPart(MindBase):
    """Federation: read-only subscriptions to peer minds."""

    @checked
    def federate(self, name: str, *, mind: str, url: str | None = None) -> Peer:
        """Subscribe, read-only, to the mind ``mind`` of this store or of the store at ``url``.

        Recall then asks that peer too (and the peers it subscribes to, up to
        three hops away), discounting its results by the mind's trust in it: a
        Beta(5, 5) prior that ``peer_feedback`` moves. Nothing is ever written
        into the peer, nor created or migrated there: a store at ``url`` must be a
        Noema store at this Noema's schema. A ``peer_added`` event is logged in
        this mind. The caller (``noema.access.current``) must be allowed to: on a
        server, federation is off unless the operator allows it.

        Args:
            name: The subscription's name in this mind (letters, digits, ``_.-``).
            mind: The peer mind's name in its store.
            url: The peer's store; ``None`` (or this mind's own URL): this store.

        Returns:
            The subscription (the one already held, when it is the same).

        Raises:
            Forbidden: the caller may not subscribe to that mind or store.
            InvalidInput: a bad name, this mind itself, or a name or peer already
                subscribed to otherwise.
            PolicyViolation: ``name`` or ``url`` holds a credential.
            NotFound: that store holds no mind ``mind``.
            ConfigError, StorageError: the store at ``url`` cannot be read: no
                Noema store there (one message, whatever is there instead), one
                at another schema, or a server that does not answer.
        """
        caller = access.current(self.caller)
        return self._federation.subscribe(name, mind=mind, url=url, caller=caller)

    @checked
    def unfederate(self, name: str) -> Peer:
        """End the subscription ``name`` (its trust goes with it); returns it as it was.

        Raises:
            NotFound: the mind has no subscription of that name.
        """
        return self._federation.unsubscribe(name)

    def peers(self) -> list[Peer]:
        """The mind's subscriptions to peer minds, by name."""
        return self._federation.peers()

    @checked
    def peer_feedback(
        self,
        peer: str,
        value: Annotated[float, Field(ge=-1.0, le=1.0, allow_inf_nan=False)],
        *,
        memory_id: str | None = None,
    ) -> Peer:
        """Tell the mind a peer's result was right or useful (up to 1) or not (down to -1).

        Moves the mind's trust in ``peer``: ``alpha += max(value, 0)``,
        ``beta += max(-value, 0)``; the discount of its results follows the
        posterior's 10th percentile. ``memory_id``, the peer's memory the feedback
        is about, is recorded in the ``peer_feedback`` event. (``feedback`` rates
        this mind's own memories.)

        Raises:
            NotFound: the mind has no subscription of that name.
        """
        return self._federation.feedback(peer, value, memory_id=memory_id)
