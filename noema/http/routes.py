"""The routes of the HTTP API: one :class:`Operation` each, answered through ``AsyncMind``.

Every per-mind route is under ``/v1/minds/{mind}``; its handler gets a
:class:`Call` whose body and query string are already checked against the
route's models, and answers with JSON that ``noema.serialize`` writes, the same
records the CLI's ``--json`` and the MCP tools return. The operations mirror the
MCP server's tools (``noema.mcp.server``), plus listing memories and events,
stats, and export.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import TypeAdapter, ValidationError
from starlette.responses import Response

from concepts import ROOT_WORLD, Channel, Link, Memory, RecallResult
from concepts.models import UtcDatetime
from noema import __version__, serialize
from noema.clock import iso
from noema.errors import InvalidInput, NotFound, PeerUnavailable
from noema.http import models as m
from noema.http._served import Served
from noema.http.auth import Grant
from noema.http.openapi import Operation
from noema.mind import Mind

__all__ = ["OPERATIONS", "Call"]

#: Who asserts the edges a client adds over HTTP (``Relationship.source``).
EDGE_SOURCE = "http"
MIND = "/v1/minds/{mind}"


@dataclass(frozen=True)
class Call:
    """One request to a route, checked: the mind, the grant, and the parsed input.

    Attributes:
        served: the mind the request is for (the grant opens it).
        grant: what the request's token opens.
        params: the path's parameters besides ``mind`` (``id``, ``path``, ``name``).
        body: the body, an instance of the route's body model (or ``None``).
        query: the query string, an instance of the route's query model (or ``None``).
        minds: the names of every mind the server serves.
    """

    served: Served | None
    grant: Grant
    params: Mapping[str, str]
    body: Any
    query: Any
    minds: tuple[str, ...] = ()

    @property
    def mind(self) -> Served:
        """The mind of a per-mind route."""
        assert self.served is not None
        return self.served


_TIME: TypeAdapter[datetime] = TypeAdapter(UtcDatetime)


def _time(text: str, field: str) -> datetime:
    try:
        return _TIME.validate_python(text)
    except ValidationError as exc:
        message = str(exc.errors(include_url=False)[0]["msg"]).removeprefix("Value error, ")
        raise InvalidInput(f"{field}: {message}", field=field) from None


async def _memory(call: Call, memory: Memory, at: datetime | None = None) -> dict[str, Any]:
    """A memory's JSON with its world's path and its tier at ``at`` (the mind's clock)."""
    served = call.mind
    world = "" if not memory.world else await served.amind.world_path(memory.world)
    return serialize.memory_json(memory, at=at or served.amind.clock.now(), world=world)


async def _results(call: Call, results: list[RecallResult]) -> list[dict[str, Any]]:
    """Recall results' JSON, each with its world's path (a peer's result: the peer's)."""
    own = [r for r in results if r.peer is None]
    paths = await call.mind.amind.world_paths() if any(r.memory.world for r in own) else {"": ""}
    return [serialize.result_json(r, world=paths.get(r.memory.world)) for r in results]


def _filters(source: Any, *names: str) -> dict[str, Any]:
    """The filter fields of a body or query that were given (lists as tuples)."""
    chosen: dict[str, Any] = {}
    for name in names:
        value = getattr(source, name)
        if isinstance(value, list):
            if value:
                chosen[name] = tuple(value)
        elif value is not None:
            chosen[name] = value
    return chosen


def _recall_noting_peers(
    mind: Mind, query: str, **options: Any
) -> tuple[list[RecallResult], list[str]]:
    """``mind.recall`` (in a worker) and, one line each, the peers it could not read."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", PeerUnavailable)
        results = mind.recall(query, **options)
    for item in caught:
        if not issubclass(item.category, PeerUnavailable):
            warnings.warn_explicit(item.message, item.category, item.filename, item.lineno)
    unavailable = [str(i.message) for i in caught if issubclass(i.category, PeerUnavailable)]
    return results, unavailable


_LIST_FILTERS = ("kinds", "epistemics", "statuses", "channels", "lifecycles", "tags")


# ---------------------------------------------------------------- the server


async def server_health(call: Call) -> dict[str, Any]:
    """The server is up."""
    return {"status": "ok", "version": __version__}


async def list_minds(call: Call) -> dict[str, Any]:
    """The minds the token opens."""
    return {"minds": [name for name in call.minds if call.grant.allows(name)]}


# ---------------------------------------------------------------- the mind


async def mind_info(call: Call) -> dict[str, Any]:
    """The mind's name, id and creation."""
    info = call.mind.amind.info
    return {"name": info.name, "id": info.id, "created_at": iso(info.created_at)}


async def stats(call: Call) -> dict[str, Any]:
    """Memory counts by kind and status."""
    counts: dict[str, Any] = await call.mind.amind.stats()
    return counts


async def remember(call: Call) -> dict[str, Any]:
    """Remember one thing."""
    body: m.RememberBody = call.body
    links = [
        Link(relation=k.relation, target=k.target, confidence=k.confidence) for k in body.links
    ]
    memory = await call.mind.amind.remember(
        body.content,
        kind=body.kind,
        epistemic=body.epistemic,
        channel=Channel(body.channel),
        key=body.key,
        importance=body.importance,
        confidence=body.confidence,
        salience=body.salience,
        decay=body.decay,
        valid_from=body.valid_from,
        tags=body.tags,
        payload=body.payload,
        summary=body.summary,
        links=links,
        world=ROOT_WORLD if body.world is None else body.world,
    )
    return await _memory(call, memory)


async def list_memories(call: Call) -> dict[str, Any]:
    """Memories passing the filters, newest recorded first."""
    query: m.MemoriesQuery = call.query
    filters = _filters(query, *_LIST_FILTERS, "key", "since", "until")
    found = await call.mind.amind.timeline(filters, limit=query.limit)
    now = call.mind.amind.clock.now()
    return {"memories": [await _memory(call, memory, now) for memory in found]}


async def get_memory(call: Call) -> dict[str, Any]:
    """A memory, whatever its status, with its relationships."""
    query: m.GetQuery = call.query
    when = None if query.known_at is None else _time(query.known_at, "known_at")
    amind = call.mind.amind
    memory = await amind.get(call.params["id"], known_at=when)
    edges = await amind.relationships(memory.id)
    if when is not None:
        edges = [e for e in edges if e.created_at <= when]
    return {
        **await _memory(call, memory, when),
        "relationships": [serialize.relationship_json(e) for e in edges],
    }


async def get_fact(call: Call) -> dict[str, Any]:
    """The memory that holds a key's fact: now, valid then, or as known then."""
    query: m.FactQuery = call.query
    as_of = None if query.as_of is None else _time(query.as_of, "as_of")
    known_at = None if query.known_at is None else _time(query.known_at, "known_at")
    key = call.params["key"]
    memory = await call.mind.amind.fact(key, as_of=as_of, known_at=known_at)
    if memory is None:
        raise NotFound(f"no memory holds key {key!r} in mind {call.mind.name!r}", field="key")
    return await _memory(call, memory, known_at)


async def memory_events(call: Call) -> dict[str, Any]:
    """The events of one memory, oldest first (the newest ``limit``)."""
    query: m.LimitQuery = call.query
    amind = call.mind.amind
    memory = await amind.get(call.params["id"])  # an unknown id is a 404, not []
    events = await amind.events(memory_id=memory.id, limit=query.limit, newest_first=True)
    return {"events": [serialize.event_json(e) for e in reversed(events)]}


async def retract(call: Call) -> dict[str, Any]:
    """Mark a memory inaccurate."""
    body: m.RetractBody = call.body
    return await _memory(call, await call.mind.amind.retract(call.params["id"], reason=body.reason))


async def supersede(call: Call) -> dict[str, Any]:
    """Write a new version of a memory (same kind, key and world)."""
    body: m.SupersedeBody = call.body
    amind = call.mind.amind
    old = await amind.get(call.params["id"])
    world = await amind.world_path(old.world) if old.world else ROOT_WORLD
    new = await amind.supersede(old.id, body.content, channel=Channel.TOOL, world=world)
    return await _memory(call, new)


async def feedback(call: Call) -> dict[str, Any]:
    """Rate a memory."""
    body: m.FeedbackBody = call.body
    amind = call.mind.amind
    return await _memory(call, await amind.feedback(call.params["id"], body.value, note=body.note))


async def verify_memory(call: Call) -> dict[str, Any]:
    """Mark a memory verified knowledge."""
    body: m.ReasonBody = call.body
    reason = {} if body.reason is None else {"reason": body.reason}
    return await _memory(call, await call.mind.amind.verify_memory(call.params["id"], **reason))


async def reject_memory(call: Call) -> dict[str, Any]:
    """Reject a memory: it is not knowledge."""
    body: m.RetractBody = call.body
    amind = call.mind.amind
    return await _memory(call, await amind.reject_memory(call.params["id"], reason=body.reason))


async def reinstate_memory(call: Call) -> dict[str, Any]:
    """Take a rejected or stale memory back."""
    body: m.ReasonBody = call.body
    reason = {} if body.reason is None else {"reason": body.reason}
    amind = call.mind.amind
    return await _memory(call, await amind.reinstate_memory(call.params["id"], **reason))


async def recall(call: Call) -> dict[str, Any]:
    """Recall memories, best first, each with its score components."""
    body: m.RecallBody = call.body
    filters = _filters(body, *_LIST_FILTERS, "key", "since", "until", "min_feedback")
    if body.min_confidence:
        filters["min_confidence"] = body.min_confidence
    results, unavailable = await call.mind.amind.call(
        _recall_noting_peers,
        call.mind.amind.mind,
        body.query,
        limit=body.limit,
        filters=filters,
        as_of=body.as_of,
        peek=body.peek,
        mode=body.mode,
        fusion=body.fusion,
        explore=body.explore,
        seed=body.seed,
        depth="deep" if body.deep else "fast",
        world=body.world,
        known_at=body.known_at,
        strategy=body.strategy,
        federated=body.federated,
    )
    return {"results": await _results(call, results), "warnings": unavailable}


async def relate(call: Call) -> dict[str, Any]:
    """Add an edge."""
    body: m.RelateBody = call.body
    edge = await call.mind.amind.relate(
        body.src, body.relation, body.dst, confidence=body.confidence, source=EDGE_SOURCE
    )
    return serialize.relationship_json(edge)


async def proposals(call: Call) -> dict[str, Any]:
    """Every pending proposal, oldest first, with both ends' content."""
    amind = call.mind.amind
    found = await amind.proposals()
    ids = sorted({i for edge in found for i in (edge.src, edge.dst)})
    ends = {memory.id: memory for memory in await amind.get_many(ids)}
    return {"proposals": [serialize.proposal_json(e, ends) for e in found]}


async def approve(call: Call) -> dict[str, Any]:
    """Approve a pending proposal and do what it says."""
    return serialize.relationship_json(await call.mind.amind.approve(call.params["id"]))


async def reject_proposal(call: Call) -> dict[str, Any]:
    """Reject a pending proposal."""
    return serialize.relationship_json(await call.mind.amind.reject(call.params["id"]))


async def events(call: Call) -> dict[str, Any]:
    """The mind's events in append order."""
    query: m.EventsQuery = call.query
    found = await call.mind.amind.events(
        memory_id=query.memory_id,
        kinds=tuple(query.kinds),
        limit=query.limit,
        after_seq=query.after_seq,
    )
    return {"events": [serialize.event_json(e) for e in found]}


async def health(call: Call) -> dict[str, Any]:
    """The health report."""
    query: m.HealthQuery = call.query
    report = await call.mind.amind.health(
        rules=query.rules or None, limit=query.limit, world=query.world
    )
    return serialize.health_json(report)


async def verify(call: Call) -> dict[str, Any]:
    """Check the audit chain and every record against it."""
    return serialize.verify_json(await call.mind.amind.verify())


async def export(call: Call) -> Response:
    """The mind as JSONL."""
    query: m.ExportQuery = call.query
    lines = await call.mind.amind.export_lines(world=query.world)
    text = "".join(f"{line}\n" for line in lines)
    return Response(text, media_type="application/x-ndjson")


# ---------------------------------------------------------------- worlds


async def list_worlds(call: Call) -> dict[str, Any]:
    """Every world, the root first."""
    return {"worlds": [serialize.world_json(w) for w in await call.mind.amind.worlds()]}


async def create_world(call: Call) -> dict[str, Any]:
    """Create a world and its missing parents."""
    body: m.WorldBody = call.body
    return serialize.world_json(await call.mind.amind.create_world(body.path))


async def show_world(call: Call) -> dict[str, Any]:
    """One world."""
    return serialize.world_json(await call.mind.amind.world(call.params["path"]))


async def rename_world(call: Call) -> dict[str, Any]:
    """Rename a world."""
    body: m.RenameBody = call.body
    return serialize.world_json(await call.mind.amind.rename_world(body.path, body.name))


async def move_world(call: Call) -> dict[str, Any]:
    """Move a world under another."""
    body: m.MoveBody = call.body
    return serialize.world_json(await call.mind.amind.move_world(body.path, body.parent))


async def link_worlds(call: Call) -> dict[str, Any]:
    """Link one world to another."""
    body: m.LinkWorldsBody = call.body
    return serialize.world_json(await call.mind.amind.link_worlds(body.src, body.dst))


async def unlink_worlds(call: Call) -> dict[str, Any]:
    """Remove a link between worlds."""
    body: m.LinkWorldsBody = call.body
    return serialize.world_json(await call.mind.amind.unlink_worlds(body.src, body.dst))


# ---------------------------------------------------------------- federation


async def list_peers(call: Call) -> dict[str, Any]:
    """The mind's subscriptions."""
    return {"peers": [serialize.peer_json(p) for p in await call.mind.amind.peers()]}


async def add_peer(call: Call) -> dict[str, Any]:
    """Subscribe to a mind of this store, as the server allows (``noema.access``)."""
    body: m.PeerBody = call.body
    peer = await call.mind.amind.federate(body.name, mind=body.mind)
    return serialize.peer_json(peer)


async def remove_peer(call: Call) -> dict[str, Any]:
    """End a subscription."""
    return serialize.peer_json(await call.mind.amind.unfederate(call.params["name"]))


async def peer_feedback(call: Call) -> dict[str, Any]:
    """Rate a peer's results."""
    body: m.PeerFeedbackBody = call.body
    peer = await call.mind.amind.peer_feedback(
        call.params["name"], body.value, memory_id=body.memory_id
    )
    return serialize.peer_json(peer)


# ---------------------------------------------------------------- task episodes


async def record_episode(call: Call) -> dict[str, Any]:
    """Record one agent run as a task episode."""
    body: m.EpisodeBody = call.body
    fields = body.model_dump(exclude={"channel"}, exclude_none=True)
    record = await call.mind.amind.record_episode(fields, channel=Channel(body.channel))
    return serialize.episode_json(record)


async def list_episodes(call: Call) -> dict[str, Any]:
    """Recorded episodes, newest first."""
    query: m.EpisodesQuery = call.query
    found = await call.mind.amind.episodes(**query.model_dump(exclude_none=True))
    return {"episodes": [serialize.episode_json(record) for record in found]}


async def get_episode(call: Call) -> dict[str, Any]:
    """One recorded episode."""
    return serialize.episode_json(await call.mind.amind.episode(call.params["id"]))


async def recall_episodes(call: Call) -> dict[str, Any]:
    """Episodes by meaning and outcome: what worked last time."""
    body: m.EpisodeRecallBody = call.body
    options = body.model_dump(exclude={"query"}, exclude_none=True)
    results = await call.mind.amind.recall_episodes(body.query, **options)
    paths = await call.mind.amind.world_paths() if any(r.memory.world for r in results) else {}
    return {
        "results": [
            serialize.episode_result_json(r, world=paths.get(r.memory.world, "")) for r in results
        ]
    }


async def episode_stats(call: Call) -> dict[str, Any]:
    """Success rates of approaches, tools, roles and agents."""
    query: m.EpisodeStatsQuery = call.query
    stats = await call.mind.amind.episode_stats(**query.model_dump(exclude_none=True))
    return serialize.episode_stats_json(stats)


def _op(
    method: str,
    path: str,
    handler: Any,
    response: type[Any] | None,
    *,
    body: type[Any] | None = None,
    query: type[Any] | None = None,
    status: int = 200,
    tag: str,
    **extra: Any,
) -> Operation:
    doc = (handler.__doc__ or "").strip().splitlines()[0]
    return Operation(
        method=method,
        path=path,
        name=handler.__name__,
        summary=doc,
        handler=handler,
        response=response,
        body=body,
        query=query,
        status=status,
        tags=(tag,),
        **extra,
    )


_MEMORY = f"{MIND}/memories/{{id}}"
_EMPTY = m.EmptyBody

#: Every route but each mind's MCP endpoint, in the order the document lists them.
OPERATIONS: tuple[Operation, ...] = (
    _op("GET", "/v1/health", server_health, m.ServerOut, auth=False, tag="server"),
    _op("GET", "/v1/minds", list_minds, m.MindsOut, tag="server"),
    _op("GET", MIND, mind_info, m.MindOut, tag="mind"),
    _op("GET", f"{MIND}/stats", stats, m.StatsOut, tag="mind"),
    _op("POST", f"{MIND}/recall", recall, m.RecallOut, body=m.RecallBody, tag="memories"),
    _op(
        "POST",
        f"{MIND}/memories",
        remember,
        m.MemoryOut,
        body=m.RememberBody,
        status=201,
        tag="memories",
    ),
    _op(
        "GET",
        f"{MIND}/memories",
        list_memories,
        m.MemoriesOut,
        query=m.MemoriesQuery,
        tag="memories",
    ),
    _op("GET", _MEMORY, get_memory, m.MemoryDetail, query=m.GetQuery, tag="memories"),
    _op(
        "GET",
        f"{MIND}/facts/{{key:path}}",
        get_fact,
        m.MemoryOut,
        query=m.FactQuery,
        tag="memories",
    ),
    _op("GET", f"{_MEMORY}/events", memory_events, m.EventsOut, query=m.LimitQuery, tag="memories"),
    _op("POST", f"{_MEMORY}/retract", retract, m.MemoryOut, body=m.RetractBody, tag="memories"),
    _op(
        "POST",
        f"{_MEMORY}/supersede",
        supersede,
        m.MemoryOut,
        body=m.SupersedeBody,
        status=201,
        tag="memories",
    ),
    _op("POST", f"{_MEMORY}/feedback", feedback, m.MemoryOut, body=m.FeedbackBody, tag="memories"),
    _op("POST", f"{_MEMORY}/verify", verify_memory, m.MemoryOut, body=m.ReasonBody, tag="memories"),
    _op(
        "POST", f"{_MEMORY}/reject", reject_memory, m.MemoryOut, body=m.RetractBody, tag="memories"
    ),
    _op(
        "POST",
        f"{_MEMORY}/reinstate",
        reinstate_memory,
        m.MemoryOut,
        body=m.ReasonBody,
        tag="memories",
    ),
    _op(
        "POST",
        f"{MIND}/relationships",
        relate,
        m.RelationshipOut,
        body=m.RelateBody,
        status=201,
        tag="relationships",
    ),
    _op("GET", f"{MIND}/proposals", proposals, m.ProposalsOut, tag="relationships"),
    _op(
        "POST",
        f"{MIND}/proposals/{{id}}/approve",
        approve,
        m.RelationshipOut,
        body=_EMPTY,
        tag="relationships",
    ),
    _op(
        "POST",
        f"{MIND}/proposals/{{id}}/reject",
        reject_proposal,
        m.RelationshipOut,
        body=_EMPTY,
        tag="relationships",
    ),
    _op("GET", f"{MIND}/events", events, m.EventsOut, query=m.EventsQuery, tag="mind"),
    _op("GET", f"{MIND}/health", health, m.HealthOut, query=m.HealthQuery, tag="mind"),
    _op("GET", f"{MIND}/verify", verify, m.VerifyOut, tag="mind"),
    _op(
        "GET",
        f"{MIND}/export",
        export,
        None,
        query=m.ExportQuery,
        media_type="application/x-ndjson",
        tag="mind",
    ),
    _op("GET", f"{MIND}/worlds", list_worlds, m.WorldsOut, tag="worlds"),
    _op(
        "POST",
        f"{MIND}/worlds",
        create_world,
        m.WorldOut,
        body=m.WorldBody,
        status=201,
        tag="worlds",
    ),
    _op("POST", f"{MIND}/worlds/rename", rename_world, m.WorldOut, body=m.RenameBody, tag="worlds"),
    _op("POST", f"{MIND}/worlds/move", move_world, m.WorldOut, body=m.MoveBody, tag="worlds"),
    _op(
        "POST", f"{MIND}/worlds/link", link_worlds, m.WorldOut, body=m.LinkWorldsBody, tag="worlds"
    ),
    _op(
        "POST",
        f"{MIND}/worlds/unlink",
        unlink_worlds,
        m.WorldOut,
        body=m.LinkWorldsBody,
        tag="worlds",
    ),
    _op("GET", f"{MIND}/worlds/{{path:path}}", show_world, m.WorldOut, tag="worlds"),
    _op(
        "POST",
        f"{MIND}/episodes",
        record_episode,
        m.EpisodeOut,
        body=m.EpisodeBody,
        status=201,
        tag="episodes",
    ),
    _op(
        "GET",
        f"{MIND}/episodes",
        list_episodes,
        m.EpisodesOut,
        query=m.EpisodesQuery,
        tag="episodes",
    ),
    _op(
        "POST",
        f"{MIND}/episodes/recall",
        recall_episodes,
        m.EpisodeRecallOut,
        body=m.EpisodeRecallBody,
        tag="episodes",
    ),
    _op(
        "GET",
        f"{MIND}/episodes/stats",
        episode_stats,
        m.EpisodeStatsOut,
        query=m.EpisodeStatsQuery,
        tag="episodes",
    ),
    _op("GET", f"{MIND}/episodes/{{id}}", get_episode, m.EpisodeOut, tag="episodes"),
    _op("GET", f"{MIND}/peers", list_peers, m.PeersOut, tag="federation"),
    _op(
        "POST", f"{MIND}/peers", add_peer, m.PeerOut, body=m.PeerBody, status=201, tag="federation"
    ),
    _op(
        "DELETE",
        f"{MIND}/peers/{{name}}",
        remove_peer,
        m.PeerOut,
        body=_EMPTY,
        tag="federation",
    ),
    _op(
        "POST",
        f"{MIND}/peers/{{name}}/feedback",
        peer_feedback,
        m.PeerOut,
        body=m.PeerFeedbackBody,
        tag="federation",
    ),
)
