"""The operations on the mind as a whole: what it is, holds and logged, and its checks."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from concepts import Event
from noema import serialize
from noema.clock import iso
from noema.memory.knowledge.health import HealthReport
from noema.operations import requests as q, results as r
from noema.operations.spine import Cli, Operation, Route

if TYPE_CHECKING:
    from noema.mind import Mind

__all__ = ["OPERATIONS"]


def _mind_info(mind: Mind, request: q.EmptyRequest) -> dict[str, Any]:
    return {"name": mind.info.name, "id": mind.info.id, "created_at": iso(mind.info.created_at)}


def _stats(mind: Mind, request: q.EmptyRequest) -> dict[str, Any]:
    return mind.stats()


def _events(mind: Mind, request: q.EventsRequest) -> list[Event]:
    newest = request.after_seq is None
    found = mind.events(
        memory_id=request.memory_id,
        kinds=tuple(request.kinds),
        limit=request.limit,
        after_seq=request.after_seq,
        newest_first=newest,
    )
    return found[::-1] if newest else found


def _events_reply(mind: Mind, events: list[Event]) -> dict[str, Any]:
    return {"events": [serialize.event_json(e) for e in events]}


def _health(mind: Mind, request: q.HealthRequest) -> HealthReport:
    return mind.health(rules=request.rules or None, limit=request.limit, world=request.world)


def _verify(mind: Mind, request: q.EmptyRequest) -> dict[str, Any]:
    return serialize.verify_json(mind.verify())


def _export(mind: Mind, request: q.ExportRequest) -> list[str]:
    return mind.export_lines(world=request.world)


OPERATIONS: tuple[Operation, ...] = (
    Operation(
        "mind_info",
        "The mind's name, id and creation.",
        q.EmptyRequest,
        r.MindOut,
        _mind_info,
        writes=False,
        route=Route("GET", "", "mind"),
    ),
    Operation(
        "stats",
        "Memory counts by kind and by status.",
        q.EmptyRequest,
        r.StatsOut,
        _stats,
        writes=False,
        route=Route("GET", "/stats", "mind"),
        cli=Cli(("stats",)),
    ),
    Operation(
        "events",
        "The mind's events in append order: the newest `limit`, or the first after `after_seq`.",
        q.EventsRequest,
        r.EventsOut,
        _events,
        writes=False,
        route=Route("GET", "/events", "mind"),
        reply=_events_reply,
        cli=Cli(("events",)),
    ),
    Operation(
        "health",
        "What to review, merge, refresh or add: deterministic findings, rule by rule.",
        q.HealthRequest,
        r.HealthOut,
        _health,
        writes=False,
        route=Route("GET", "/health", "mind"),
        description=(
            "Each finding has its rule, severity, memory ids, summary, evidence and a "
            "suggested action. `rules` runs only those (default all); `limit` caps the "
            "findings per rule; `world` looks only inside that world and below."
        ),
        reply=lambda mind, report: serialize.health_json(report),
        cli=Cli(("health",)),
    ),
    Operation(
        "verify",
        "Check the audit chain, its events, and every record of the mind against them.",
        q.EmptyRequest,
        r.VerifyOut,
        _verify,
        writes=False,
        route=Route("GET", "/verify", "mind"),
    ),
    Operation(
        "export",
        "The mind as JSONL: every memory, edge, event and audit entry (or one world's).",
        q.ExportRequest,
        None,
        _export,
        writes=False,
        route=Route("GET", "/export", "mind", media_type="application/x-ndjson"),
        mcp=False,
    ),
)
