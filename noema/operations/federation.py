"""The operations on federation: read-only subscriptions to peer minds."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from concepts import Peer
from noema import serialize
from noema.operations import requests as q, results as r
from noema.operations.spine import Cli, Operation, Route

if TYPE_CHECKING:
    from noema.mind import Mind

__all__ = ["OPERATIONS"]


def _peer_reply(mind: Mind, peer: Peer) -> dict[str, Any]:
    return serialize.peer_json(peer)


def _peers_reply(mind: Mind, peers: list[Peer]) -> dict[str, Any]:
    return {"peers": [serialize.peer_json(p) for p in peers]}


OPERATIONS: tuple[Operation, ...] = (
    Operation(
        "peers",
        "The mind's subscriptions to peer minds, with the trust (10th percentile) in each.",
        q.EmptyRequest,
        r.PeersOut,
        lambda mind, req: mind.peers(),
        writes=False,
        route=Route("GET", "/peers", "federation"),
        reply=_peers_reply,
        cli=Cli(("federate", "list")),
    ),
    Operation(
        "federate",
        "Subscribe, read-only, as `name` to the mind `mind` of this store (or at `url`).",
        q.PeerRequest,
        r.PeerOut,
        lambda mind, req: mind.federate(req.name, mind=req.mind, url=req.url),
        writes=True,
        needs="federation",
        route=Route("POST", "/peers", "federation", status=201),
        description=(
            "`recall` then asks it too: its results name their `peer` and `hops` and come "
            "discounted by the trust in that peer (`trust` and `hops` components). Nothing "
            "is ever written into the peer. Refused unless the server allows federation "
            "(`--allow-federation`): then a mind the client opens, or one at a URL the "
            "server lists (`--peer-url`)."
        ),
        reply=_peer_reply,
        cli=Cli(("federate", "add"), positional=("name",)),
    ),
    Operation(
        "unfederate",
        "End the subscription `name`; returns it as it was.",
        q.PeerNameRequest,
        r.PeerOut,
        lambda mind, req: mind.unfederate(req.name),
        writes=True,
        route=Route("DELETE", "/peers/{name}", "federation"),
        reply=_peer_reply,
        cli=Cli(("federate", "remove"), positional=("name",)),
    ),
    Operation(
        "peer_feedback",
        "Rate a peer's results from -1 to 1, which moves the mind's trust in it.",
        q.PeerFeedbackRequest,
        r.PeerOut,
        lambda mind, req: mind.peer_feedback(req.name, req.value, memory_id=req.memory_id),
        writes=True,
        route=Route("POST", "/peers/{name}/feedback", "federation"),
        reply=_peer_reply,
        cli=Cli(("federate", "feedback"), positional=("name", "value")),
    ),
)
