"""The stored rows compared with the replay of their events, and the report of what held.

``VerifyReport`` counts what was checked and keeps the first problems found;
each ``_check_*`` compares one kind of row (memories, relationships, worlds and
their links, history spans, peers, the mind's own row) with what
``verify_replay`` says its events left it holding. ``verify`` runs them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from concepts import Memory, Relationship
from noema.clock import iso
from noema.ids import content_hash, mind_digest
from noema.memory.records.activation import decayed
from noema.memory.records.audit import (
    DIGESTED_FIELDS,
    FIXED_FIELDS,
    THREAD_FIELDS,
    fixed_record,
)
from noema.memory.upkeep.verify_replay import (
    _Expected,
    _Replay,
    _world_path,
)
from noema.storage.ops import HistorySpan, StoredRows

__all__ = ["VerifyReport"]


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


def _fixed_field_changed(memory: Memory, record: dict[str, Any]) -> str | None:
    """The first fixed field of ``memory`` that differs from its created event."""
    now = fixed_record(memory)
    for name in (*FIXED_FIELDS, *DIGESTED_FIELDS, *THREAD_FIELDS):
        if now.get(name) != record.get(name):
            return name
    return None


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
