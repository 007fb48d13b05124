"""A mind's events replayed into what every row must hold.

Each event, in chain order, moves the expected state of a memory (``_Expected``:
its created record, its changing fields, the states its history spans may hold),
of an edge, of a world and its links, or of a peer (``_Replay`` holds them all).
A purge vouches for the tombstones it lists. ``verify_checks`` compares the
stored rows with the result; ``verify`` walks the chain and calls both.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from concepts import Event, EventKind, Status
from concepts.federation import PEER_PRIOR_ALPHA, PEER_PRIOR_BETA
from concepts.paths import ROOT_WORLD
from noema.memory.records.audit import (
    purged_by,
)

_State = tuple[datetime | None, str, str | None, str | None, bool]


@dataclass(slots=True)
class _Expected:
    """A memory's fields as its events leave them."""

    content_hash: str
    status: str
    record: dict[str, Any] | None = None  # None: written before events recorded every field
    origin_event: str = ""
    # The feedback posterior and the activation are None (not checked) once a
    # purge has tombstoned an event that changed them.
    posterior: tuple[float, float, float, float] | None = None  # alpha, beta, confidence, mean
    feedback_count: int = 0
    valid_to: str | None = None
    valid_to_known: bool = True
    access_count: int = 0
    last_accessed: datetime | None = None
    activation: float | None = None
    activation_at: datetime | None = None
    position: int = 0  # the event that last set the activation
    lifecycle: str | None = None  # None: written before events recorded it
    # When status, lifecycle or validity last changed (transaction time); None: never.
    changed_at: datetime | None = None
    # Its state when recorded, then after each such change: (changed_at, None when
    # recorded; status; lifecycle, None: unknown; valid_to; whether valid_to is known).
    states: list[_State] = field(default_factory=list)
    history_kept: bool = False  # its created event says every earlier state is a span


@dataclass(slots=True)
class _Edge:
    """A relationship as its events leave it."""

    src: str
    relation: str
    dst: str
    status: str
    created_at: datetime
    confidence: float | None
    source: str | None
    decided_at: datetime | None = None
    evidence: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class _World:
    """A world as its events leave it."""

    parent_id: str
    name: str
    created_at: datetime


@dataclass(slots=True)
class _Peer:
    """A subscription as its events leave it."""

    mind: str
    url: str | None
    alpha: float
    beta: float
    created_at: datetime


@dataclass
class _Replay:
    """State rebuilt from a mind's events, in append order."""

    memories: dict[str, _Expected] = field(default_factory=dict)
    edges: dict[str, _Edge] = field(default_factory=dict)
    worlds: dict[str, _World] = field(default_factory=dict)
    links: dict[tuple[str, str], datetime] = field(default_factory=dict)
    peers: dict[str, _Peer] = field(default_factory=dict)
    # Decay runs: (position, time, half-life in days), in append order.
    decays: list[tuple[int, datetime, float]] = field(default_factory=list)
    position: int = 0


def _replay_purge(event: Event, tombstones: dict[str, tuple[int, str]], replay: _Replay) -> None:
    """A purge vouches for the tombstones it lists; its memories are gone on purpose."""
    for event_id in event.payload.get("events", ()):
        if tombstones.get(event_id, (0, ""))[1] == event.id:
            del tombstones[event_id]
    purged = set(event.payload.get("memories", ()))
    for memory_id in purged:
        replay.memories.pop(memory_id, None)
    for edge_id in [k for k, e in replay.edges.items() if e.src in purged or e.dst in purged]:
        del replay.edges[edge_id]


def _replay(event: Event, replay: _Replay) -> None:
    """Follow the events that set a memory's or an edge's fields."""
    if event.kind == EventKind.DECAY_RUN:
        half_life = event.payload.get("half_life_days")
        if isinstance(half_life, int | float):
            replay.decays.append((replay.position, event.at, float(half_life)))
        return
    if event.kind in _STORED_EVENTS:
        _replay_stored(event, replay)
        return
    target = event.memory_id
    if target is None:
        return
    payload = event.payload
    purged = purged_by(event) is not None  # its kind and time are kept, not what it said
    if event.kind == EventKind.MEMORY_CREATED:
        expected = _Expected(str(payload.get("content_hash", "")), Status.ACTIVE)
        if isinstance(payload.get("lifecycle"), str):
            expected.lifecycle = payload["lifecycle"]
        if isinstance(payload.get("record"), dict):
            expected.record = dict(payload["record"])
            expected.origin_event = event.origin_event or event.id
            expected.posterior = (
                float(payload["alpha"]),
                float(payload["beta"]),
                float(payload["confidence"]),
                0.0,
            )
            expected.activation = float(payload["activation"])
            if isinstance(started := payload.get("activation_at"), str):
                expected.activation_at = datetime.fromisoformat(started)
            expected.position = replay.position
        expected.history_kept = payload.get("history") is True
        expected.states.append(_state(expected, None))
        replay.memories[target] = expected
        return
    if event.kind == EventKind.RELATIONSHIP_CREATED:
        _replay_edge(event, target, replay)
        return
    if event.kind == EventKind.OPERATOR_ACTION and "relationship" in payload:
        edge = replay.edges.get(str(payload["relationship"]))
        if edge is not None and payload.get("action") in ("approve", "reject"):
            edge.status = "active" if payload["action"] == "approve" else "rejected"
            edge.decided_at = event.at
    memory = replay.memories.get(target)
    if memory is None:
        return
    if event.kind in _HISTORY_EVENTS:
        _changed(memory, event)
    if event.kind == EventKind.MEMORY_SUPERSEDED:
        memory.status = Status.SUPERSEDED
        memory.valid_to = None if purged else payload.get("valid_to")
        memory.valid_to_known = not purged
    elif event.kind == EventKind.MEMORY_RETRACTED:
        memory.status = Status.RETRACTED
    elif event.kind == EventKind.MEMORY_RESTORED:
        memory.status = Status.ACTIVE
        memory.valid_to = None if purged else payload.get("valid_to")
        memory.valid_to_known = not purged
    elif event.kind == EventKind.MEMORY_LIFECYCLE:
        to = payload.get("to")
        memory.lifecycle = to if isinstance(to, str) and not purged else None
    if event.kind in _HISTORY_EVENTS:  # each leaves a state that a history span may hold
        memory.states.append(_state(memory, memory.changed_at))
        return
    if event.kind == EventKind.MEMORY_MERGED:
        merged = replay.memories.get(str(payload.get("merged", "")))
        if merged is not None and merged.status == Status.ACTIVE:
            merged.status = Status.ARCHIVED
            _changed(merged, event)
            merged.states.append(_state(merged, merged.changed_at))
    elif event.kind == EventKind.FEEDBACK_GIVEN:
        memory.feedback_count += 1
        value = payload.get("value")
        if memory.posterior is None or not isinstance(value, int | float):
            memory.posterior = None
            return
        alpha, beta, _, mean = memory.posterior
        alpha += max(value, 0.0)
        beta += max(-value, 0.0)
        mean += (value - mean) / memory.feedback_count
        memory.posterior = (alpha, beta, alpha / (alpha + beta), mean)
    elif event.kind in (EventKind.MEMORY_RETRIEVED, EventKind.MEMORY_REINFORCED):
        activation = payload.get("activation")
        if memory.record is not None:
            memory.activation = float(activation) if isinstance(activation, int | float) else None
            memory.activation_at = event.at
            memory.position = replay.position
        memory.access_count += 1
        memory.last_accessed = event.at


#: Events that change a memory's status, lifecycle or validity: each sets its ``changed_at``.
_HISTORY_EVENTS = frozenset(
    {
        EventKind.MEMORY_SUPERSEDED,
        EventKind.MEMORY_RETRACTED,
        EventKind.MEMORY_RESTORED,
        EventKind.MEMORY_LIFECYCLE,
    }
)


def _changed(memory: _Expected, event: Event) -> None:
    """``memory``'s ``changed_at`` after ``event``: its time, or the one it names, never earlier."""
    named = event.payload.get("changed_at")
    at = datetime.fromisoformat(named) if isinstance(named, str) else event.at
    memory.changed_at = at if memory.changed_at is None else max(memory.changed_at, at)


def _replay_edge(event: Event, src: str, replay: _Replay) -> None:
    payload = event.payload
    confidence = payload.get("confidence")
    source = payload.get("source")
    replay.edges[str(payload.get("relationship", ""))] = _Edge(
        src=src,
        relation=str(payload.get("relation", "")),
        dst=str(payload.get("dst", "")),
        status=str(payload.get("status", "")),
        created_at=event.at,
        confidence=float(confidence) if isinstance(confidence, int | float) else None,
        source=str(source) if isinstance(source, str) else None,
        evidence=dict(payload["evidence"]) if isinstance(payload.get("evidence"), dict) else {},
    )


def _state(memory: _Expected, at: datetime | None) -> _State:
    return (at, str(memory.status), memory.lifecycle, memory.valid_to, memory.valid_to_known)


#: Events that change a mind's worlds, world links and peers.
_STORED_EVENTS = frozenset(
    {
        EventKind.WORLD_CREATED,
        EventKind.WORLD_RENAMED,
        EventKind.WORLD_MOVED,
        EventKind.WORLD_LINKED,
        EventKind.WORLD_UNLINKED,
        EventKind.PEER_ADDED,
        EventKind.PEER_FEEDBACK,
        EventKind.PEER_REMOVED,
    }
)


def _replay_stored(event: Event, replay: _Replay) -> None:
    """Follow the events that set a world, a world link or a peer."""
    payload, kind = event.payload, event.kind
    if kind == EventKind.WORLD_CREATED:
        parent, _, name = str(payload.get("path", "")).rpartition("/")
        replay.worlds[str(payload.get("world", ""))] = _World(
            _world_at(replay.worlds, parent), name, event.at
        )
    elif kind in (EventKind.WORLD_RENAMED, EventKind.WORLD_MOVED):
        world = replay.worlds.get(str(payload.get("world", "")))
        if world is not None and kind == EventKind.WORLD_RENAMED:
            world.name = str(payload.get("name", ""))
        elif world is not None:
            world.parent_id = _world_at(replay.worlds, str(payload.get("to", "")))
    elif kind in (EventKind.WORLD_LINKED, EventKind.WORLD_UNLINKED):
        link = (str(payload.get("src", "")), str(payload.get("dst", "")))
        if kind == EventKind.WORLD_LINKED:
            replay.links[link] = event.at
        else:
            replay.links.pop(link, None)
    elif kind == EventKind.PEER_ADDED:
        url = payload.get("url")
        replay.peers[str(payload.get("peer", ""))] = _Peer(
            mind=str(payload.get("mind", "")),
            url=url if isinstance(url, str) else None,
            alpha=PEER_PRIOR_ALPHA,
            beta=PEER_PRIOR_BETA,
            created_at=event.at,
        )
    elif kind == EventKind.PEER_REMOVED:
        replay.peers.pop(str(payload.get("peer", "")), None)
    else:  # peer_feedback: the posterior it left
        peer = replay.peers.get(str(payload.get("peer", "")))
        alpha, beta = payload.get("alpha"), payload.get("beta")
        if peer is not None and isinstance(alpha, int | float) and isinstance(beta, int | float):
            peer.alpha, peer.beta = float(alpha), float(beta)


def _world_path(worlds: Mapping[str, Any], world_id: str) -> str:
    """The path of ``world_id`` through the parents ``worlds`` give (a cycle ends it)."""
    names: list[str] = []
    seen: set[str] = set()
    while world_id != ROOT_WORLD and world_id in worlds and world_id not in seen:
        seen.add(world_id)
        names.append(worlds[world_id].name)
        world_id = worlds[world_id].parent_id
    return "/".join(reversed(names))


def _world_at(worlds: dict[str, _World], path: str) -> str:
    """The id of the world at ``path`` among ``worlds`` (``ROOT_WORLD`` for the root or none)."""
    if path == ROOT_WORLD:
        return ROOT_WORLD
    return next((i for i in worlds if _world_path(worlds, i) == path), ROOT_WORLD)
