"""Purge for privacy: the only path that deletes (``Mind.forget``, ``noema forget``).

A purge removes the chosen memories for real: their rows, vectors, entity links,
full-text entries and edges; the memories derived from them (``derived_from``,
followed to the end), which would otherwise repeat them; the payloads of events
that quote them (replaced by a tombstone); and what the workspace snapshot held
of them. One ``memory_purged`` event, content-free, lists what went, and the
audit chain still verifies (see ``noema.memory.records.audit``). Decay and consolidation
never delete.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from concepts import (
    Candidate,
    Event,
    EventKind,
    Lifecycle,
    Memory,
    MindInfo,
    RecallFilters,
    Relation,
    Status,
    WorkspaceSnapshot,
)
from noema.clock import Clock
from noema.errors import InvalidInput, NotFound
from noema.memory.records.audit import TOMBSTONE_KEY, tombstone
from noema.memory.records.events import EventLog
from noema.memory.write.composed import decompose
from noema.storage import Session, Storage, ops

__all__ = ["PurgePlan", "PurgeReport", "plan_purge", "purge"]

#: Rows read per step while scanning a mind's memories or events.
PAGE = 2_000
#: Every status: a purge reaches superseded, retracted and archived memories too.
ANY = tuple(Status)
#: Shortest content searched for in event payloads: shorter text would match by accident.
MIN_QUOTE_CHARS = 8


@dataclass
class PurgePlan:
    """What a purge will remove: the memories asked for and those derived from them."""

    memories: list[Memory]
    derived: list[str] = field(default_factory=list)
    containing: str | None = None

    @property
    def ids(self) -> list[str]:
        """The ids of the memories the plan purges."""
        return [m.id for m in self.memories]


@dataclass
class PurgeReport:
    """What a purge removed."""

    memories: list[str]
    derived: list[str]
    events: int
    event_id: str | None


def plan_purge(
    session: Session,
    mind: MindInfo,
    *,
    ids: Sequence[str] = (),
    key: str | None = None,
    filters: RecallFilters | None = None,
    containing: str | None = None,
) -> PurgePlan:
    """The memories a purge would remove, derived ones included; nothing is written.

    Selectors add up: the ``ids``, every memory (any status) with ``key``, every
    memory passing ``filters``, every memory holding ``containing`` (ignoring
    case) in any of its text: content, summary, key, tags, payload keys or values.
    Filters that pass every memory are refused like no selector at all.
    """
    if not (ids or key or filters or containing):
        raise InvalidInput("forget: name memories (ids), a key, a filter or a text to match")
    if filters is not None and _passes_everything(filters):
        raise InvalidInput(
            "forget: the filters pass every memory of the mind; name memories (ids), a key, "
            "a narrower filter or a text to match"
        )
    chosen: dict[str, Memory] = {}
    if ids:
        found = {m.id: m for m in session.run(ops.GetMemories(mind.id, list(ids)))}
        missing = [i for i in ids if i not in found]
        if missing:
            raise NotFound(f"no memory {missing[0]} in mind {mind.name!r}")
        chosen.update(found)
    if key is not None:
        chosen.update((m.id, m) for m in _scan(session, mind, RecallFilters(key=key, statuses=ANY)))
    if filters is not None:
        chosen.update((m.id, m) for m in _scan(session, mind, filters))
    if containing:
        needle = containing.casefold()
        chosen.update(
            (m.id, m)
            for m in _scan(session, mind, RecallFilters(statuses=ANY))
            if needle in _texts(m)
        )
    derived = _derived_from(session, mind, set(chosen))
    if derived:
        chosen.update((m.id, m) for m in session.run(ops.GetMemories(mind.id, derived)))
    return PurgePlan(sorted(chosen.values(), key=lambda m: m.id), sorted(derived), containing)


def purge(storage: Storage, mind: MindInfo, clock: Clock, plan: PurgePlan) -> PurgeReport:
    """Remove what ``plan`` names, in one transaction; then let the backend reclaim space."""
    with storage.transaction() as session:
        # Re-read inside the writing transaction: the plan may be stale.
        memories: list[Memory] = session.run(ops.GetMemories(mind.id, plan.ids))
        derived = _derived_from(session, mind, {m.id for m in memories})
        if derived:
            more: list[Memory] = session.run(ops.GetMemories(mind.id, derived))
            memories = [*memories, *more]
        if not memories:
            return PurgeReport([], [], 0, None)
        ids = {m.id for m in memories}
        derived = sorted(set(derived) | (set(plan.derived) & ids))
        quotes = sorted(
            {text for m in memories for text in _quotable(m) if len(text) >= MIN_QUOTE_CHARS}
        )
        if plan.containing:  # what the operator asked to forget, wherever it is said
            quotes.append(plan.containing.casefold())
        origins = {m.origin_event for m in memories if m.origin_event}
        quoting = [
            e.id
            for e in _events(session, mind)
            if TOMBSTONE_KEY not in e.payload
            and (
                (e.memory_id in ids and not _merge_of_a_kept_memory(e, ids))
                or e.id in origins
                or _quotes(e.payload, quotes)
            )
        ]
        log = EventLog(mind.id, clock.now())
        event = log.add(
            EventKind.MEMORY_PURGED,
            payload={
                "memories": sorted(ids),
                "derived": derived,
                "events": sorted(quoting),
            },
        )
        session.run(ops.TombstoneEvents(mind.id, quoting, tombstone(event.id)))
        decompose(session, mind.id, sorted(ids))
        session.run(ops.PurgeMemories(mind.id, sorted(ids)))
        _scrub_snapshot(session, mind, ids, quotes, log.now)
        log.flush(session)
    storage.reclaim()
    return PurgeReport(
        memories=sorted(ids), derived=derived, events=len(quoting), event_id=event.id
    )


def _passes_everything(filters: RecallFilters) -> bool:
    every = {"statuses": ANY, "lifecycles": tuple(Lifecycle)}
    return (
        set(filters.statuses) == set(ANY)
        and set(filters.lifecycles) == set(Lifecycle)
        and filters.model_copy(update=every) == RecallFilters(**every)
    )


def _quotable(memory: Memory) -> list[str]:
    """What events may quote of ``memory``, casefolded: its content, summary, payload values.

    Not its key, tags or payload keys: labels other memories share, whose events
    a purge of this one must leave alone.
    """
    texts = [memory.content, memory.summary or "", *_strings(memory.payload, keys=False)]
    return [t.casefold() for t in texts if t]


def _texts(memory: Memory) -> str:
    """All of ``memory``'s own text in one casefolded string, for ``containing``."""
    labels = [memory.key or "", *memory.tags, *_strings(memory.payload)]
    return "\x1f".join([*_quotable(memory), *(t.casefold() for t in labels if t)])


def _strings(value: Any, *, keys: bool = True) -> list[str]:
    """Every string inside a JSON value, with its dict keys unless ``keys`` is false."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [
            s for k, v in value.items() for s in ([str(k)] if keys else []) + _strings(v, keys=keys)
        ]
    if isinstance(value, list | tuple):
        return [s for v in value for s in _strings(v, keys=keys)]
    return []


def _scan(session: Session, mind: MindInfo, filters: RecallFilters) -> Iterable[Memory]:
    after: str | None = None
    while True:
        page = session.run(ops.ScanMemories(mind.id, filters=filters, after_id=after, limit=PAGE))
        yield from page
        if len(page) < PAGE:
            return
        after = page[-1].id


def _derived_from(session: Session, mind: MindInfo, ids: set[str]) -> list[str]:
    """Memories built from any of ``ids`` (``derived_from`` edges), transitively."""
    seen, frontier, derived = set(ids), list(ids), []
    while frontier:
        edges = session.run(
            ops.FindRelationships(mind.id, memory_ids=frontier, relations=[Relation.DERIVED_FROM])
        )
        frontier = []
        for edge in edges:
            if edge.dst in seen and edge.src not in seen:
                seen.add(edge.src)
                frontier.append(edge.src)
                derived.append(edge.src)
    return derived


def _events(session: Session, mind: MindInfo) -> Iterable[Event]:
    after: int | None = None
    while True:
        page = session.run(ops.ListEvents(mind.id, after_seq=after, limit=PAGE))
        yield from page
        if len(page) < PAGE:
            return
        after = page[-1].seq


#: The payload fields of events that hold a user's text; the rest are Noema's own
#: values (ids, kinds, channels, numbers), which a purge must not read as quotes.
USER_TEXT = frozenset({"content", "summary", "key", "tags", "payload", "query", "note", "reason"})


def _quotes(payload: dict[str, Any], quotes: Sequence[str]) -> bool:
    """Whether a user's text in an event's ``payload`` contains one of ``quotes``."""
    return any(
        q in text.casefold()
        for name, value in payload.items()
        if name in USER_TEXT
        for text in _strings(value)
        for q in quotes
    )


def _merge_of_a_kept_memory(event: Event, ids: set[str]) -> bool:
    """Whether ``event`` merged a memory that stays into a purged one.

    Such an event holds ids only, and verify needs it to see why the kept
    memory is archived.
    """
    merged = event.payload.get("merged")
    return event.kind == EventKind.MEMORY_MERGED and isinstance(merged, str) and merged not in ids


def _scrub_snapshot(
    session: Session, mind: MindInfo, ids: set[str], quotes: Sequence[str], now: datetime
) -> None:
    """Drop from the saved workspace what came from, or quotes, a purged memory."""
    saved = session.run(ops.LoadSnapshot(mind.id))
    if saved is None:
        return
    snapshot = WorkspaceSnapshot.model_validate_json(saved[1])

    def kept(candidate: Candidate) -> bool:
        return candidate.memory_id not in ids and not _quotes(
            {"content": candidate.content, "payload": candidate.payload}, quotes
        )

    scrubbed = snapshot.model_copy(
        update={
            "items": tuple(i for i in snapshot.items if kept(i.candidate)),
            "broadcasts": tuple(c for c in snapshot.broadcasts if kept(c)),
            "decisions": tuple(d for d in snapshot.decisions if kept(d.candidate)),
        }
    )
    if scrubbed != snapshot:
        session.run(ops.SaveSnapshot(mind.id, snapshot.cycle, now, scrubbed.model_dump_json()))
