"""The operations on memories: remember, read, correct, relate, decide proposals."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from concepts import ROOT_WORLD, Channel, Link, Memory, RecallFilters, Relationship
from noema import serialize
from noema.errors import NotFound
from noema.operations import requests as q, results as r
from noema.operations.fields import utc
from noema.operations.spine import Cli, Operation, Route, face

if TYPE_CHECKING:
    from noema.mind import Mind

__all__ = ["OPERATIONS", "memory_json"]

#: The list filters of a request, by name (an empty list is no filter).
LIST_FILTERS = ("kinds", "epistemics", "statuses", "channels", "lifecycles", "tags")


def memory_json(mind: Mind, memory: Memory, at: datetime | None = None) -> dict[str, Any]:
    """A memory's JSON: its world's path, its confidence tier at ``at`` (the mind's clock)."""
    world = mind.world_path(memory.world) if memory.world else ROOT_WORLD
    return serialize.memory_json(memory, at=at or mind.clock.now(), world=world)


def given_filters(request: Any, *names: str) -> dict[str, Any]:
    """The filter fields of ``request`` that were given (lists as tuples)."""
    chosen: dict[str, Any] = {}
    for name in names:
        value = getattr(request, name)
        if isinstance(value, list):
            if value:
                chosen[name] = tuple(value)
        elif value is not None:
            chosen[name] = value
    return chosen


def _memory_fields(request: q.RememberRequest) -> dict[str, Any]:
    """What ``Mind.remember`` takes for ``request``: one item of ``Mind.remember_many`` too."""
    links = [
        Link(relation=k.relation, target=k.target, confidence=k.confidence) for k in request.links
    ]
    return {
        **request.model_dump(exclude={"links", "channel", "world"}),
        "channel": Channel(request.channel),
        "links": links,
        "world": ROOT_WORLD if request.world is None else request.world,
    }


def _remember(mind: Mind, request: q.RememberRequest) -> Memory:
    return mind.remember(**_memory_fields(request))


def _remember_many(mind: Mind, request: q.RememberManyRequest) -> list[Memory]:
    items = [_memory_fields(item) for item in request.memories]
    return mind.remember_many(items, thread=request.thread)


def _memories_reply(mind: Mind, memories: list[Memory]) -> dict[str, Any]:
    now = mind.clock.now()
    return {"memories": [memory_json(mind, memory, now) for memory in memories]}


def _timeline(mind: Mind, request: q.MemoriesRequest) -> dict[str, Any]:
    filters = RecallFilters.model_validate(
        given_filters(request, *LIST_FILTERS, "key", "since", "until")
    )
    return _memories_reply(mind, mind.timeline(filters, limit=request.limit))


def _get(mind: Mind, request: q.GetRequest) -> dict[str, Any]:
    when = utc(request.known_at, "known_at")
    memory = mind.get(request.id, known_at=when)
    edges = mind.relationships(memory.id)
    if when is not None:
        edges = [e for e in edges if e.created_at <= when]
    return {
        **memory_json(mind, memory, when),
        "relationships": [serialize.relationship_json(e) for e in edges],
    }


def _fact(mind: Mind, request: q.FactRequest) -> dict[str, Any]:
    as_of, known_at = utc(request.as_of, "as_of"), utc(request.known_at, "known_at")
    memory = mind.fact(request.key, as_of=as_of, known_at=known_at)
    if memory is None:
        when = "".join(
            f" {label} {at.isoformat()}"
            for label, at in (("as of", as_of), ("as known at", known_at))
            if at is not None
        )
        message = f"no memory holds key {request.key!r} in mind {mind.name!r}{when}"
        raise NotFound(message, field="key")
    return memory_json(mind, memory, known_at)


def _memory_events(mind: Mind, request: q.MemoryEventsRequest) -> dict[str, Any]:
    memory = mind.get(request.id)  # an id of no memory is an error, not []
    events = mind.events(memory_id=memory.id, limit=request.limit, newest_first=True)
    return {"events": [serialize.event_json(e) for e in reversed(events)]}


def _supersede(mind: Mind, request: q.SupersedeRequest) -> dict[str, Any]:
    old = mind.get(request.id)
    world = mind.world_path(old.world) if old.world else ROOT_WORLD
    new = mind.supersede(old.id, request.content, channel=Channel.TOOL, world=world)
    return memory_json(mind, new)


def _reason(request: q.ReasonRequest) -> dict[str, str]:
    return {} if request.reason is None else {"reason": request.reason}


def _memory_reply(mind: Mind, memory: Memory) -> dict[str, Any]:
    return memory_json(mind, memory)


def _edge_reply(mind: Mind, edge: Relationship) -> dict[str, Any]:
    return serialize.relationship_json(edge)


#: Pending proposals and the memories at their ends, by id.
Proposals = tuple[list[Relationship], dict[str, Memory]]


def _proposals(mind: Mind, request: q.EmptyRequest) -> Proposals:
    found = mind.proposals()
    ids = sorted({i for edge in found for i in (edge.src, edge.dst)})
    return found, {memory.id: memory for memory in mind.get_many(ids)}


def _proposals_reply(mind: Mind, proposals: Proposals) -> dict[str, Any]:
    found, ends = proposals
    return {"proposals": [serialize.proposal_json(e, ends) for e in found]}


_MEMORY = "/memories/{id}"

OPERATIONS: tuple[Operation, ...] = (
    Operation(
        "remember",
        "Remember one thing; identical active content is reinforced instead.",
        q.RememberRequest,
        r.MemoryOut,
        _remember,
        writes=True,
        route=Route("POST", "/memories", "memories", status=201),
        description=(
            "A `key` (e.g. `user.home_city`) makes it a keyed fact: a new value supersedes "
            "the old one. `valid_from` is when it became true (RFC 3339). `world` is the path "
            "of the world it belongs to (`work/project-x`; created when missing); the root "
            "by default. A remote client writes on the user, tool, source or low channel."
        ),
        reply=_memory_reply,
        cli=Cli(("remember",), positional=("content",), request=q.OperatorRememberRequest),
    ),
    Operation(
        "remember_many",
        "Remember a batch of things, all or none: each as `remember` takes it.",
        q.RememberManyRequest,
        r.MemoriesOut,
        _remember_many,
        writes=True,
        route=Route("POST", "/memories/batch", "memories", status=201),
        description=(
            "Every memory is checked, and checked against the write policy, before the "
            "first is written: one refused memory writes none, and the error names it "
            "(`item 3: ...`). The memories come back in the order given; identical active "
            "content is reinforced instead."
        ),
        reply=_memories_reply,
    ),
    Operation(
        "timeline",
        "Memories passing the filters, newest recorded first.",
        q.MemoriesRequest,
        r.MemoriesOut,
        _timeline,
        writes=False,
        route=Route("GET", "/memories", "memories"),
    ),
    Operation(
        "get",
        "A memory by id, whatever its status, with every edge touching it.",
        q.GetRequest,
        r.MemoryDetail,
        _get,
        writes=False,
        route=Route("GET", _MEMORY, "memories"),
        description=(
            "With `known_at`, the memory as the mind knew it then: its status, lifecycle "
            "and validity at that time, and the edges recorded by then; an error when it "
            "was recorded later."
        ),
        cli=Cli(("memory", "show"), positional=("id",)),
    ),
    Operation(
        "fact",
        "The memory that holds a key's fact: now, valid then, or as known then.",
        q.FactRequest,
        r.MemoryOut,
        _fact,
        writes=False,
        route=Route("GET", "/facts/{key:path}", "memories"),
        description=(
            "A new value for a key supersedes the old one. `as_of` picks the version valid "
            "then; `known_at` the one the mind held then. An error when no memory holds it."
        ),
        cli=Cli(("memory", "show")),
    ),
    Operation(
        "memory_events",
        "The events of one memory, oldest first (the newest `limit`).",
        q.MemoryEventsRequest,
        r.EventsOut,
        _memory_events,
        writes=False,
        route=Route("GET", f"{_MEMORY}/events", "memories"),
    ),
    Operation(
        "retract",
        "Mark a memory inaccurate, with the reason; it stays for provenance.",
        q.RetractRequest,
        r.MemoryOut,
        lambda mind, req: mind.retract(req.id, reason=req.reason),
        writes=True,
        route=Route("POST", f"{_MEMORY}/retract", "memories"),
        reply=_memory_reply,
        cli=Cli(("memory", "retract"), positional=("id",)),
    ),
    Operation(
        "supersede",
        "Write a new version of a memory (same kind, key and world).",
        q.SupersedeRequest,
        r.MemoryOut,
        _supersede,
        writes=True,
        route=Route("POST", f"{_MEMORY}/supersede", "memories", status=201),
    ),
    Operation(
        "feedback",
        "Rate a memory from -1 (wrong, useless) to 1 (true, useful).",
        q.FeedbackRequest,
        r.MemoryOut,
        lambda mind, req: mind.feedback(req.id, req.value, note=req.note),
        writes=True,
        route=Route("POST", f"{_MEMORY}/feedback", "memories"),
        reply=_memory_reply,
        cli=Cli(("memory", "feedback"), positional=("id", "value")),
    ),
    Operation(
        "verify_memory",
        "Mark a memory verified knowledge (it ranks highest); the reason is recorded.",
        q.ReasonRequest,
        r.MemoryOut,
        lambda mind, req: mind.verify_memory(req.id, **_reason(req)),
        writes=True,
        route=Route("POST", f"{_MEMORY}/verify", "memories"),
        reply=_memory_reply,
        cli=Cli(("memory", "verify"), positional=("id",)),
    ),
    Operation(
        "reject_memory",
        "Reject a memory, with the reason: it is not knowledge and leaves normal recall.",
        q.RetractRequest,
        r.MemoryOut,
        lambda mind, req: mind.reject_memory(req.id, reason=req.reason),
        writes=True,
        route=Route("POST", f"{_MEMORY}/reject", "memories"),
        reply=_memory_reply,
        cli=Cli(("memory", "reject"), positional=("id",)),
    ),
    Operation(
        "reinstate_memory",
        "Take a rejected or stale memory back into active knowledge.",
        q.ReasonRequest,
        r.MemoryOut,
        lambda mind, req: mind.reinstate_memory(req.id, **_reason(req)),
        writes=True,
        route=Route("POST", f"{_MEMORY}/reinstate", "memories"),
        reply=_memory_reply,
        cli=Cli(("memory", "reinstate"), positional=("id",)),
    ),
    Operation(
        "relate",
        "Add an edge `src -relation-> dst`; `same_as` is staged as a proposal.",
        q.RelateRequest,
        r.RelationshipOut,
        lambda mind, req: mind.relate(
            req.src, req.relation, req.dst, confidence=req.confidence, source=face()
        ),
        writes=True,
        route=Route("POST", "/relationships", "relationships", status=201),
        reply=_edge_reply,
        cli=Cli(("memory", "relate"), positional=("src", "relation", "dst")),
    ),
    Operation(
        "proposals",
        "Every pending proposal, oldest first, with its evidence and both ends' content.",
        q.EmptyRequest,
        r.ProposalsOut,
        _proposals,
        writes=False,
        route=Route("GET", "/proposals", "relationships"),
        description=(
            "`same_as` merges, and the `supersedes` and `contradicts` edges that write-time "
            "detection staged."
        ),
        reply=_proposals_reply,
        cli=Cli(("memory", "proposals")),
    ),
    Operation(
        "approve",
        "Approve a pending proposal (by relationship id) and do what it says.",
        q.IdRequest,
        r.RelationshipOut,
        lambda mind, req: mind.approve(req.id),
        writes=True,
        route=Route("POST", "/proposals/{id}/approve", "relationships"),
        description=(
            "A `same_as` merges its source into its target, a `supersedes` closes its "
            "target, a `contradicts` flags the pair."
        ),
        reply=_edge_reply,
        cli=Cli(("memory", "approve"), positional=("id",)),
    ),
    Operation(
        "reject",
        "Reject a pending proposal (by relationship id); both memories stay.",
        q.IdRequest,
        r.RelationshipOut,
        lambda mind, req: mind.reject(req.id),
        writes=True,
        route=Route("POST", "/proposals/{id}/reject", "relationships"),
        reply=_edge_reply,
        cli=Cli(("memory", "reject"), positional=("id",)),
    ),
)
