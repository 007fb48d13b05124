"""Verification of a mind's audit log: the chain, its events, and a replay of them.

Verification recomputes every entry of the chain (``noema.memory.records.audit``),
checks events line up with entries, and replays the events to rebuild what
every memory and relationship must hold: a memory's ``memory_created`` event
records its content hash, every field fixed at write time (``FIXED_FIELDS`` as
they are, ``DIGESTED_FIELDS`` as sha256) and the starting values of the ones
that change; feedback, recall, reinforcement, supersession, retraction, merges
and decay runs are the only changes, each an event. A field that differs from
its replay is named.

The rows beside them replay from events too (``StoredRows``, ADR 0037): each
world's parent, name and time from ``world_created``, ``world_renamed`` and
``world_moved``; each world link from ``world_linked``/``world_unlinked``; each
peer's mind, url and trust posterior from ``peer_added``, ``peer_feedback`` and
``peer_removed``; and each history span of a memory must hold the state its
events gave it from the span's start, in a chain ending at its ``changed_at``.
The mind's own row must match its digest. A value no codec reads (an unknown
status, text that is not JSON) is a finding naming the row and the column, as
is a number column holding text.

A purged event (a tombstone) verifies when the later, audited purge event that
it names lists it, and the memories the purge lists are no longer expected to
exist.

A hash chain cannot show that its newest entries were cut off together with
what they logged; a checkpoint of its head kept elsewhere does (``Checkpoint``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from concepts import AuditEntry, Event, EventKind, Memory, Relationship, Status
from concepts.federation import PEER_PRIOR_ALPHA, PEER_PRIOR_BETA
from concepts.paths import ROOT_WORLD
from noema.clock import iso
from noema.errors import IntegrityError, InvalidInput
from noema.ids import content_hash, mind_digest
from noema.memory.records.activation import decayed
from noema.memory.records.audit import (
    DIGESTED_FIELDS,
    FIXED_FIELDS,
    GENESIS,
    canonical,
    entry_hash,
    event_digest,
    fixed_record,
    purged_by,
)
from noema.storage.ops import HistorySpan, StoredRows

__all__ = ["Checkpoint", "VerifyReport", "checkpoint_of", "verify_records"]

#: Activation is replayed through decay runs in floating point: equal to this.
_ACTIVATION_TOLERANCE = 1e-9
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICRO = timedelta(microseconds=1)


@dataclass
class VerifyReport:
    """What verification checked and the first thing that did not hold.

    ``unrecorded``: memories written before their created event recorded every
    field (schema 5); only their content, key, kind and status can be checked.
    """

    ok: bool = True
    entries: int = 0
    events: int = 0
    memories: int = 0
    relationships: int = 0
    unrecorded: int = 0
    problem: str | None = None
    problems: list[str] = field(default_factory=list)

    def fail(self, message: str) -> None:
        """Record a problem: the first is ``problem``; up to 20 are kept in ``problems``."""
        self.ok = False
        if self.problem is None:
            self.problem = message
        if len(self.problems) < 20:
            self.problems.append(message)


@dataclass(frozen=True)
class Checkpoint:
    """The head of a mind's audit chain, to keep where the database cannot reach it.

    Verifying against it proves the chain still holds that entry unchanged: a
    tail cut together with what it logged, or a rewritten history, shows.
    """

    mind_id: str
    seq: int
    hash: str
    at: str

    def to_json(self) -> str:
        """The checkpoint as one line of canonical JSON."""
        return canonical(
            {"mind_id": self.mind_id, "seq": self.seq, "hash": self.hash, "at": self.at}
        )

    @classmethod
    def from_json(cls, text: str) -> Checkpoint:
        """Read a checkpoint written by ``to_json``; malformed text raises ``InvalidInput``."""
        try:
            data = json.loads(text)
            checkpoint = cls(
                str(data["mind_id"]), int(data["seq"]), str(data["hash"]), str(data["at"])
            )
        except (ValueError, KeyError, TypeError):
            raise InvalidInput(
                "checkpoint: not a Noema checkpoint (JSON with mind_id, seq, hash, at)"
            ) from None
        if checkpoint.seq < 0 or len(checkpoint.hash) != 64:
            raise InvalidInput("checkpoint: its seq or hash is malformed")
        return checkpoint


def checkpoint_of(mind_id: str, head: AuditEntry | None) -> Checkpoint:
    """The checkpoint of a chain whose newest entry is ``head`` (none: empty)."""
    if head is None:
        return Checkpoint(mind_id, 0, GENESIS, "")
    return Checkpoint(mind_id, head.seq, head.hash, iso(head.at))


def _fixed_field_changed(memory: Memory, record: dict[str, Any]) -> str | None:
    """The first fixed field of ``memory`` that differs from its created event."""
    now = fixed_record(memory)
    for name in (*FIXED_FIELDS, *DIGESTED_FIELDS):
        if now.get(name) != record.get(name):
            return name
    return None


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


def verify_records(
    entries: Iterable[AuditEntry],
    events: Iterable[Event],
    memories: Iterable[Memory],
    relationships: Iterable[Relationship] = (),
    *,
    stored: StoredRows | None = None,
    against: Checkpoint | None = None,
) -> VerifyReport:
    """Check a mind's audit chain, its events, and every memory and edge against them.

    ``entries`` and ``events`` come in append order; all four may be streamed.
    ``stored``: the mind's other rows (worlds, links, history, peers, its own), to
    check as well. ``against``: a checkpoint taken earlier, whose entry the chain
    must still hold. A stored value no codec reads is a finding, not an error.
    """
    report = VerifyReport()
    try:
        _verify(report, entries, events, memories, relationships, stored, against)
    except IntegrityError as exc:  # a row that cannot be read: the streams stop there
        report.fail(str(exc))
    return report


def _verify(
    report: VerifyReport,
    entries: Iterable[AuditEntry],
    events: Iterable[Event],
    memories: Iterable[Memory],
    relationships: Iterable[Relationship],
    stored: StoredRows | None,
    against: Checkpoint | None,
) -> None:
    replay = _Replay()
    tombstones: dict[str, tuple[int, str]] = {}  # purged event -> (its entry, its purge)
    prev = GENESIS
    event_iter: Iterator[Event] = iter(events)
    for entry in entries:
        report.entries += 1
        expected_seq = report.entries
        if entry.seq != expected_seq:
            report.fail(f"audit entry {entry.seq}: expected position {expected_seq}")
            return
        if entry.prev_hash != prev:
            report.fail(
                f"audit entry {entry.seq}: previous hash does not match entry {entry.seq - 1}"
            )
        recomputed = entry_hash(
            entry.seq, entry.prev_hash, entry.event_id, entry.action, entry.at, entry.digest
        )
        if recomputed != entry.hash:
            report.fail(f"audit entry {entry.seq}: hash does not match its contents")
        prev = entry.hash
        if against is not None and entry.seq == against.seq and entry.hash != against.hash:
            report.fail(
                f"audit entry {entry.seq} differs from the checkpoint of {against.at}: "
                "the history before it was rewritten"
            )
        event = next(event_iter, None)
        if event is None:
            report.fail(f"audit entry {entry.seq}: its event {entry.event_id} is missing")
            continue
        report.events += 1
        if event.id != entry.event_id:
            report.fail(
                f"audit entry {entry.seq}: names event {entry.event_id}, log has {event.id}"
            )
        elif event_digest(event) != entry.digest:
            purge = purged_by(event)
            if purge is None:
                report.fail(f"audit entry {entry.seq}: event {event.id} was altered")
            else:
                tombstones[event.id] = (entry.seq, purge)
        if event.kind == EventKind.MEMORY_PURGED:
            _replay_purge(event, tombstones, replay)
        replay.position = entry.seq
        _replay(event, replay)
    for event in event_iter:
        report.events += 1
        report.fail(f"event {event.id} has no audit entry")
    if against is not None and report.entries < against.seq:
        report.fail(
            f"the audit chain ends at entry {report.entries}, but the checkpoint of {against.at} "
            f"names entry {against.seq}: its newest entries were cut off"
        )
    for event_id, (seq, _) in tombstones.items():
        report.fail(f"audit entry {seq}: event {event_id} was altered (no purge lists it)")
    spanned = {span[0] for span in stored.history} if stored is not None else set()
    held = _check_memories(report, replay, memories, spanned)
    _check_relationships(report, replay, relationships)
    if stored is not None:
        _check_stored(report, replay, stored, held)


#: Number columns of a memory: SQLite keeps text written into one as text.
_NUMBERS = (
    "confidence",
    "alpha",
    "beta",
    "importance",
    "salience",
    "trust",
    "credibility",
    "activation",
    "feedback_mean",
    "access_count",
    "feedback_count",
)


def _check_memories(
    report: VerifyReport, replay: _Replay, memories: Iterable[Memory], spanned: set[str]
) -> dict[str, Memory]:
    """Check each memory; those with history (``spanned``) or a ``changed_at``, by id."""
    seen: set[str] = set()
    held: dict[str, Memory] = {}
    for memory in memories:
        report.memories += 1
        seen.add(memory.id)
        if memory.id in spanned or memory.changed_at is not None:
            held[memory.id] = memory
        expected = replay.memories.get(memory.id)
        wrong = next((n for n in _NUMBERS if not _is_number(getattr(memory, n))), None)
        if wrong is not None:
            value = getattr(memory, wrong)
            report.fail(f"memory {memory.id}: {wrong} {value!r:.40} is not a valid value")
        elif (
            content_hash(memory.kind, memory.content, memory.key, memory.world)
            != memory.content_hash
        ):
            report.fail(f"memory {memory.id}: content does not match its content hash")
        elif expected is None or expected.content_hash != memory.content_hash:
            report.fail(f"memory {memory.id}: content hash differs from its memory_created event")
        elif expected.status != memory.status:
            report.fail(
                f"memory {memory.id}: status {memory.status.value} differs from its events "
                f"({expected.status})"
            )
        elif expected.lifecycle is not None and expected.lifecycle != memory.lifecycle:
            report.fail(
                f"memory {memory.id}: lifecycle differs from its events (stored "
                f"{memory.lifecycle.value}, its events say {expected.lifecycle})"
            )
        elif expected.record is None:
            report.unrecorded += 1
        elif (changed := _changed_field(memory, expected, replay.decays)) is not None:
            report.fail(f"memory {memory.id}: {changed} differs from its events")
    for memory_id in replay.memories.keys() - seen:
        report.fail(f"memory {memory_id}: missing, though its memory_created event is logged")
    return held


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _changed_field(
    memory: Memory, expected: _Expected, decays: Sequence[tuple[int, datetime, float]]
) -> str | None:
    """The first field of ``memory`` that its events do not lead to, if any."""
    if (fixed := _fixed_field_changed(memory, expected.record or {})) is not None:
        return fixed
    if memory.origin_event != expected.origin_event:
        return "origin_event"
    replayed: dict[str, tuple[Any, Any]] = {
        "feedback_count": (memory.feedback_count, expected.feedback_count),
        "access_count": (memory.access_count, expected.access_count),
        "last_accessed": (memory.last_accessed, expected.last_accessed),
    }
    if expected.posterior is not None:
        alpha, beta, confidence, mean = expected.posterior
        replayed["alpha"] = (memory.alpha, alpha)
        replayed["beta"] = (memory.beta, beta)
        replayed["confidence"] = (memory.confidence, confidence)
        replayed["feedback_mean"] = (memory.feedback_mean, mean)
    if expected.valid_to_known:
        replayed["valid_to"] = (memory.valid_to and iso(memory.valid_to), expected.valid_to)
    changed = expected.changed_at
    replayed["changed_at"] = (
        memory.changed_at,
        None if changed is None else max(changed, memory.recorded_at),
    )
    for name, (stored, value) in replayed.items():
        if stored != value:
            return name
    if expected.activation is None:
        return None
    activation, at = _decayed(memory, expected.activation, expected, decays)
    if memory.activation_at != at:
        return "activation_at"
    if abs(memory.activation - activation) > _ACTIVATION_TOLERANCE:
        return "activation"
    return None


def _decayed(
    memory: Memory,
    activation: float,
    expected: _Expected,
    decays: Sequence[tuple[int, datetime, float]],
) -> tuple[float, datetime]:
    """Activation and its time after the decay runs logged since it was last set.

    A run lowers every memory whose activation is older than the run; runs with
    one half-life compose, so consecutive ones are applied as one step.
    """
    since = expected.activation_at or memory.recorded_at
    later = [d for d in decays if d[0] > expected.position]
    start = 0
    while start < len(later):
        half_life = later[start][2]
        end = start
        while end + 1 < len(later) and later[end + 1][2] == half_life:
            end += 1
        until = max(at for _, at, _ in later[start : end + 1])
        if until > since:
            activation = decayed(activation, since, until, memory.importance, half_life)
            since = until
        start = end + 1
    return activation, since


def _check_relationships(
    report: VerifyReport, replay: _Replay, relationships: Iterable[Relationship]
) -> None:
    seen: set[str] = set()
    for edge in relationships:
        report.relationships += 1
        seen.add(edge.id)
        expected = replay.edges.get(edge.id)
        if expected is None:
            report.fail(f"relationship {edge.id}: no relationship_created event logs it")
            continue
        stored = {
            "src": edge.src,
            "relation": edge.relation.value,
            "dst": edge.dst,
            "status": edge.status.value,
            "created_at": edge.created_at,
            "decided_at": edge.decided_at,
            "confidence": edge.confidence if expected.confidence is not None else None,
            "source": edge.source if expected.source is not None else None,
            "evidence": edge.evidence,
        }
        for name, value in stored.items():
            if getattr(expected, name) != value:
                report.fail(f"relationship {edge.id}: {name} differs from its events")
                break
    for edge_id in replay.edges.keys() - seen:
        report.fail(f"relationship {edge_id}: missing, though its relationship_created is logged")


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


def _micros(at: datetime) -> int:
    return (at - _EPOCH) // _MICRO


def _check_stored(
    report: VerifyReport, replay: _Replay, stored: StoredRows, held: dict[str, Memory]
) -> None:
    """Check the mind's row, worlds, world links, history spans and peers against the replay."""
    for line in stored.unreadable:
        report.fail(line)
    if stored.mind is None:
        report.fail("mind: its row is missing")
    else:
        info, digest = stored.mind
        if digest != mind_digest(info.id, info.name, _micros(info.created_at)):
            report.fail(f"mind {info.name!r}: its name or created_at differs from its digest")
    _check_worlds(report, replay, stored)
    _check_history(report, replay, stored.history, held)
    seen: set[str] = set()
    for peer in stored.peers:
        seen.add(peer.name)
        expected = replay.peers.get(peer.name)
        if expected is None:
            report.fail(f"peer {peer.name}: no peer_added event logs it")
            continue
        for name, value in (
            ("peer_mind", peer.mind),
            ("url", peer.url),
            ("alpha", peer.alpha),
            ("beta", peer.beta),
            ("created_at", peer.created_at),
        ):
            if getattr(expected, name.removeprefix("peer_")) != value:
                report.fail(f"peer {peer.name}: {name} differs from its events")
                break
    for name in replay.peers.keys() - seen:
        report.fail(f"peer {name}: missing, though its peer_added event is logged")


def _check_worlds(report: VerifyReport, replay: _Replay, stored: StoredRows) -> None:
    held = {w.id: w for w in stored.worlds}
    seen: set[str] = set()
    for world in stored.worlds:
        seen.add(world.id)
        where = f"world {_world_path(held, world.id)!r}"
        expected = replay.worlds.get(world.id)
        if expected is None:
            report.fail(f"{where}: no world_created event logs it")
            continue
        for name in ("parent_id", "name", "created_at"):
            if getattr(expected, name) != getattr(world, name):
                report.fail(f"{where}: {name} differs from its events")
                break
    for world_id in replay.worlds.keys() - seen:
        path = _world_path(replay.worlds, world_id)
        report.fail(f"world {path!r}: missing, though its world_created event is logged")
    # A link restored from an export holds the mind's creation time: an export has no link times.
    restored = stored.mind[0].created_at if stored.mind is not None else None
    linked: set[tuple[str, str]] = set()
    for src, dst, at in stored.links:
        linked.add((src, dst))
        where = f"world link {_world_path(held, src)!r} -> {_world_path(held, dst)!r}"
        logged = replay.links.get((src, dst))
        if logged is None:
            report.fail(f"{where}: no world_linked event logs it")
        elif at not in (logged, restored):
            report.fail(f"{where}: created_at differs from its events")
    for src, dst in replay.links.keys() - linked:
        where = f"{_world_path(replay.worlds, src)!r} -> {_world_path(replay.worlds, dst)!r}"
        report.fail(f"world link {where}: missing, though its world_linked event is logged")


def _check_history(
    report: VerifyReport,
    replay: _Replay,
    history: Sequence[HistorySpan],
    held: dict[str, Memory],
) -> None:
    """Each memory's spans tile its past up to its ``changed_at``, each in the state of its start.

    ``held``: the memories with spans or a ``changed_at``. A memory whose created
    event says its history is kept must have spans from its recording on; an
    older one's may start later (its states from before history was kept).
    """
    spans: dict[str, list[HistorySpan]] = {}
    for span in history:
        spans.setdefault(span[0], []).append(span)
    for memory_id in spans.keys() - held.keys():
        report.fail(f"history of memory {memory_id}: no such memory")
    for memory_id, memory in held.items():
        expected = replay.memories.get(memory_id)
        if expected is None:
            continue  # reported with the memory
        group = spans.get(memory_id, [])
        if group:
            problem = _span_problem(group, memory, expected)
        elif (
            expected.history_kept and (memory.changed_at or memory.recorded_at) > memory.recorded_at
        ):
            problem = "its spans are missing"
        else:
            problem = None
        if problem is not None:
            report.fail(f"history of memory {memory_id}: {problem}")


def _span_problem(spans: Sequence[HistorySpan], memory: Memory, expected: _Expected) -> str | None:
    """What in a memory's ``spans`` its events do not lead to, if anything."""
    recorded = memory.recorded_at
    states = [
        (recorded if at is None else max(at, recorded), status, lifecycle, valid_to, known)
        for at, status, lifecycle, valid_to, known in expected.states
    ]
    times = {state[0] for state in states}
    if expected.history_kept and spans[0][1] != recorded:
        return f"sys_from of the span from {iso(spans[0][1])} differs from its events"
    for index, (_, since, until, status, lifecycle, valid_to) in enumerate(spans):
        where = f"the span from {iso(since)}"
        ends = spans[index + 1][1] if index + 1 < len(spans) else memory.changed_at
        if since not in times:
            return f"sys_from of {where} differs from its events"
        if until != ends or until <= since:
            return f"sys_to of {where} differs from its events"
        _, want_status, want_lifecycle, want_valid_to, known = next(
            state for state in reversed(states) if state[0] <= since
        )
        if status != want_status:
            return f"status of {where} differs from its events"
        if want_lifecycle is not None and lifecycle != want_lifecycle:
            return f"lifecycle of {where} differs from its events"
        if known and (None if valid_to is None else iso(valid_to)) != want_valid_to:
            return f"valid_to of {where} differs from its events"
    return None
