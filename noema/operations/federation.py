"""The operations on federation: read-only subscriptions to peer minds."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from noema import serialize
from noema.operations import requests as q, results as r
from noema.operations.spine import Operation, Route

if TYPE_CHECKING:
    from noema.mind import Mind

__all__ = ["OPERATIONS"]


def _peers(mind: Mind, request: q.EmptyRequest) -> dict[str, Any]:
    return {"peers": [serialize.peer_json(p) for p in mind.peers()]}


def _federate(mind: Mind, request: q.PeerRequest) -> dict[str, Any]:
    return serialize.peer_json(mind.federate(request.name, mind=request.mind, url=request.url))


def _unfederate(mind: Mind, request: q.PeerNameRequest) -> dict[str, Any]:
    return serialize.peer_json(mind.unfederate(request.name))


def _peer_feedback(mind: Mind, request: q.PeerFeedbackRequest) -> dict[str, Any]:
    peer = mind.peer_feedback(request.name, request.value, memory_id=request.memory_id)
    return serialize.peer_json(peer)


OPERATIONS: tuple[Operation, ...] = (
    Operation(
        "peers",
        "The mind's subscriptions to peer minds, with the trust (10th percentile) in each.",
        q.EmptyRequest,
        r.PeersOut,
        _peers,
        writes=False,
        route=Route("GET", "/peers", "federation"),
    ),
    Operation(
        "federate",
        "Subscribe, read-only, as `name` to the mind `mind` of this store (or at `url`).",
        q.PeerRequest,
        r.PeerOut,
        _federate,
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
    ),
    Operation(
        "unfederate",
        "End the subscription `name`; returns it as it was.",
        q.PeerNameRequest,
        r.PeerOut,
        _unfederate,
        writes=True,
        route=Route("DELETE", "/peers/{name}", "federation"),
    ),
    Operation(
        "peer_feedback",
        "Rate a peer's results from -1 to 1, which moves the mind's trust in it.",
        q.PeerFeedbackRequest,
        r.PeerOut,
        _peer_feedback,
        writes=True,
        route=Route("POST", "/peers/{name}/feedback", "federation"),
    ),
)
