"""The recall operation: memories for a query, each with why it ranked there."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

from concepts import RecallResult
from noema import serialize
from noema.errors import PeerUnavailable
from noema.operations import requests as q, results as r
from noema.operations.memories import LIST_FILTERS, given_filters
from noema.operations.spine import Cli, Operation, Route

if TYPE_CHECKING:
    from noema.mind import Mind

__all__ = ["OPERATIONS", "recall_noting_peers", "recall_reply", "run_recall"]


def recall_noting_peers(mind: Mind, **options: Any) -> tuple[list[RecallResult], list[str]]:
    """``mind.recall(**options)`` and, one line each, the peers it could not read."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", PeerUnavailable)
        results = mind.recall(**options)
    for item in caught:
        if not issubclass(item.category, PeerUnavailable):
            warnings.warn_explicit(item.message, item.category, item.filename, item.lineno)
    unavailable = [str(i.message) for i in caught if issubclass(i.category, PeerUnavailable)]
    return results, unavailable


def results_json(mind: Mind, results: list[RecallResult]) -> list[dict[str, Any]]:
    """Recall results' JSON, each with its world's path (a peer's result: the peer's)."""
    own = [x for x in results if x.peer is None]
    paths = mind.world_paths() if any(x.memory.world for x in own) else {"": ""}
    return [serialize.result_json(x, world=paths.get(x.memory.world)) for x in results]


#: The filters of a recall request besides ``min_confidence``.
FILTERS = (*LIST_FILTERS, "key", "since", "until", "min_feedback")


def run_recall(mind: Mind, request: q.RecallRequest) -> tuple[list[RecallResult], list[str]]:
    """The results of a recall request and, one line each, the peers it could not read."""
    filters = given_filters(request, *FILTERS)
    if request.min_confidence:
        filters["min_confidence"] = request.min_confidence
    options = request.model_dump(exclude={*FILTERS, "min_confidence"})
    return recall_noting_peers(mind, **options, filters=filters)


def recall_reply(mind: Mind, results: list[RecallResult], unavailable: list[str]) -> dict[str, Any]:
    """A recall's JSON answer: the results, best first, and the peers that could not be read."""
    return {"results": results_json(mind, results), "warnings": unavailable}


def _recall(mind: Mind, request: q.RecallRequest) -> dict[str, Any]:
    return recall_reply(mind, *run_recall(mind, request))


OPERATIONS: tuple[Operation, ...] = (
    Operation(
        "recall",
        "Recall memories for a query, best first, each with its score components.",
        q.RecallRequest,
        r.RecallOut,
        _recall,
        writes=True,
        route=Route("POST", "/recall", "memories"),
        cli=Cli(("recall",), positional=("query",)),
        description=(
            "Each result carries its `lifecycle`, confidence `tier` (high, moderate, low, "
            "exploratory, stale) and `world` (its path). Filters: `kinds`, `epistemics`, "
            "`statuses` (default active), `channels`, `lifecycles` (default all but "
            "rejected), `tags`, `key`, `since`/`until` (valid time), `min_confidence`, "
            "`min_feedback`. `as_of` asks what the mind held true then; `known_at` what it "
            "knew then. `world` recalls inside that world, the worlds below it and those it "
            "links to, never a sibling; `strategy` `worlds-first` picks the best worlds "
            "first. `peek` recalls without reinforcing. `depth` `deep` reranks a wide pool "
            "(slower, better). `warnings` names the peers that could not be read."
        ),
    ),
)
