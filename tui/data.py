"""What the TUI reads from and writes to one mind: plain blocking calls, run in workers.

Screens never touch storage: every call here goes through the ``Mind`` API,
each a short transaction, so it is safe beside a ``noema run`` writing to the
same database. Form errors are routed by the field the error names
(``UsageError.field``), never by its text.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import PurePath
from typing import Any, Literal

from pydantic import ValidationError

from concepts import (
    AuditEntry,
    Channel,
    ConfidenceTier,
    Event,
    EventKind,
    Memory,
    MemoryInput,
    RecallFilters,
    RecallResult,
    Relationship,
    WorkspaceSnapshot,
    WorldInfo,
)
from noema.errors import InvalidInput, UsageError
from noema.memory.knowledge.health import HealthReport
from noema.memory.records.activation import activation_series, decayed
from noema.memory.records.audit import purged_by
from noema.mind import Mind, recall_query
from noema.serialize import memory_tier

__all__ = [
    "ATTENTION",
    "COMPONENTS",
    "CONVERSATION_EVENTS",
    "ConversationLine",
    "Edge",
    "FieldErrors",
    "MemoryDetail",
    "MindData",
    "Rival",
    "WorkspaceView",
    "other_component",
]

#: The recall components the explorer shows in their own columns, in this order.
COMPONENTS = ("text", "vector", "recency", "activation", "importance", "credibility")

#: Attention's components, in the order the workspace shows them, with their short names.
ATTENTION = {
    "salience": "sal",
    "novelty": "nov",
    "relevance": "rel",
    "importance": "imp",
    "credibility": "cred",
}

#: The fields of the knowledge form; an error naming one of them is shown beside it.
_FORM_FIELDS = frozenset({"content", "kind", "epistemic", "key", "importance", "tags"})

#: How many of the newest events of a memory its detail lists.
DETAIL_EVENTS = 200

#: Event kinds whose payload carries the memory's activation just after the event.
_ACTIVATION_EVENTS = (EventKind.MEMORY_RETRIEVED, EventKind.MEMORY_REINFORCED)

#: How many of the newest conversation events (messages received, actions taken) are read.
CONVERSATION_EVENTS = 50

#: The events a conversation is made of: what the mind was told, what it did.
_CONVERSATION_KINDS = (EventKind.OBSERVATION_RECEIVED, EventKind.ACTION_TAKEN)


def other_component(result: RecallResult) -> float:
    """The part of a score outside ``COMPONENTS`` (graph, feedback, exploration)."""
    return sum(v for k, v in result.components.items() if k not in COMPONENTS)


@dataclass(frozen=True)
class WorkspaceView:
    """The mind's workspace as last saved by a running ``noema run`` (or empty)."""

    snapshot: WorkspaceSnapshot
    saved: bool


@dataclass(frozen=True)
class Rival:
    """A candidate an action competed with in its cycle."""

    source: str
    score: float
    #: ``None``: a thought; otherwise the kind of action it was.
    action: str | None = None
    admitted: bool = False
    #: An action that would have won but this one passed the gate: put up again next cycle.
    held: bool = False


@dataclass(frozen=True)
class ConversationLine:
    """One line of the mind's conversation: a user's message or an action the mind took.

    A user's message is an ``observation_received`` event on the ``user`` channel;
    an action is an ``action_taken`` event, with what won it the gate.
    """

    #: The event's id.
    id: str
    at: datetime
    #: ``"user"`` or ``"mind"``.
    speaker: Literal["user", "mind"]
    content: str
    #: The kind of action (``reply``, ``message``, a plugin's); ``None`` for a user's message.
    action: str | None = None
    #: The process that proposed the action.
    source: str = ""
    #: The action's attention score, and its components.
    score: float | None = None
    components: dict[str, float] = field(default_factory=dict)
    #: The cycle it was received or taken in.
    cycle: int | None = None
    rivals: tuple[Rival, ...] = ()
    #: How many memories were in the reply's context, and the tool calls made for it.
    context: int = 0
    tool_calls: int = 0

    @property
    def held(self) -> int:
        """How many rival actions were held back for this one."""
        return sum(r.held for r in self.rivals)


@dataclass(frozen=True)
class Edge:
    """A relationship seen from one memory, with the memory at its other end."""

    relationship: Relationship
    direction: Literal["out", "in"]
    other: Memory | None

    @property
    def other_id(self) -> str:
        """The id of the memory at the edge's other end (known even when that memory is not)."""
        edge = self.relationship
        return edge.dst if self.direction == "out" else edge.src


@dataclass(frozen=True)
class MemoryDetail:
    """Everything the detail screen shows of one memory."""

    memory: Memory
    origin: Event | None
    edges: list[Edge]
    events: list[Event]
    audit: AuditEntry | None
    #: Its confidence tier at the mind's clock (``noema.serialize.memory_tier``).
    tier: ConfidenceTier
    activation: list[float] = field(default_factory=list)
    #: The path of its world (``""``: the root).
    world: str = ""


def _line(event: Event) -> ConversationLine | None:
    """The conversation line an event is; ``None``: another channel's message, or forgotten."""
    if purged_by(event) is not None:  # ``Mind.forget`` took what it said: it leaves the panel
        return None
    payload = event.payload
    cycle = payload.get("cycle")
    cycle = cycle if isinstance(cycle, int) else None
    if event.kind == EventKind.OBSERVATION_RECEIVED:
        if payload.get("channel") != Channel.USER:
            return None
        said = payload.get("at")
        return ConversationLine(
            id=event.id,
            at=datetime.fromisoformat(said) if isinstance(said, str) else event.at,
            speaker="user",
            content=str(payload.get("content", "")),
            cycle=cycle,
        )
    score = payload.get("score")
    components = payload.get("components")
    carried = payload.get("payload")
    carried = carried if isinstance(carried, dict) else {}
    return ConversationLine(
        id=event.id,
        at=event.at,
        speaker="mind",
        content=str(payload.get("content", "")),
        action=str(payload.get("action") or "action"),
        source=str(payload.get("source", "")),
        score=float(score) if isinstance(score, int | float) else None,
        components=dict(components) if isinstance(components, dict) else {},
        cycle=cycle,
        rivals=tuple(
            Rival(
                source=str(r.get("source", "")),
                score=float(r.get("score", 0.0)),
                action=None if r.get("action") is None else str(r["action"]),
                admitted=bool(r.get("admitted")),
                held=bool(r.get("held")),
            )
            for r in payload.get("rivals", ())
            if isinstance(r, dict)
        ),
        context=len(carried.get("context") or ()),
        tool_calls=len(carried.get("actions") or ()),
    )


class FieldErrors(InvalidInput):
    """Input a form refused, as one message per form field (``""`` for the whole form)."""

    def __init__(self, errors: dict[str, str]) -> None:
        self.errors = errors
        super().__init__("; ".join(f"{k}: {v}" if k else v for k, v in errors.items()))


class MindData:
    """The TUI's access to one mind."""

    def __init__(self, mind: Mind) -> None:
        self.mind = mind

    @property
    def title(self) -> str:
        """The mind's name and where it lives, without credentials or directories."""
        url = self.mind.url
        scheme, _, rest = url.partition("://")
        if scheme == "sqlite":
            return f"{self.mind.name} · sqlite · {PurePath(rest).name}"
        database = rest.rpartition("/")[2].partition("?")[0]
        return f"{self.mind.name} · {scheme} · {database}"

    def now(self) -> datetime:
        """The mind's clock."""
        return self.mind.clock.now()

    # ------------------------------------------------------------ reading

    def version(self) -> int:
        """The sequence number of the mind's newest event: it changes on every write."""
        newest = self.mind.events(limit=1, newest_first=True)
        return newest[0].seq or 0 if newest else 0

    def workspace(self) -> WorkspaceView:
        """The workspace as last saved, or an empty one."""
        saved = self.mind.workspace_snapshot()
        if saved is None:
            return WorkspaceView(WorkspaceSnapshot(), saved=False)
        return WorkspaceView(saved, saved=True)

    def conversation(self, limit: int = CONVERSATION_EVENTS) -> list[ConversationLine]:
        """The conversation, oldest first: the user's messages and the mind's actions.

        Read from the newest ``limit`` events of those kinds, so that a long-lived
        mind costs no more than a new one; messages on other channels than ``user``
        among them are left out, and so are events ``Mind.forget`` emptied.
        """
        events = self.mind.events(kinds=_CONVERSATION_KINDS, limit=limit, newest_first=True)
        lines = [_line(e) for e in reversed(events)]
        return [line for line in lines if line is not None]

    def worlds(self) -> list[WorldInfo]:
        """Every world of the mind, the root first, by path."""
        return self.mind.worlds()

    def search(
        self, text: str, filters: RecallFilters, limit: int = 50, world: str | None = None
    ) -> list[RecallResult]:
        """Recall without reinforcing: inspecting a mind must not change what it recalls.

        ``world`` (a path) recalls inside that world, below it and through its links.
        The explorer inspects this mind's own memories: its peers are not asked.
        """
        query = recall_query(
            text, limit=limit, filters=filters, peek=True, world=world, federated=False
        )
        return self.mind.recall(query)

    def timeline(
        self, filters: RecallFilters, limit: int = 200, world: str | None = None
    ) -> list[tuple[Memory, float]]:
        """Memories passing ``filters``, newest recorded first, each with its activation now.

        ``world`` (a path) keeps the memories of that world and the worlds below it
        (the root, ``""``, or ``None``: every world).
        """
        if world:
            self.mind.world(world)  # an unknown world is an error, not an empty list
            below = tuple(
                w.id
                for w in self.mind.worlds()
                if w.path == world or w.path.startswith(world + "/")
            )
            filters = filters.model_copy(update={"worlds": below})
        now, half_life = self.now(), self.mind.config.half_life_days
        return [
            (m, decayed(m.activation, m.activation_at, now, m.importance, half_life))
            for m in self.mind.timeline(filters, limit=limit)
        ]

    def detail(self, memory_id: str) -> MemoryDetail:
        """The memory, its origin, edges, newest events, audit entry and activation."""
        mind = self.mind
        memory = mind.get(memory_id)
        relationships = mind.relationships(memory.id)
        events = mind.events(memory_id=memory.id, limit=DETAIL_EVENTS, newest_first=True)
        events.reverse()
        ends = [e.dst if e.src == memory.id else e.src for e in relationships]
        others = {m.id: m for m in mind.get_many(ends)}
        origin = None
        if memory.origin_event:
            found = mind.events(ids=[memory.origin_event])
            origin = found[0] if found else None
        edges = [
            Edge(e, "out", others.get(e.dst))
            if e.src == memory.id
            else Edge(e, "in", others.get(e.src))
            for e in relationships
        ]
        created = next((e for e in events if e.kind == EventKind.MEMORY_CREATED), None)
        return MemoryDetail(
            memory=memory,
            origin=origin,
            edges=edges,
            events=events,
            audit=self._audit_of(created),
            activation=self.activation(memory, events),
            tier=memory_tier(memory, self.now()),
            world=mind.world_path(memory.world),
        )

    def activation(self, memory: Memory, events: list[Event] | None = None) -> list[float]:
        """Activation from the memory's creation to now, rebuilt from its events."""
        if events is None:
            events = self.mind.events(memory_id=memory.id)
        start = memory.recorded_at
        for event in events:  # written with a past ``at``: its activation started then
            began = event.payload.get("activation_at")
            if event.kind == EventKind.MEMORY_CREATED and isinstance(began, str):
                start = datetime.fromisoformat(began)
        points = [(start, self.mind.config.initial_activation)]
        for event in events:
            value = event.payload.get("activation")
            if event.kind in _ACTIVATION_EVENTS and isinstance(value, int | float):
                points.append((max(event.at, points[-1][0]), float(value)))
        return activation_series(
            points, self.now(), memory.importance, self.mind.config.half_life_days
        )

    def health(self) -> HealthReport:
        """The mind's health report: every rule's findings, most urgent first within each."""
        return self.mind.health()

    def _audit_of(self, event: Event | None) -> AuditEntry | None:
        """The audit-chain entry covering ``event``: the memory's place in the chain."""
        if event is None:
            return None
        return self.mind.audit_entry(event.id)

    # ------------------------------------------------------------ writing

    def retract(self, memory_id: str, reason: str) -> Memory:
        """Retract the memory with ``reason``."""
        return self.mind.retract(memory_id, reason=reason)

    def correct(self, memory_id: str, content: str) -> Memory:
        """Supersede the memory with ``content`` as an operator correction."""
        return self.mind.supersede(memory_id, content, channel=Channel.OPERATOR)

    def verify(self, memory_id: str) -> Memory:
        """Mark the memory verified knowledge, as the operator."""
        return self.mind.verify_memory(memory_id)

    def reject(self, memory_id: str, reason: str) -> Memory:
        """Reject the memory with ``reason``: it leaves normal recall."""
        return self.mind.reject_memory(memory_id, reason=reason)

    def reinstate(self, memory_id: str) -> Memory:
        """Take a rejected or stale memory back into active knowledge."""
        return self.mind.reinstate_memory(memory_id)

    def decide(self, relationship_id: str, *, approve: bool) -> Relationship:
        """Approve or reject a proposal."""
        if approve:
            return self.mind.approve(relationship_id)
        return self.mind.reject(relationship_id)

    def enter(self, fields: dict[str, Any]) -> Memory:
        """Write operator knowledge through the reconciler.

        ``fields`` are the form's raw strings; every problem is raised at once as
        ``FieldErrors`` keyed by the form field, and nothing is written.
        """
        values: dict[str, Any] = {"channel": Channel.OPERATOR}
        errors: dict[str, str] = {}
        for name in ("content", "kind", "epistemic", "key"):
            text = str(fields.get(name) or "").strip()
            if text:
                values[name] = text
        importance = str(fields.get("importance") or "").strip()
        if importance:
            try:
                values["importance"] = float(importance)
            except ValueError:
                errors["importance"] = f"not a number: {importance!r}"
        values["tags"] = tuple(
            t.strip() for t in str(fields.get("tags") or "").split(",") if t.strip()
        )
        try:
            item = MemoryInput.model_validate(values)
        except ValidationError as exc:
            for error in exc.errors():
                name = str(error["loc"][0]) if error["loc"] else ""
                message = str(error["msg"]).removeprefix("Value error, ")
                if name == "content" and error["type"] == "missing":
                    message = "content is empty"
                errors.setdefault(name, message)
        if errors:
            raise FieldErrors(errors)
        try:
            return self.mind.remember(**item.model_dump(exclude={"links", "at"}))
        except UsageError as exc:
            if exc.field in _FORM_FIELDS:
                message = str(exc)
                raise FieldErrors({exc.field: message.removeprefix(f"{exc.field}: ")}) from None
            if exc.field in {
                "summary",
                "payload",
            }:  # not on the form: what it holds came from content
                raise FieldErrors({"content": str(exc)}) from None
            raise FieldErrors({"": str(exc)}) from None
